#include "scheduler/idle/cost_rule.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/idle/decide.h"
#include "scheduler/idle/test_util.h"

namespace tupa::scheduler::idle {
namespace {

using testing::Ago;
using ::testing::HasSubstr;
using testing::Now;
using testing::Worker;

IdlePolicy Cost() {
  IdlePolicy p;
  p.idle_shutdown.enabled = true;
  p.scale_up.enabled = true;  // pending_after 2m, boot_time 3m: 8m restart
  return p;
}

// A pool that saw a pickup every `gap` for an hour, the last `ago`.
PoolStats Learned(absl::Duration gap, absl::Duration ago) {
  PoolStats s;
  RecordPickups(&s, 0, Ago(absl::Hours(1) + ago));
  for (absl::Time t = Ago(absl::Hours(1) + ago) + gap; t <= Ago(ago); t += gap)
    RecordPickups(&s, 1, t);
  return s;
}

TEST(CostRuleTest, GapAverageFollowsThePickups) {
  PoolStats s = Learned(absl::Minutes(2), absl::ZeroDuration());
  EXPECT_NEAR(MeanGapSeconds(s), 120, 1e-3);
  EXPECT_EQ(s.pickups, 30);
  EXPECT_EQ(s.last_pickup, Now());
}

TEST(CostRuleTest, KeepsWhileTheNextJobComesBeforeARestartPays) {
  const PoolStats s = Learned(absl::Minutes(2), absl::ZeroDuration());
  // Rank 1 waits ~2m, rank 4 ~8m (= the 8m restart), rank 5 ~10m.
  EXPECT_TRUE(
      JudgeByCost(Cost(), s, Worker("w"), 1, absl::ZeroDuration(), Now()).keep);
  EXPECT_TRUE(
      JudgeByCost(Cost(), s, Worker("w"), 4, absl::ZeroDuration(), Now()).keep);
  CostJudgement j =
      JudgeByCost(Cost(), s, Worker("w"), 5, absl::ZeroDuration(), Now());
  EXPECT_FALSE(j.keep);
  EXPECT_THAT(j.reason, HasSubstr("rank 5, next job within 10m"));
}

TEST(CostRuleTest, RemembersOnlyTheLastGaps) {
  PoolStats s = Learned(absl::Hours(1), absl::ZeroDuration());
  for (int i = 1; i <= kGapSamples; ++i)
    RecordPickups(&s, 1, Now() + absl::Minutes(i));
  EXPECT_NEAR(MeanGapSeconds(s), 60, 1e-3);
  // Three pickups in one cycle share its gap.
  RecordPickups(&s, 3, Now() + absl::Minutes(kGapSamples + 3));
  EXPECT_EQ(s.gaps_s[(s.next_gap + kGapSamples - 1) % kGapSamples], 60);
}

// Jobs a minute apart, with an hour's lull after every fourth: the mean
// wait (~13m) is longer than a restart (8m), but the next job comes within
// a minute with p ~0.75, which pays; five minutes of silence mean a lull.
TEST(CostRuleTest, SurvivalEstimateKeepsForTheLikelySoonJob) {
  PoolStats s;
  absl::Time t = Ago(absl::Hours(10));
  RecordPickups(&s, 0, t);
  for (int i = 0; i < 40; ++i) {
    t += i % 4 == 3 ? absl::Hours(1) : absl::Minutes(1);
    RecordPickups(&s, 1, t);
  }
  const absl::Time last = t;
  CostJudgement now =
      JudgeByCost(Cost(), s, Worker("w"), 1, absl::ZeroDuration(), last);
  EXPECT_GT(now.expected_wait, absl::Minutes(8));
  EXPECT_TRUE(now.keep) << now.reason;
  EXPECT_EQ(now.horizon, absl::Minutes(1));
  EXPECT_NEAR(now.p_job, 24.0 / 33, 1e-9);
  CostJudgement lull = JudgeByCost(Cost(), s, Worker("w"), 1, absl::Minutes(5),
                                   last + absl::Minutes(5));
  EXPECT_FALSE(lull.keep) << lull.reason;
  EXPECT_THAT(lull.reason, HasSubstr("silent 5m"));
}

TEST(CostRuleTest, APoolThatWentQuietStopsAfterTheBreakEven) {
  // Jobs every 30s until 9 minutes ago: the silence is the gap now.
  const PoolStats s = Learned(absl::Seconds(30), absl::Minutes(9));
  EXPECT_FALSE(
      JudgeByCost(Cost(), s, Worker("w"), 1, absl::ZeroDuration(), Now()).keep);
  const PoolStats t = Learned(absl::Seconds(30), absl::Minutes(7));
  EXPECT_TRUE(
      JudgeByCost(Cost(), t, Worker("w"), 1, absl::ZeroDuration(), Now()).keep);
}

TEST(CostRuleTest, OffPeakIdleIsCheaperSoKeptLonger) {
  const PoolStats s = Learned(absl::Minutes(3), absl::ZeroDuration());
  WorkerInfo w = Worker("w");
  // Rank 3 waits ~9m > 8m at a flat price: stopped.
  EXPECT_FALSE(JudgeByCost(Cost(), s, w, 3, absl::ZeroDuration(), Now()).keep);
  // Half price for the next 8 minutes, then the full price: waiting
  // costs 8m at half price + 1m at full, a restart then 8m at full.
  w.price_steps = {{Now(), 1.0}, {Now() + absl::Minutes(8), 2.0}};
  EXPECT_TRUE(JudgeByCost(Cost(), s, w, 3, absl::ZeroDuration(), Now()).keep);
}

TEST(CostRuleTest, FreshPoolStopsAtTheSkiRentalBreakEvenOverItsRank) {
  PoolStats s;
  RecordPickups(&s, 0, Ago(absl::Minutes(50)));
  // Restart time 8m: the first idle worker stops after 8m, the third
  // after 8m / 3.
  CostJudgement j =
      JudgeByCost(Cost(), s, Worker("w"), 1, absl::Minutes(7), Now());
  EXPECT_TRUE(j.keep);
  EXPECT_THAT(j.reason, HasSubstr("0 of the 10 jobs"));
  EXPECT_FALSE(
      JudgeByCost(Cost(), s, Worker("w"), 1, absl::Minutes(8), Now()).keep);
  EXPECT_TRUE(
      JudgeByCost(Cost(), s, Worker("w"), 3, absl::Minutes(2), Now()).keep);
  EXPECT_FALSE(
      JudgeByCost(Cost(), s, Worker("w"), 3, absl::Minutes(3), Now()).keep);
}

TEST(CostRuleTest, DecideKeepsTheMostRecentlyIdleAndStopsTheRest) {
  IdlePolicy p = Cost();
  p.idle_shutdown.min_uptime = absl::ZeroDuration();
  PolicyState state;
  state.pools[PoolKey("sa-east-1", "A100-80GB")] =
      Learned(absl::Minutes(5), absl::ZeroDuration());
  Snapshot snap;
  snap.workers = {Worker("old"), Worker("new")};
  state.idle_since["old"] = Ago(absl::Minutes(30));
  state.idle_since["new"] = Ago(absl::Minutes(1));
  Decisions d = Decide(p, snap, state, Now());
  // "new" waits ~5m (kept), "old" ~10m (stopped).
  EXPECT_EQ(d.verdicts[1].verdict, Verdict::kWarmPays);
  EXPECT_EQ(d.verdicts[0].verdict, Verdict::kShutdown);
  ASSERT_EQ(d.shutdowns.size(), 1u);
  EXPECT_THAT(d.shutdowns[0].reason,
              HasSubstr("cost: rank 2, next job within 10m"));
}

TEST(CostRuleTest, IdleAfterCapsWhatTheRuleKeeps) {
  IdlePolicy p = Cost();
  p.idle_shutdown.idle_after = absl::Minutes(20);
  p.idle_shutdown.idle_after_given = true;
  PolicyState state;
  state.pools[PoolKey("sa-east-1", "A100-80GB")] =
      Learned(absl::Minutes(1), absl::ZeroDuration());
  state.idle_since["w"] = Ago(absl::Minutes(25));
  Snapshot snap;
  snap.workers = {Worker("w")};
  Decisions d = Decide(p, snap, state, Now());
  EXPECT_EQ(d.verdicts[0].verdict, Verdict::kShutdown);
}

}  // namespace
}  // namespace tupa::scheduler::idle

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
  EXPECT_NEAR(s.mean_gap_s, 120, 1e-6);
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
  EXPECT_THAT(j.reason, HasSubstr("next job in ~10m"));
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
  EXPECT_THAT(d.shutdowns[0].reason, HasSubstr("cost: next job in ~10m"));
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

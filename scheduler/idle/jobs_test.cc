#include "scheduler/idle/jobs.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/idle/test_util.h"

namespace tupa::scheduler::idle {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace ::tupa::scheduler::idle::testing;  // NOLINT: test builders

WorkerInfo Priced(WorkerInfo w, double price) {
  w.price_per_gpu_hour = price;
  return w;
}

// --- scale-up ---

struct ScaleUpCase {
  std::string name;
  std::vector<PendingJob> pending;
  PolicyState previous;
  std::vector<std::string> want_pools;
  std::vector<int> want_gpus;
  std::optional<absl::Duration> pending_after;  // else Policy()'s
};

void PrintTo(const ScaleUpCase& c, std::ostream* os) { *os << c.name; }

PolicyState Asked(int64_t job, absl::Duration ago) {
  PolicyState s;
  s.scale_up_asked[job] = Ago(ago);
  return s;
}

PendingJob Gang(PendingJob j, int nodes) {
  j.nodes = nodes;
  return j;
}

std::vector<ScaleUpCase> ScaleUpCases() {
  const absl::Duration k3m = absl::Minutes(3);
  return {
      {"FitsNoWorkerPastPendingAfterAsks",
       {Gang(Pending(42, 2, {"H100"}, k3m), 2)},
       {},
       {"eu-west-1/H100"},
       {4}},
      {"NotBeforePendingAfter",
       {Pending(42, 2, {"H100"}, absl::Minutes(1))},
       {},
       {},
       {}},
      {"JobThatFitsALiveWorkerDoesNotAsk",
       {Pending(42, 2, {"H100"}, k3m, /*fits=*/true)},
       {},
       {},
       {}},
      {"AskedRecentlyDoesNotAskAgain",
       {Pending(42, 2, {"H100"}, k3m)},
       Asked(42, absl::Minutes(1)),
       {},
       {}},
      {"AsksAgainAfterAnotherPendingAfter",
       {Pending(42, 2, {"H100"}, k3m)},
       Asked(42, absl::Minutes(2)),
       {"eu-west-1/H100"},
       {2}},
      {"PendingAfterZeroStillAsksAtMostOncePerMinute",
       {Pending(42, 2, {"H100"}, k3m)},
       Asked(42, absl::Seconds(30)),
       {},
       {},
       /*pending_after=*/absl::ZeroDuration()},
      {"JobsOfOnePoolAreGrouped",
       {Pending(42, 2, {"H100"}, k3m),
        Pending(43, 8, {"H100", "A100-80GB"}, k3m)},
       {},
       {"eu-west-1/H100"},
       {10}},
      {"FirstAcceptableTypeChoosesPool",
       {Pending(44, 1, {"A100-80GB", "H100"}, k3m)},
       {},
       {"sa-east-1/A100-80GB"},
       {1}},
      {"TypeNoWorkerRunsAsksAnyRegion",
       {Pending(45, 1, {"B200"}, k3m)},
       {},
       {"/B200"},
       {1}},
      {"AnyTypeJobAsksAnyPool", {Pending(46, 3, {}, k3m)}, {}, {"/"}, {3}},
  };
}

class ScaleUpCaseTest : public ::testing::TestWithParam<ScaleUpCase> {};

TEST_P(ScaleUpCaseTest, Requests) {
  const ScaleUpCase& c = GetParam();
  Snapshot s;
  s.workers = {Priced(Worker("a", "us-east-1", "H100"), 3.0),
               Priced(Worker("b", "eu-west-1", "H100"), 2.5),
               Worker("c", "sa-east-1", "A100-80GB")};
  s.pending = c.pending;
  IdlePolicy policy = Policy();
  if (c.pending_after) policy.scale_up.pending_after = *c.pending_after;
  Decisions d = Decide(policy, s, c.previous, Now());
  std::vector<std::string> pools;
  std::vector<int> gpus;
  for (const ScaleUpRequest& r : d.scale_ups) {
    pools.push_back(r.pool());
    gpus.push_back(r.gpus_needed);
  }
  EXPECT_EQ(pools, c.want_pools);
  EXPECT_EQ(gpus, c.want_gpus);
}

INSTANTIATE_TEST_SUITE_P(Jobs, ScaleUpCaseTest,
                         ::testing::ValuesIn(ScaleUpCases()),
                         [](const ::testing::TestParamInfo<ScaleUpCase>& info) {
                           return info.param.name;
                         });

// A busy 4-GPU H100 worker whose job gives its 4 GPUs back `in` from now,
// and two jobs waiting 3m for 2 and 4 of them.
Snapshot BusyWorkerFreeingIn(absl::Duration in) {
  Snapshot s;
  WorkerInfo w = WithJob(Worker("a", "eu-west-1", "H100"), 7, 4);
  WorkerInfo::Release r;
  r.at = Now() + in;
  r.gpus = 4;
  w.releases = {r};
  s.workers = {w};
  s.pending = {Pending(42, 2, {"H100"}, absl::Minutes(3)),
               Pending(43, 4, {"H100"}, absl::Minutes(3))};
  return s;
}

std::vector<int64_t> AskedFor(const Decisions& d) {
  std::vector<int64_t> jobs;
  for (const ScaleUpRequest& r : d.scale_ups)
    jobs.insert(jobs.end(), r.job_ids.begin(), r.job_ids.end());
  return jobs;
}

TEST(ScaleUpTest, CostRuleWaitsForRoomThatFreesWithinTheBootTime) {
  IdlePolicy cost = Policy();
  cost.idle_shutdown.kind = IdleShutdownPolicy::Kind::kCost;
  cost.idle_shutdown.boot_time = absl::Minutes(3);
  // Freed in 2m, sooner than a boot: job 42 (first) waits for that room;
  // what is left (2 GPUs) does not hold job 43, which asks.
  Decisions d = Decide(cost, BusyWorkerFreeingIn(absl::Minutes(2)), {}, Now());
  EXPECT_THAT(AskedFor(d), ElementsAre(43));
  EXPECT_EQ(d.state.scale_up_asked.count(42), 0u);
  // Freed only after a boot would be up: both ask.
  d = Decide(cost, BusyWorkerFreeingIn(absl::Minutes(4)), {}, Now());
  EXPECT_THAT(AskedFor(d), ElementsAre(42, 43));
  // The timers know nothing of ends: both ask.
  d = Decide(Policy(), BusyWorkerFreeingIn(absl::Minutes(2)), {}, Now());
  EXPECT_THAT(AskedFor(d), ElementsAre(42, 43));
}

TEST(ScaleUpTest, CostRuleCountsRoomSoonPerWorkerForAGang) {
  IdlePolicy cost = Policy();
  cost.idle_shutdown.kind = IdleShutdownPolicy::Kind::kCost;
  // Two busy workers; only one gives its GPUs back within the boot time.
  Snapshot s = BusyWorkerFreeingIn(absl::Minutes(1));
  WorkerInfo late = WithJob(Worker("b", "eu-west-1", "H100"), 8, 4);
  WorkerInfo::Release r;
  r.at = Now() + absl::Minutes(10);
  r.gpus = 4;
  late.releases = {r};
  s.workers.push_back(late);
  s.pending = {Gang(Pending(44, 2, {"H100"}, absl::Minutes(3)), 2)};
  // A 2-node gang needs room on two workers: one is not enough.
  EXPECT_THAT(AskedFor(Decide(cost, s, {}, Now())), ElementsAre(44));
  s.workers[1].releases[0].at = Now() + absl::Minutes(2);
  EXPECT_THAT(AskedFor(Decide(cost, s, {}, Now())), IsEmpty());
}

TEST(ScaleUpTest, RequestNamesJobsAndWhy) {
  Snapshot s;
  s.pending = {Gang(Pending(42, 4, {"H100"}, absl::Minutes(3)), 2)};
  Decisions d = Decide(Policy(), s, {}, Now());
  ASSERT_EQ(d.scale_ups.size(), 1u);
  EXPECT_THAT(d.scale_ups[0].job_ids, ElementsAre(42));
  EXPECT_THAT(d.scale_ups[0].reason,
              HasSubstr("job 42 pending 3m00s needs 2 nodes x 4 GPUs of H100"));
  EXPECT_EQ(d.state.scale_up_asked.at(42), Now());
}

// A long job that placement holds for a cheaper stopped worker asks for
// that worker's type at once (no pending_after), though it fits a live
// worker, and keeps no live worker up.
TEST(ScaleUpTest, AJobWaitingForACheaperBootAsksAtOnceAndKeepsNoWorker) {
  Snapshot s;
  s.workers = {Worker("dear", "sa-east-1", "H100")};
  s.workers[0].joined_at = Ago(absl::Hours(2));
  s.workers[0].last_busy_at = Ago(absl::Hours(1));
  PendingJob waits = Pending(42, 1, {}, absl::Seconds(1));
  waits.waits_for_boot_of = "T4";
  s.pending = {waits};
  Decisions d = Decide(Policy(), s, {}, Now());
  ASSERT_EQ(d.scale_ups.size(), 1u);
  EXPECT_EQ(d.scale_ups[0].gpu_type, "T4");
  EXPECT_THAT(d.scale_ups[0].job_ids, ElementsAre(42));
  EXPECT_THAT(d.scale_ups[0].reason, HasSubstr("a stopped T4 worker costs"));
  ASSERT_EQ(d.verdicts.size(), 1u);
  EXPECT_NE(d.verdicts[0].verdict, Verdict::kPendingJobFits);
  EXPECT_EQ(d.shutdowns.size(), 1u);
  // The same job not waiting for a boot: it fits the live worker, which
  // it keeps, and asks for nothing.
  s.pending = {Pending(42, 1, {}, absl::Seconds(1), /*fits=*/true)};
  d = Decide(Policy(), s, {}, Now());
  EXPECT_THAT(d.scale_ups, IsEmpty());
  EXPECT_EQ(d.verdicts[0].verdict, Verdict::kPendingJobFits);
}

TEST(ScaleUpTest, DisabledAsksNothing) {
  IdlePolicy p = Policy();
  p.scale_up.enabled = false;
  Snapshot s;
  s.pending = {Pending(42, 4, {"H100"}, absl::Hours(1))};
  EXPECT_THAT(Decide(p, s, {}, Now()).scale_ups, IsEmpty());
}

TEST(ScaleUpTest, PlacedJobIsForgotten) {
  PolicyState prev = Asked(42, absl::Minutes(1));
  Decisions d = Decide(Policy(), Snapshot{}, prev, Now());
  EXPECT_THAT(d.state.scale_up_asked, IsEmpty());
}

// --- zombies ---

RunningJob Running(int64_t id, std::optional<double> activity) {
  RunningJob j;
  j.job_id = id;
  j.worker_ids = {"w1"};
  j.started_at = Ago(absl::Hours(2));
  j.activity = activity;
  return j;
}

PolicyState LowSince(int64_t job, absl::Duration ago) {
  PolicyState s;
  s.low_activity_since[job] = Ago(ago);
  return s;
}

TEST(ZombieTest, LowActivityPastAfterIsFlagged) {
  Snapshot s;
  s.workers = {WithJob(Worker("w1"), 7)};
  s.running = {Running(7, 0.01)};
  Decisions d = Decide(Policy(), s, LowSince(7, absl::Minutes(31)), Now());
  ASSERT_EQ(d.zombies.size(), 1u);
  EXPECT_EQ(d.zombies[0].job_id, 7);
  EXPECT_EQ(d.zombies[0].action, ZombieJobPolicy::Action::kFlag);
  EXPECT_EQ(d.zombies[0].low_for, absl::Minutes(31));
  EXPECT_THAT(d.zombies[0].worker_ids, ElementsAre("w1"));
  EXPECT_THAT(d.zombies[0].reason, HasSubstr("below 0.05 activity for 31m"));
  // The job still holds its worker: a zombie is not an idle worker.
  EXPECT_EQ(d.verdicts[0].verdict, Verdict::kBusy);
}

TEST(ZombieTest, CancelActionIsCarried) {
  IdlePolicy p = Policy();
  p.zombie_jobs.action = ZombieJobPolicy::Action::kCancel;
  Snapshot s;
  s.running = {Running(7, 0.0)};
  Decisions d = Decide(p, s, LowSince(7, absl::Hours(1)), Now());
  ASSERT_EQ(d.zombies.size(), 1u);
  EXPECT_EQ(d.zombies[0].action, ZombieJobPolicy::Action::kCancel);
}

TEST(ZombieTest, FirstLowSampleStartsTheClock) {
  Snapshot s;
  s.running = {Running(7, 0.0)};
  Decisions d = Decide(Policy(), s, {}, Now());
  EXPECT_THAT(d.zombies, IsEmpty());
  EXPECT_EQ(d.state.low_activity_since.at(7), Now());
  Decisions later = Decide(Policy(), s, d.state, Now() + absl::Minutes(30));
  EXPECT_EQ(later.zombies.size(), 1u);
}

TEST(ZombieTest, ReportedOnlyOnce) {
  Snapshot s;
  s.running = {Running(7, 0.0)};
  Decisions d1 = Decide(Policy(), s, LowSince(7, absl::Hours(1)), Now());
  ASSERT_EQ(d1.zombies.size(), 1u);
  Decisions d2 = Decide(Policy(), s, d1.state, Now() + absl::Minutes(1));
  EXPECT_THAT(d2.zombies, IsEmpty());
  EXPECT_EQ(d2.state.zombies.at(7), Now());
}

TEST(ZombieTest, ActivityResetsTheClock) {
  Snapshot s;
  s.running = {Running(7, 0.5)};
  Decisions d = Decide(Policy(), s, LowSince(7, absl::Hours(1)), Now());
  EXPECT_THAT(d.zombies, IsEmpty());
  EXPECT_THAT(d.state.low_activity_since, IsEmpty());
}

TEST(ZombieTest, UnmeasuredJobIsNeverAZombie) {
  Snapshot s;
  s.running = {Running(7, std::nullopt)};
  Decisions d = Decide(Policy(), s, LowSince(7, absl::Hours(5)), Now());
  EXPECT_THAT(d.zombies, IsEmpty());
}

TEST(ZombieTest, DisabledFlagsNothing) {
  IdlePolicy p = Policy();
  p.zombie_jobs.enabled = false;
  Snapshot s;
  s.running = {Running(7, 0.0)};
  EXPECT_THAT(Decide(p, s, LowSince(7, absl::Hours(5)), Now()).zombies,
              IsEmpty());
}

}  // namespace
}  // namespace tupa::scheduler::idle

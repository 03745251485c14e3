#include "scheduler/idle/decide.h"

#include <map>
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

std::vector<std::string> Stopped(const Decisions& d) {
  std::vector<std::string> ids;
  for (const ShutdownDecision& s : d.shutdowns) ids.push_back(s.worker_id);
  return ids;
}

const WorkerVerdict& VerdictOf(const Decisions& d, const std::string& id) {
  for (const WorkerVerdict& v : d.verdicts) {
    if (v.worker_id == id) return v;
  }
  static const WorkerVerdict kNone{"<none>", Verdict::kDisabled, "", {}};
  return kNone;
}

// One worker-state case: the verdict of each worker, the reason text of one
// of them, and which workers are stopped.
struct WorkerCase {
  std::string name;
  IdlePolicy policy;
  std::vector<WorkerInfo> workers;
  std::vector<PendingJob> pending;
  PolicyState previous;
  std::map<std::string, Verdict> want;
  std::vector<std::string> want_stopped;
  std::string reason_of;    // worker whose reason is checked
  std::string want_reason;  // substring
};

void PrintTo(const WorkerCase& c, std::ostream* os) { *os << c.name; }

WorkerInfo Joined(WorkerInfo w, absl::Duration ago) {
  w.joined_at = Ago(ago);
  return w;
}
WorkerInfo LastBusy(WorkerInfo w, absl::Duration ago) {
  w.last_busy_at = Ago(ago);
  return w;
}
WorkerInfo Activity(WorkerInfo w, std::vector<double> a) {
  w.device_activity = std::move(a);
  return w;
}
WorkerInfo Draining(WorkerInfo w) {
  w.state = WorkerInfo::State::kDraining;
  return w;
}
WorkerInfo Labeled(WorkerInfo w, std::string k, std::string v) {
  w.labels[k] = v;
  return w;
}
IdlePolicy IdleAfter(IdlePolicy p, absl::Duration d) {
  p.idle_shutdown.idle_after = d;
  return p;
}
IdlePolicy PoolWarm(IdlePolicy p, std::string pool, int n) {
  p.idle_shutdown.keep_warm_by_pool[pool] = n;
  return p;
}
IdlePolicy Disabled() {
  IdlePolicy p = Policy();
  p.idle_shutdown.enabled = false;
  return p;
}
PendingJob WithLabel(PendingJob j, std::string k, std::string v) {
  j.labels[k] = v;
  return j;
}
PolicyState ShuttingDown(const std::string& id) {
  PolicyState s;
  s.shutting_down[id] = Ago(absl::Seconds(5));
  return s;
}
PolicyState IdleSince(const std::string& id, absl::Duration ago) {
  PolicyState s;
  s.idle_since[id] = Ago(ago);
  return s;
}

std::vector<WorkerCase> WorkerCases() {
  const Verdict kStop = Verdict::kShutdown;
  return {
      {"IdlePastIdleAfterIsStopped",
       Policy(),
       {Worker("w1")},
       {},
       {},
       {{"w1", kStop}},
       {"w1"},
       "w1",
       "no job and device activity below 0.05 for 1h"},
      {"IdleShorterThanIdleAfterIsKept",
       Policy(),
       {LastBusy(Worker("w1"), absl::Minutes(3))},
       {},
       {},
       {{"w1", Verdict::kIdle}},
       {},
       "w1",
       "idle 3m00s of 10m00s"},
      {"IdleSinceComesFromPreviousState",
       Policy(),
       {Worker("w1")},
       {},
       IdleSince("w1", absl::Minutes(4)),
       {{"w1", Verdict::kIdle}},
       {},
       "w1",
       "idle 4m00s of 10m00s"},
      {"KeepWarmKeepsLastIdleOfPool",
       Policy(1),
       {Worker("w1"), LastBusy(Worker("w2"), absl::Minutes(20))},
       {},
       {},
       {{"w1", kStop}, {"w2", Verdict::kKeepWarm}},
       {"w1"},
       "w2",
       "keep_warm: last 1 of pool sa-east-1/A100-80GB"},
      {"KeepWarmIsPerPool",
       Policy(1),
       {Worker("w1"), Worker("w2", "us-east-1"),
        Worker("w3", "sa-east-1", "H100")},
       {},
       {},
       {{"w1", Verdict::kKeepWarm},
        {"w2", Verdict::kKeepWarm},
        {"w3", Verdict::kKeepWarm}},
       {},
       "w3",
       "keep_warm: last 1 of pool sa-east-1/H100"},
      {"BusyWorkerKeepsPoolWarm",
       Policy(1),
       {WithJob(Worker("w1"), 7), Worker("w2")},
       {},
       {},
       {{"w1", Verdict::kBusy}, {"w2", kStop}},
       {"w2"},
       "w1",
       "busy: job 7"},
      {"KeepWarmOverrideForOnePool",
       PoolWarm(Policy(0), "sa-east-1/A100-80GB", 2),
       {Worker("w1"), Worker("w2"), Worker("w3"), Worker("w4", "us-east-1")},
       {},
       {},
       {{"w1", kStop},
        {"w2", Verdict::kKeepWarm},
        {"w3", Verdict::kKeepWarm},
        {"w4", kStop}},
       {"w1", "w4"},
       "w2",
       "keep_warm: last 2 of pool"},
      {"LongestIdleStoppedFirst",
       Policy(1),
       {LastBusy(Worker("w1"), absl::Minutes(15)),
        LastBusy(Worker("w2"), absl::Minutes(40)),
        LastBusy(Worker("w3"), absl::Minutes(25))},
       {},
       {},
       {{"w1", Verdict::kKeepWarm}, {"w2", kStop}, {"w3", kStop}},
       {"w2", "w3"},
       "w2",
       "for 40m"},
      {"MinUptimeKeepsNewWorker",
       IdleAfter(Policy(), absl::Minutes(1)),
       {Joined(Worker("w1"), absl::Minutes(2))},
       {},
       {},
       {{"w1", Verdict::kMinUptime}},
       {},
       "w1",
       "min_uptime: up 2m00s of 5m00s"},
      {"PendingJobThatFitsBlocksShutdown",
       Policy(),
       {Worker("w1")},
       {Pending(42, 2, {"A100-80GB"}, absl::Seconds(10))},
       {},
       {{"w1", Verdict::kPendingJobFits}},
       {},
       "w1",
       "pending job 42 fits"},
      {"PendingJobOfAnyTypeBlocksShutdown",
       Policy(),
       {Worker("w1")},
       {Pending(43, 1, {}, absl::Seconds(10))},
       {},
       {{"w1", Verdict::kPendingJobFits}},
       {},
       "w1",
       "pending job 43 fits"},
      {"PendingJobOfOtherTypeDoesNotBlock",
       Policy(),
       {Worker("w1")},
       {Pending(42, 2, {"H100"}, absl::Seconds(10))},
       {},
       {{"w1", kStop}},
       {"w1"},
       "",
       ""},
      {"PendingJobNeedingMoreGpusThanFreeDoesNotBlock",
       Policy(),
       {Worker("w1")},
       {Pending(42, 8, {}, absl::Seconds(10))},
       {},
       {{"w1", kStop}},
       {"w1"},
       "",
       ""},
      {"PendingJobWithOtherLabelsDoesNotBlock",
       Policy(),
       {Labeled(Worker("w1"), "zone", "a")},
       {WithLabel(Pending(42, 1, {}, absl::Seconds(10)), "zone", "b")},
       {},
       {{"w1", kStop}},
       {"w1"},
       "",
       ""},
      {"PendingJobWithMatchingLabelsBlocks",
       Policy(),
       {Labeled(Worker("w1"), "zone", "a")},
       {WithLabel(Pending(42, 1, {}, absl::Seconds(10)), "zone", "a")},
       {},
       {{"w1", Verdict::kPendingJobFits}},
       {},
       "",
       ""},
      {"DeviceActivityWithoutJobIsBusy",
       Policy(),
       {Activity(Worker("w1"), {0, 0.4, 0, 0})},
       {},
       {},
       {{"w1", Verdict::kBusy}},
       {},
       "w1",
       "busy: device activity 0.40 without a job"},
      {"ActivityBelowThresholdIsIdle",
       Policy(),
       {Activity(Worker("w1"), {0.01, 0.049, 0, 0})},
       {},
       {},
       {{"w1", kStop}},
       {"w1"},
       "",
       ""},
      {"JobAtZeroActivityIsBusy",
       Policy(),
       {WithJob(Worker("w1"), 7)},
       {},
       {},
       {{"w1", Verdict::kBusy}},
       {},
       "w1",
       "busy: job 7"},
      {"UnmeasuredActivityJudgedByJobsAlone",
       Policy(),
       {Activity(Worker("w1"), {})},
       {},
       {},
       {{"w1", kStop}},
       {"w1"},
       "w1",
       "no job for 1h00m (device activity not measured)"},
      {"DrainingWorkerLeftToOperator",
       Policy(),
       {Draining(Worker("w1"))},
       {},
       {},
       {{"w1", Verdict::kDraining}},
       {},
       "w1",
       "left to the operator"},
      {"DrainingWorkerDoesNotKeepPoolWarm",
       Policy(1),
       {Draining(Worker("w1")), Worker("w2")},
       {},
       {},
       {{"w1", Verdict::kDraining}, {"w2", Verdict::kKeepWarm}},
       {},
       "",
       ""},
      {"DrainingWorkerIsNotUsableByPendingJob",
       Policy(),
       {Draining(Worker("w1")), Worker("w2")},
       {Pending(42, 1, {}, absl::Seconds(5))},
       {},
       {{"w1", Verdict::kDraining}, {"w2", Verdict::kPendingJobFits}},
       {},
       "",
       ""},
      {"ShuttingDownIsNotRepeated",
       Policy(),
       {Worker("w1")},
       {},
       ShuttingDown("w1"),
       {{"w1", Verdict::kShuttingDown}},
       {},
       "w1",
       "shutting down since 5s ago"},
      {"ShuttingDownDoesNotKeepPoolWarm",
       Policy(1),
       {Worker("w1"), Worker("w2")},
       {},
       ShuttingDown("w1"),
       {{"w1", Verdict::kShuttingDown}, {"w2", Verdict::kKeepWarm}},
       {},
       "",
       ""},
      {"DisabledStopsNothing",
       Disabled(),
       {Worker("w1")},
       {},
       {},
       {{"w1", Verdict::kDisabled}},
       {},
       "w1",
       "idle_shutdown off"},
  };
}

class WorkerCaseTest : public ::testing::TestWithParam<WorkerCase> {};

TEST_P(WorkerCaseTest, VerdictsAndShutdowns) {
  const WorkerCase& c = GetParam();
  Snapshot s;
  s.workers = c.workers;
  s.pending = c.pending;
  Decisions d = Decide(c.policy, s, c.previous, Now());
  ASSERT_EQ(d.verdicts.size(), c.workers.size());
  for (const auto& [id, verdict] : c.want) {
    EXPECT_EQ(VerdictName(VerdictOf(d, id).verdict), VerdictName(verdict))
        << id << ": " << VerdictOf(d, id).reason;
  }
  EXPECT_EQ(Stopped(d), c.want_stopped);
  if (!c.reason_of.empty()) {
    EXPECT_THAT(VerdictOf(d, c.reason_of).reason, HasSubstr(c.want_reason));
  }
}

INSTANTIATE_TEST_SUITE_P(Idle, WorkerCaseTest,
                         ::testing::ValuesIn(WorkerCases()),
                         [](const ::testing::TestParamInfo<WorkerCase>& info) {
                           return info.param.name;
                         });

TEST(DecideTest, ShutdownCarriesIdentityIdleTimeAndMoneySaved) {
  Snapshot s;
  s.workers = {Worker("w1")};
  s.workers[0].price_per_gpu_hour = 2.5;
  Decisions d = Decide(Policy(), s, {}, Now());
  ASSERT_EQ(d.shutdowns.size(), 1u);
  const ShutdownDecision& sd = d.shutdowns[0];
  EXPECT_EQ(sd.worker_id, "w1");
  EXPECT_EQ(sd.instance_id, "i-w1");
  EXPECT_EQ(sd.region, "sa-east-1");
  EXPECT_EQ(sd.gpu_type, "A100-80GB");
  EXPECT_EQ(sd.reason_code, "IDLE");
  EXPECT_EQ(sd.idle, absl::Hours(1));
  EXPECT_DOUBLE_EQ(sd.saved_per_hour, 4 * 2.5);
  EXPECT_EQ(d.state.shutting_down.at("w1"), Now());
}

TEST(DecideTest, MoneySavedIsZeroWhenPriceUnknown) {
  Snapshot s;
  s.workers = {Worker("w1")};
  s.workers[0].price_per_gpu_hour = 0;
  Decisions d = Decide(Policy(), s, {}, Now());
  ASSERT_EQ(d.shutdowns.size(), 1u);
  EXPECT_DOUBLE_EQ(d.shutdowns[0].saved_per_hour, 0);
}

TEST(DecideTest, IdleSinceRecordedAndClearedWhenBusy) {
  Snapshot s;
  s.workers = {LastBusy(Worker("w1"), absl::Minutes(3))};
  Decisions d1 = Decide(Policy(), s, {}, Now());
  EXPECT_EQ(d1.state.idle_since.at("w1"), Ago(absl::Minutes(3)));
  s.workers[0] = WithJob(s.workers[0], 9);
  Decisions d2 = Decide(Policy(), s, d1.state, Now() + absl::Minutes(1));
  EXPECT_EQ(d2.state.idle_since.count("w1"), 0u);
}

TEST(DecideTest, IdleTimeAfterAJobCountsFromTheLastBusyCycle) {
  // Up an hour, busy until the previous cycle: idle for 1 minute, not an
  // hour (the callers do not know last_busy_at).
  Snapshot s;
  s.workers = {WithJob(Worker("w1"), 9)};
  Decisions d1 = Decide(Policy(), s, {}, Now());
  s.workers = {Worker("w1")};
  Decisions d2 = Decide(Policy(), s, d1.state, Now() + absl::Minutes(1));
  EXPECT_EQ(d2.verdicts[0].verdict, Verdict::kIdle);
  EXPECT_EQ(d2.verdicts[0].idle, absl::Minutes(1));
  EXPECT_TRUE(d2.shutdowns.empty());
}

TEST(DecideTest, ALaterLastBusyAtThanThePreviousCycleCounts) {
  // Busy when the policy last ran an hour ago; its job ended a minute ago
  // (a caller that runs the policy only at events): idle 1 minute.
  Snapshot s;
  s.workers = {WithJob(Worker("w1"), 9)};
  Decisions d1 = Decide(Policy(), s, {}, Now());
  s.workers = {Worker("w1")};
  s.workers[0].last_busy_at = Now() + absl::Minutes(59);
  Decisions d2 = Decide(Policy(), s, d1.state, Now() + absl::Hours(1));
  EXPECT_EQ(d2.verdicts[0].verdict, Verdict::kIdle);
  EXPECT_EQ(d2.verdicts[0].idle, absl::Minutes(1));
  EXPECT_TRUE(d2.shutdowns.empty());
}

TEST(DecideTest, LastBusyBeforeJoinCountsFromJoin) {
  Snapshot s;
  s.workers = {
      Joined(LastBusy(Worker("w1"), absl::Hours(5)), absl::Minutes(7))};
  Decisions d = Decide(Policy(), s, {}, Now());
  EXPECT_EQ(d.verdicts[0].verdict, Verdict::kIdle);
  EXPECT_EQ(d.verdicts[0].idle, absl::Minutes(7));
}

TEST(DecideTest, SameInputsSameDecisions) {
  Snapshot s;
  s.workers = {Worker("w1"), Worker("w2"), Worker("w3")};
  Decisions a = Decide(Policy(1), s, {}, Now());
  std::reverse(s.workers.begin(), s.workers.end());
  Decisions b = Decide(Policy(1), s, {}, Now());
  EXPECT_EQ(Stopped(a), Stopped(b));
  EXPECT_THAT(Stopped(a), ElementsAre("w1", "w2"));
}

// --- shutdown grace: decisions across cycles ---

IdlePolicy WithGrace(absl::Duration g) {
  IdlePolicy p = Policy();
  p.idle_shutdown.grace = g;
  return p;
}

TEST(GraceTest, AnnouncesThenStopsWhenGraceEnds) {
  Snapshot s;
  s.workers = {Worker("w1")};
  const IdlePolicy p = WithGrace(absl::Seconds(30));
  Decisions d1 = Decide(p, s, {}, Now());
  EXPECT_EQ(d1.verdicts[0].verdict, Verdict::kGrace);
  EXPECT_THAT(d1.verdicts[0].reason, HasSubstr("stopping in 30s"));
  EXPECT_THAT(d1.shutdowns, IsEmpty());
  Decisions d2 = Decide(p, s, d1.state, Now() + absl::Seconds(10));
  EXPECT_EQ(d2.verdicts[0].verdict, Verdict::kGrace);
  EXPECT_THAT(d2.verdicts[0].reason, HasSubstr("stopping in 20s"));
  Decisions d3 = Decide(p, s, d2.state, Now() + absl::Seconds(30));
  EXPECT_THAT(Stopped(d3), ElementsAre("w1"));
  EXPECT_EQ(d3.state.grace_since.count("w1"), 0u);
}

TEST(GraceTest, WorkerThatGetsJobDuringGraceIsKept) {
  Snapshot s;
  s.workers = {Worker("w1")};
  const IdlePolicy p = WithGrace(absl::Seconds(30));
  Decisions d1 = Decide(p, s, {}, Now());
  ASSERT_EQ(d1.verdicts[0].verdict, Verdict::kGrace);
  s.workers[0] = WithJob(s.workers[0], 9);
  Decisions d2 = Decide(p, s, d1.state, Now() + absl::Seconds(31));
  EXPECT_EQ(d2.verdicts[0].verdict, Verdict::kBusy);
  EXPECT_THAT(d2.shutdowns, IsEmpty());
  ASSERT_EQ(d2.cancelled.size(), 1u);
  EXPECT_EQ(d2.cancelled[0].worker_id, "w1");
  EXPECT_THAT(d2.cancelled[0].reason,
              HasSubstr("busy: job 9 during the shutdown grace"));
  EXPECT_EQ(d2.state.grace_since.count("w1"), 0u);
}

TEST(GraceTest, PendingJobThatFitsDuringGraceCancels) {
  Snapshot s;
  s.workers = {Worker("w1")};
  const IdlePolicy p = WithGrace(absl::Seconds(30));
  Decisions d1 = Decide(p, s, {}, Now());
  s.pending = {Pending(42, 1, {}, absl::Seconds(1))};
  Decisions d2 = Decide(p, s, d1.state, Now() + absl::Seconds(31));
  EXPECT_EQ(d2.verdicts[0].verdict, Verdict::kPendingJobFits);
  ASSERT_EQ(d2.cancelled.size(), 1u);
  EXPECT_THAT(d2.cancelled[0].reason, HasSubstr("pending job 42 fits"));
  EXPECT_THAT(d2.shutdowns, IsEmpty());
}

TEST(GraceTest, CancelledWorkerStartsANewGraceWhenIdleAgain) {
  Snapshot s;
  s.workers = {Worker("w1")};
  const IdlePolicy p = WithGrace(absl::Seconds(30));
  Decisions d1 = Decide(p, s, {}, Now());
  Snapshot busy = s;
  busy.workers[0] = WithJob(busy.workers[0], 9);
  Decisions d2 = Decide(p, busy, d1.state, Now() + absl::Seconds(5));
  // The job ended at +5s: idle again, but only for 0s of idle_after.
  s.workers[0].last_busy_at = Now() + absl::Seconds(5);
  Decisions d3 = Decide(p, s, d2.state, Now() + absl::Seconds(40));
  EXPECT_EQ(d3.verdicts[0].verdict, Verdict::kIdle);
  EXPECT_THAT(d3.shutdowns, IsEmpty());
  EXPECT_THAT(d3.cancelled, IsEmpty());
}

TEST(GraceTest, GraceCountsAsLeavingForKeepWarm) {
  Snapshot s;
  s.workers = {Worker("w1"), Worker("w2")};
  IdlePolicy p = WithGrace(absl::Seconds(30));
  p.idle_shutdown.keep_warm_default = 1;
  Decisions d1 = Decide(p, s, {}, Now());
  EXPECT_EQ(VerdictOf(d1, "w1").verdict, Verdict::kGrace);
  EXPECT_EQ(VerdictOf(d1, "w2").verdict, Verdict::kKeepWarm);
  // Next cycle the one in grace stays the one leaving.
  Decisions d2 = Decide(p, s, d1.state, Now() + absl::Seconds(30));
  EXPECT_THAT(Stopped(d2), ElementsAre("w1"));
  EXPECT_EQ(VerdictOf(d2, "w2").verdict, Verdict::kKeepWarm);
}

TEST(PendingJobCanUseTest, ChecksCpuAndMemoryOnlyWhenAsked) {
  WorkerInfo w = Worker("w1");
  PendingJob j = Pending(1, 1, {}, absl::Seconds(1));
  EXPECT_TRUE(PendingJobCanUse(j, w));
  j.cpu_per_node = 64;
  EXPECT_FALSE(PendingJobCanUse(j, w));
  j.cpu_per_node = 0;
  j.memory_per_node = int64_t{512} << 30;
  EXPECT_FALSE(PendingJobCanUse(j, w));
}

TEST(PendingJobCanUseTest, CpuOnlyJobIgnoresGpuTypes) {
  WorkerInfo w = Worker("w1");
  PendingJob j = Pending(1, 0, {"H100"}, absl::Seconds(1));
  EXPECT_TRUE(PendingJobCanUse(j, w));
}

}  // namespace
}  // namespace tupa::scheduler::idle

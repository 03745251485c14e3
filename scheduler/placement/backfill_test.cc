#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/placement/placement.h"

namespace tupa::scheduler {
namespace {

constexpr int64_t kNow = 1'000'000;

NodeView Node(const std::string& id, int gpus, int busy = 0) {
  NodeView n;
  n.worker_id = id;
  for (int i = 0; i < gpus; ++i) {
    n.devices.push_back({i, "A100", i < busy ? 0.0 : 1.0});
  }
  n.cpu_total = n.cpu_free = 64;
  n.memory_total = n.memory_free = int64_t{1} << 40;
  return n;
}

JobRequest Job(int64_t id, double gpus, int priority, int64_t runtime_s) {
  JobRequest j;
  j.job_id = id;
  j.gpus = gpus;
  j.priority = priority;
  j.submitted_at_ms = id;
  j.max_runtime_s = runtime_s;
  return j;
}

RunningJob Running(const std::string& worker, double gpus, int64_t end_ms,
                   std::vector<int> devices = {}) {
  RunningJob r;
  r.job_id = 100;
  r.worker_ids = {worker};
  r.gpus = gpus;
  r.expected_end_ms = end_ms;
  r.device_indexes = std::move(devices);
  return r;
}

PlacementOptions Opts() {
  PlacementOptions o;
  o.now_ms = kNow;
  return o;
}

// w1: 4 GPUs, 2 busy until kNow + 600 s. The head job wants 4 GPUs.
struct Scenario {
  std::vector<NodeView> nodes = {Node("w1", 4, 2)};
  std::vector<RunningJob> running = {Running("w1", 2, kNow + 600'000, {0, 1})};
};

TEST(Backfill, HeadJobGetsReservationAndEstimate) {
  Scenario s;
  auto plan = PlaceJobs(s.nodes, {Job(1, 4, 90, 3600)}, s.running, Opts());
  EXPECT_TRUE(plan.placed.empty());
  EXPECT_EQ(plan.pending.at(1).reason, PendingReason::kNoFitNow);
  EXPECT_EQ(plan.pending.at(1).estimated_start_ms, kNow + 600'000);
}

TEST(Backfill, OverdueJobEndsNowNotInThePast) {
  // Past its max_runtime the running job is being stopped: the head job's
  // start is now, and nothing is backfilled into the gap that has passed.
  Scenario s;
  s.running[0].expected_end_ms = kNow - 5'000;
  auto plan = PlaceJobs(s.nodes, {Job(1, 4, 90, 3600), Job(2, 1, 10, 1)},
                        s.running, Opts());
  EXPECT_EQ(plan.pending.at(1).estimated_start_ms, kNow);
  EXPECT_EQ(plan.pending.at(2).reason, PendingReason::kBehindPriority);
}

TEST(Backfill, ShortJobStartsBeforeReservation) {
  Scenario s;
  auto plan = PlaceJobs(s.nodes, {Job(1, 4, 90, 3600), Job(2, 1, 10, 300)},
                        s.running, Opts());
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].job_id, 2);
}

TEST(Backfill, LongJobWaitsBehindPriority) {
  Scenario s;
  auto plan = PlaceJobs(s.nodes, {Job(1, 4, 90, 3600), Job(2, 1, 10, 7200)},
                        s.running, Opts());
  EXPECT_TRUE(plan.placed.empty());
  EXPECT_EQ(plan.pending.at(2).reason, PendingReason::kBehindPriority);
  EXPECT_EQ(plan.pending.at(2).jobs_ahead, 1);
  EXPECT_GE(plan.pending.at(2).estimated_start_ms, kNow + 600'000);
}

TEST(Backfill, UnknownRuntimeIsNotBackfilledPastReservation) {
  Scenario s;
  auto plan = PlaceJobs(s.nodes, {Job(1, 4, 90, 3600), Job(2, 1, 10, 0)},
                        s.running, Opts());
  EXPECT_TRUE(plan.placed.empty());
  EXPECT_EQ(plan.pending.at(2).reason, PendingReason::kBehindPriority);
}

TEST(Backfill, JobOnNodesTheReservationDoesNotNeedMayStart) {
  Scenario s;
  s.nodes.push_back(Node("w2", 2));  // too small for the head job
  auto plan = PlaceJobs(s.nodes, {Job(1, 4, 90, 3600), Job(2, 1, 10, 0)},
                        s.running, Opts());
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "w2");
}

TEST(Backfill, DisabledBackfillKeepsStrictOrder) {
  Scenario s;
  PlacementOptions o = Opts();
  o.backfill = false;
  auto plan = PlaceJobs(s.nodes, {Job(1, 4, 90, 3600), Job(2, 1, 10, 300)},
                        s.running, o);
  EXPECT_TRUE(plan.placed.empty());
  EXPECT_EQ(plan.pending.at(2).reason, PendingReason::kBehindPriority);
}

TEST(Backfill, UnknownEndsStillReserveNodes) {
  Scenario s;
  s.running[0].expected_end_ms = 0;
  auto plan = PlaceJobs(s.nodes, {Job(1, 4, 90, 3600), Job(2, 1, 10, 60)},
                        s.running, Opts());
  EXPECT_TRUE(plan.placed.empty());
  EXPECT_EQ(plan.pending.at(1).estimated_start_ms, 0);
  EXPECT_EQ(plan.pending.at(2).reason, PendingReason::kBehindPriority);
}

TEST(Backfill, JobsPlacedThisPassCountAsReleases) {
  // Job 1 takes both GPUs for 100 s; job 2 must wait for it.
  auto plan = PlaceJobs({Node("w", 2)}, {Job(1, 2, 50, 100), Job(2, 2, 10, 0)},
                        {}, Opts());
  EXPECT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.pending.at(2).reason, PendingReason::kNoFitNow);
  EXPECT_EQ(plan.pending.at(2).estimated_start_ms, kNow + 100'000);
}

TEST(Reasons, NamesAreStable) {
  EXPECT_STREQ(PendingReasonName(PendingReason::kNoFitNow), "NO_FIT_NOW");
  EXPECT_STREQ(PendingReasonName(PendingReason::kGangIncomplete),
               "GANG_INCOMPLETE");
  EXPECT_STREQ(PendingReasonName(PendingReason::kBehindPriority),
               "BEHIND_PRIORITY");
  EXPECT_STREQ(PendingReasonName(PendingReason::kNoSuchGpuType),
               "NO_SUCH_GPU_TYPE");
  EXPECT_STREQ(PendingReasonName(PendingReason::kNeverFits), "NEVER_FITS");
}

}  // namespace
}  // namespace tupa::scheduler

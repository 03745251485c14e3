#include "scheduler/placement/placement.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/placement/cluster_state.h"

namespace tupa::scheduler {
namespace {

using Policy = PlacementOptions::Policy;
constexpr int64_t kGiB = int64_t{1} << 30;

NodeView Node(const std::string& id, int gpus, const std::string& type = "A100",
              double cpu = 64, int64_t mem = 512 * kGiB) {
  NodeView n;
  n.worker_id = id;
  for (int i = 0; i < gpus; ++i) n.devices.push_back({i, type, 1.0});
  n.cpu_total = n.cpu_free = cpu;
  n.memory_total = n.memory_free = mem;
  return n;
}

// Marks `used` whole devices of `n` busy.
NodeView Busy(NodeView n, int used, double cpu = 0) {
  for (int i = 0; i < used; ++i) n.devices[i].free_share = 0;
  n.cpu_free -= cpu;
  return n;
}

JobRequest Job(int64_t id, double gpus, int nodes = 1, int priority = 0) {
  JobRequest j;
  j.job_id = id;
  j.gpus = gpus;
  j.nodes = nodes;
  j.priority = priority;
  j.submitted_at_ms = id;
  j.cpu = 1;
  j.memory = kGiB;
  return j;
}

PlacementOptions Opts(Policy policy = Policy::kBestFit) {
  PlacementOptions o;
  o.policy = policy;
  o.now_ms = 1'000'000;
  return o;
}

const JobPlacement* Find(const PlacementPlan& plan, int64_t id) {
  for (const JobPlacement& p : plan.placed) {
    if (p.job_id == id) return &p;
  }
  return nullptr;
}

// A job holding the first `gpus` devices of `worker` until `end_ms`.
RunningJob RunningOn(int64_t id, const std::string& worker, int gpus,
                     int64_t end_ms) {
  RunningJob r;
  r.job_id = id;
  r.worker_ids = {worker};
  r.gpus = gpus;
  for (int d = 0; d < gpus; ++d) r.device_indexes.push_back(d);
  r.expected_end_ms = end_ms;
  return r;
}

std::vector<int64_t> PlacedIds(const PlacementPlan& plan) {
  std::vector<int64_t> ids;
  for (const JobPlacement& p : plan.placed) ids.push_back(p.job_id);
  return ids;
}

class AllPolicies : public ::testing::TestWithParam<Policy> {};

TEST_P(AllPolicies, PlacesSingleGpuJobOnFreeDevice) {
  auto plan = PlaceJobs({Node("w1", 2)}, {Job(1, 1)}, {}, Opts(GetParam()));
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "w1");
  EXPECT_EQ(plan.placed[0].nodes[0].device_indexes.size(), 1u);
  EXPECT_TRUE(plan.pending.empty());
}

TEST_P(AllPolicies, MultiGpuJobStaysOnOneNode) {
  auto plan = PlaceJobs({Node("w1", 2), Node("w2", 2)}, {Job(1, 2)}, {},
                        Opts(GetParam()));
  ASSERT_EQ(plan.placed.size(), 1u);
  ASSERT_EQ(plan.placed[0].nodes.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].device_indexes, (std::vector<int>{0, 1}));
}

TEST_P(AllPolicies, NeverDoubleBooksDevices) {
  std::vector<JobRequest> jobs;
  for (int i = 1; i <= 10; ++i) jobs.push_back(Job(i, 1));
  auto plan =
      PlaceJobs({Node("w1", 4), Node("w2", 4)}, jobs, {}, Opts(GetParam()));
  EXPECT_EQ(plan.placed.size(), 8u);
  std::set<std::pair<std::string, int>> used;
  for (const auto& p : plan.placed) {
    for (int d : p.nodes[0].device_indexes) {
      EXPECT_TRUE(used.insert({p.nodes[0].worker_id, d}).second);
    }
  }
  EXPECT_EQ(plan.pending.size(), 2u);
}

TEST_P(AllPolicies, GangIsAllOrNothing) {
  // Two nodes with 2 free GPUs; a 3-node gang cannot start at all.
  auto plan = PlaceJobs({Node("w1", 2), Node("w2", 2), Busy(Node("w3", 2), 2)},
                        {Job(1, 2, /*nodes=*/3)}, {}, Opts(GetParam()));
  EXPECT_TRUE(plan.placed.empty());
  EXPECT_EQ(plan.pending.at(1).reason, PendingReason::kGangIncomplete);
}

TEST_P(AllPolicies, GangUsesDistinctNodes) {
  auto plan = PlaceJobs({Node("w1", 8), Node("w2", 8)},
                        {Job(1, 2, /*nodes=*/2)}, {}, Opts(GetParam()));
  ASSERT_EQ(plan.placed.size(), 1u);
  const auto& nodes = plan.placed[0].nodes;
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_NE(nodes[0].worker_id, nodes[1].worker_id);
  EXPECT_EQ(nodes[0].node_rank, 0);
  EXPECT_EQ(nodes[1].node_rank, 1);
}

TEST_P(AllPolicies, FractionalJobsShareOneDevice) {
  std::vector<JobRequest> jobs;
  for (int i = 1; i <= 4; ++i) jobs.push_back(Job(i, 0.25));
  auto plan = PlaceJobs({Node("w1", 2)}, jobs, {}, Opts(GetParam()));
  ASSERT_EQ(plan.placed.size(), 4u);
  std::set<int> devices;
  for (const auto& p : plan.placed) {
    EXPECT_DOUBLE_EQ(p.nodes[0].share, 0.25);
    devices.insert(p.nodes[0].device_indexes.at(0));
  }
  EXPECT_EQ(devices.size(), 1u);
}

TEST_P(AllPolicies, WholeGpuJobNeverOnSharedDevice) {
  NodeView n = Node("w1", 2);
  n.devices[0].free_share = 0.75;  // a fractional job runs there
  auto plan = PlaceJobs({n}, {Job(1, 2), Job(2, 1)}, {}, Opts(GetParam()));
  EXPECT_EQ(PlacedIds(plan), (std::vector<int64_t>{2}));
  EXPECT_EQ(Find(plan, 2)->nodes[0].device_indexes, (std::vector<int>{1}));
  EXPECT_EQ(plan.pending.at(1).reason, PendingReason::kNoFitNow);
}

TEST_P(AllPolicies, GpuTypeListIsRespected) {
  JobRequest j = Job(1, 1);
  j.gpu_types = {"H100", "V100"};
  auto plan = PlaceJobs({Node("a", 8, "A100"), Node("v", 1, "V100")}, {j}, {},
                        Opts(GetParam()));
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "v");
}

TEST_P(AllPolicies, UnknownGpuTypeIsReported) {
  JobRequest j = Job(1, 1);
  j.gpu_types = {"H100"};
  auto plan = PlaceJobs({Node("a", 8, "A100")}, {j}, {}, Opts(GetParam()));
  EXPECT_TRUE(plan.placed.empty());
  EXPECT_EQ(plan.pending.at(1).reason, PendingReason::kNoSuchGpuType);
}

TEST_P(AllPolicies, LabelsMustMatch) {
  NodeView a = Node("a", 2), b = Node("b", 2);
  b.labels = {{"zone", "east"}, {"disk", "ssd"}};
  JobRequest j = Job(1, 1);
  j.labels = {{"zone", "east"}};
  auto plan = PlaceJobs({a, b}, {j}, {}, Opts(GetParam()));
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "b");
  j.labels = {{"zone", "west"}};
  plan = PlaceJobs({a, b}, {j}, {}, Opts(GetParam()));
  EXPECT_EQ(plan.pending.at(1).reason, PendingReason::kNeverFits);
}

TEST_P(AllPolicies, UnschedulableNodesAreSkipped) {
  NodeView a = Node("a", 8);
  a.schedulable = false;
  auto plan = PlaceJobs({a, Node("b", 1)}, {Job(1, 1), Job(2, 1)}, {},
                        Opts(GetParam()));
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "b");
}

TEST_P(AllPolicies, CpuAndMemoryMustFit) {
  JobRequest j = Job(1, 1);
  j.cpu = 32;
  auto plan = PlaceJobs({Busy(Node("a", 2), 0, 40), Node("b", 2)}, {j}, {},
                        Opts(GetParam()));
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "b");
  j.memory = 1024 * kGiB;
  plan = PlaceJobs({Node("a", 2)}, {j}, {}, Opts(GetParam()));
  EXPECT_EQ(plan.pending.at(1).reason, PendingReason::kNeverFits);
}

TEST_P(AllPolicies, HigherPriorityGoesFirst) {
  auto plan = PlaceJobs({Node("w", 1)}, {Job(1, 1, 1, 0), Job(2, 1, 1, 50)}, {},
                        Opts(GetParam()));
  EXPECT_EQ(PlacedIds(plan), (std::vector<int64_t>{2}));
  EXPECT_EQ(plan.pending.at(1).jobs_ahead, 0);
}

TEST_P(AllPolicies, OlderJobFirstAmongEqualPriority) {
  JobRequest old_job = Job(7, 1), new_job = Job(3, 1);
  old_job.submitted_at_ms = 10;
  new_job.submitted_at_ms = 20;
  auto plan =
      PlaceJobs({Node("w", 1)}, {new_job, old_job}, {}, Opts(GetParam()));
  EXPECT_EQ(PlacedIds(plan), (std::vector<int64_t>{7}));
}

INSTANTIATE_TEST_SUITE_P(Policies, AllPolicies,
                         ::testing::Values(Policy::kFirstFit, Policy::kBestFit,
                                           Policy::kTupa, Policy::kFgd,
                                           Policy::kBestFitK8s));

TEST(BestFit, ChoosesNodeLeavingLeastFree) {
  auto plan = PlaceJobs({Node("big", 8), Busy(Node("snug", 8), 6)}, {Job(1, 2)},
                        {}, Opts());
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "snug");
}

TEST(BestFit, PaperBestFitPicksAtRandomAmongTheTopIntegerScore) {
  // a and b leave the same fit after a 1-GPU job (a: more CPU, fewer
  // GPUs), c leaves 6 points more. kBestFit always takes a (the first);
  // the paper's Kubernetes BestFit takes a or b, never c.
  std::vector<NodeView> view = {Busy(Node("a", 8), 1), Node("b", 8),
                                Node("c", 8)};
  view[1].cpu_free = 56;
  for (Policy p : {Policy::kBestFit, Policy::kBestFitK8s}) {
    ClusterState state(view, p);
    auto demand = state.MakeDemand(1, 1, kGiB, {}, 1);
    ASSERT_TRUE(demand.has_value());
    std::set<std::string> chosen;
    for (int i = 0; i < 64; ++i) {
      auto choice = state.FindNode(*demand, {});
      ASSERT_TRUE(choice.has_value());
      chosen.insert(state.WorkerId(choice->node));
    }
    if (p == Policy::kBestFit) {
      EXPECT_EQ(chosen, (std::set<std::string>{"a"}));
    } else {
      EXPECT_EQ(chosen, (std::set<std::string>{"a", "b"}));
    }
  }
}

TEST(BestFit, FirstFitTakesFirstNodeInstead) {
  auto plan = PlaceJobs({Node("big", 8), Busy(Node("snug", 8), 6)}, {Job(1, 2)},
                        {}, Opts(Policy::kFirstFit));
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "big");
}

TEST(BestFit, CheaperNodeWinsEqualFit) {
  NodeView a = Node("a", 4), b = Node("b", 4);
  a.price_per_gpu_hour = 3.0;
  b.price_per_gpu_hour = 1.5;
  for (Policy p : {Policy::kBestFit, Policy::kTupa}) {
    auto plan = PlaceJobs({a, b}, {Job(1, 1)}, {}, Opts(p));
    EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "b");
  }
}

// A snug fit on a dear node against an empty cheap one: a short job packs,
// a job that runs for days goes where keeping a node up costs least.
TEST(LongJob, TakesTheNodeCheapestToKeepUpOverTheSnuggestFit) {
  NodeView dear = Busy(Node("dear", 4, "V100"), 3);
  NodeView cheap = Node("cheap", 4, "T4");
  dear.price_per_gpu_hour = 2.48;
  cheap.price_per_gpu_hour = 0.62;
  JobRequest brief = Job(1, 1), long_job = Job(2, 1);
  brief.max_runtime_s = 600;
  long_job.max_runtime_s = 3 * 86400;
  PlacementOptions tupa = Opts(Policy::kTupa);
  auto plan = PlaceJobs({dear, cheap}, {brief}, {}, tupa);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "dear");
  plan = PlaceJobs({dear, cheap}, {long_job}, {}, tupa);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "cheap");
  // Only kTupa, and only while the threshold is on.
  plan = PlaceJobs({dear, cheap}, {long_job}, {}, Opts(Policy::kBestFit));
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "dear");
  tupa.long_job_runtime_s = 0;
  tupa.lone_job_runtime_s = 0;
  plan = PlaceJobs({dear, cheap}, {long_job}, {}, tupa);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "dear");
}

// A job of hours that fragmentation would put alone on an empty 8-GPU node
// (keeping its room for 2-GPU jobs) goes where it alone costs least to keep
// up; a job of minutes, which leaves the node's up time to the idle policy,
// keeps fragmentation's pick.
TEST(LoneJob, AJobOfHoursAloneOnANodeTakesTheNodeCheapestToKeepUp) {
  NodeView big = Node("big", 8, "G2");
  NodeView small = Node("small", 2, "T4");
  big.price_per_gpu_hour = 0.9;     // 7.20 an hour for the node
  small.price_per_gpu_hour = 0.62;  // 1.24
  JobRequest hours = Job(1, 1), minutes = Job(1, 1);
  hours.max_runtime_s = 3 * 3600;
  minutes.max_runtime_s = 20 * 60;
  PlacementOptions tupa = Opts(Policy::kTupa);
  tupa.request_mix = {{2, 1, kGiB, {}, 1.0}};  // the workload: 2-GPU jobs
  EXPECT_EQ(
      PlaceJobs({big, small}, {minutes}, {}, tupa).placed[0].nodes[0].worker_id,
      "big");
  EXPECT_EQ(
      PlaceJobs({big, small}, {hours}, {}, tupa).placed[0].nodes[0].worker_id,
      "small");
  // Beside a job that keeps the big node up longer, it costs nothing there.
  RunningJob keeps = RunningOn(9, "big", 1, tupa.now_ms + 10 * 3'600'000);
  EXPECT_EQ(PlaceJobs({Busy(big, 1), small}, {hours}, {keeps}, tupa)
                .placed[0]
                .nodes[0]
                .worker_id,
            "big");
  tupa.lone_job_runtime_s = 0;
  EXPECT_EQ(
      PlaceJobs({big, small}, {hours}, {}, tupa).placed[0].nodes[0].worker_id,
      "big");
}

// The cost counts all the node's GPUs: one GPU on a small dear node costs
// less to keep up than on a big cheap one.
TEST(LongJob, CountsEveryGpuOfTheNodeItKeepsUp) {
  NodeView small = Node("small", 2, "V100");
  NodeView big = Node("big", 8, "T4");
  small.price_per_gpu_hour = 2.0;  // 4.00 an hour for the node
  big.price_per_gpu_hour = 0.62;   // 4.96
  JobRequest job = Job(1, 1);
  job.max_runtime_s = 2 * 86400;
  auto plan = PlaceJobs({big, small}, {job}, {}, Opts(Policy::kTupa));
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "small");
}

// A node that other jobs keep up past the long job's end costs nothing
// more: the long job joins them, even on a dearer, emptier node; a node
// held by a job of unknown end counts as held.
TEST(LongJob, JoinsANodeThatOtherJobsKeepUpLonger) {
  const int64_t now = Opts().now_ms;
  NodeView held = Busy(Node("held", 8, "V100"), 1);
  NodeView snug = Busy(Node("snug", 4, "T4"), 3);
  held.price_per_gpu_hour = 2.48;
  snug.price_per_gpu_hour = 0.62;
  RunningJob keeps = RunningOn(10, "held", 1, now + int64_t{10} * 86400 * 1000);
  const RunningJob brief = RunningOn(11, "snug", 3, now + 3600 * 1000);
  JobRequest long_job = Job(1, 1), short_job = Job(2, 1);
  long_job.max_runtime_s = 3 * 86400;
  short_job.max_runtime_s = 600;
  const PlacementOptions tupa = Opts(Policy::kTupa);
  auto plan = PlaceJobs({held, snug}, {long_job}, {keeps, brief}, tupa);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "held");
  plan = PlaceJobs({held, snug}, {short_job}, {keeps, brief}, tupa);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "snug");
  // Past what holds it: the cheap node again.
  long_job.max_runtime_s = 30 * 86400;
  plan = PlaceJobs({held, snug}, {long_job}, {keeps, brief}, tupa);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "snug");
  keeps.expected_end_ms = 0;  // unknown: held as long as it runs
  plan = PlaceJobs({held, snug}, {long_job}, {keeps, brief}, tupa);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "held");
}

// A long job that fits a dear live node waits for a stopped cheap one
// (booting included it costs less to keep up); a short job does not, nor
// does a long one when the boot would cost more or boots are off.
TEST(LongJob, WaitsForABootWhenAStoppedNodeCostsLessToKeepUp) {
  NodeView dear = Node("dear", 8, "V100");
  NodeView stopped = Node("stopped", 2, "T4");
  dear.price_per_gpu_hour = 2.48;     // 19.84 an hour for the node
  stopped.price_per_gpu_hour = 0.62;  // 1.24
  stopped.schedulable = false;
  stopped.bootable = true;
  JobRequest long_job = Job(1, 1), brief = Job(2, 1);
  long_job.max_runtime_s = 5 * 86400;
  brief.max_runtime_s = 600;
  PlacementOptions o = Opts(Policy::kTupa);
  o.boot_time_s = 180;
  long_job.submitted_at_ms = o.now_ms - 1000;  // pending a second
  auto plan = PlaceJobs({dear, stopped}, {long_job, brief}, {}, o);
  ASSERT_EQ(PlacedIds(plan), (std::vector<int64_t>{2}));
  const PendingInfo& info = plan.pending.at(1);
  EXPECT_EQ(info.reason, PendingReason::kWaitsForBoot);
  EXPECT_EQ(info.boot_node, "stopped");
  EXPECT_EQ(info.estimated_start_ms, o.now_ms + 180'000);
  EXPECT_STREQ(PendingReasonName(info.reason), "WAITS_FOR_BOOT");
  // Pending twice the boot time: the boot is not coming, it starts now.
  JobRequest late = long_job;
  late.submitted_at_ms = o.now_ms - 360'000;
  EXPECT_EQ(PlacedIds(PlaceJobs({dear, stopped}, {late}, {}, o)),
            (std::vector<int64_t>{1}));
  // A stopped node that is not bootable, or no boots: it starts now.
  o.boot_time_s = 0;
  EXPECT_EQ(PlacedIds(PlaceJobs({dear, stopped}, {long_job}, {}, o)),
            (std::vector<int64_t>{1}));
  o.boot_time_s = 180;
  stopped.bootable = false;
  EXPECT_EQ(PlacedIds(PlaceJobs({dear, stopped}, {long_job}, {}, o)),
            (std::vector<int64_t>{1}));
  // Dearer to keep up than the live node: it starts now.
  stopped.bootable = true;
  stopped.price_per_gpu_hour = 12.0;  // 24 an hour
  EXPECT_EQ(PlacedIds(PlaceJobs({dear, stopped}, {long_job}, {}, o)),
            (std::vector<int64_t>{1}));
  // Too small for it (CPU): it starts now.
  stopped.price_per_gpu_hour = 0.62;
  stopped.cpu_total = stopped.cpu_free = 0.5;
  EXPECT_EQ(PlacedIds(PlaceJobs({dear, stopped}, {long_job}, {}, o)),
            (std::vector<int64_t>{1}));
}

// A long job that fits a dear live node waits for a cheap live one that a
// job ending within the boot time frees; not when that end is further
// off, without boots, or once it has waited twice the boot time.
TEST(LongJob, WaitsForACheapNodeThatFreesWithinTheBootTime) {
  NodeView dear = Node("dear", 8, "V100");
  NodeView cheap = Busy(Node("cheap", 2, "T4"), 2);
  dear.price_per_gpu_hour = 2.48;   // 19.84 an hour for the node
  cheap.price_per_gpu_hour = 0.62;  // 1.24
  PlacementOptions o = Opts(Policy::kTupa);
  o.boot_time_s = 180;
  RunningJob brief = RunningOn(10, "cheap", 2, o.now_ms + 60'000);
  JobRequest long_job = Job(1, 1);
  long_job.max_runtime_s = 5 * 86400;
  long_job.submitted_at_ms = o.now_ms - 1000;
  auto plan = PlaceJobs({dear, cheap}, {long_job}, {brief}, o);
  EXPECT_TRUE(plan.placed.empty());
  const PendingInfo& info = plan.pending.at(1);
  EXPECT_EQ(info.reason, PendingReason::kWaitsForRelease);
  EXPECT_EQ(info.estimated_start_ms, o.now_ms + 60'000);
  EXPECT_STREQ(PendingReasonName(info.reason), "WAITS_FOR_RELEASE");
  // A short job does not wait.
  JobRequest brief_job = Job(2, 1);
  brief_job.max_runtime_s = 600;
  EXPECT_EQ(PlacedIds(PlaceJobs({dear, cheap}, {brief_job}, {brief}, o)),
            (std::vector<int64_t>{2}));
  // Freed only after the boot time: it starts now.
  RunningJob later = brief;
  later.expected_end_ms = o.now_ms + 600'000;
  EXPECT_EQ(PlacedIds(PlaceJobs({dear, cheap}, {long_job}, {later}, o)),
            (std::vector<int64_t>{1}));
  // Waited twice the boot time already: it starts now.
  JobRequest late = long_job;
  late.submitted_at_ms = o.now_ms - 360'000;
  EXPECT_EQ(PlacedIds(PlaceJobs({dear, cheap}, {late}, {brief}, o)),
            (std::vector<int64_t>{1}));
  // No boots (no idle policy): every node stays up anyway; it starts now.
  o.boot_time_s = 0;
  EXPECT_EQ(PlacedIds(PlaceJobs({dear, cheap}, {long_job}, {brief}, o)),
            (std::vector<int64_t>{1}));
}

// In one pass, a long job chooses its node before older jobs of its
// priority: the 2-GPU job, first in the queue, would take the cheap 2-GPU
// node and leave the long job the 8-GPU one to keep up for days.
TEST(LongJob, ChoosesItsNodeBeforeOlderJobsOfItsPriority) {
  NodeView small = Node("small", 2, "T4");
  NodeView big = Node("big", 8, "G2");
  small.price_per_gpu_hour = 0.62;  // 1.24 an hour for the node
  big.price_per_gpu_hour = 0.90;    // 7.20
  JobRequest pair = Job(1, 2), long_job = Job(2, 1);
  pair.max_runtime_s = 600;
  long_job.max_runtime_s = 5 * 86400;
  PlacementOptions o = Opts(Policy::kTupa);
  auto plan = PlaceJobs({small, big}, {pair, long_job}, {}, o);
  ASSERT_EQ(plan.placed.size(), 2u);
  EXPECT_EQ(Find(plan, 2)->nodes[0].worker_id, "small");
  EXPECT_EQ(Find(plan, 1)->nodes[0].worker_id, "big");
  // A higher priority still goes first.
  pair.priority = 10;
  plan = PlaceJobs({small, big}, {pair, long_job}, {}, o);
  ASSERT_EQ(plan.placed.size(), 2u);
  EXPECT_EQ(Find(plan, 1)->nodes[0].worker_id, "small");
  // Off with long_job_runtime_s 0: queue order.
  pair.priority = 0;
  o.long_job_runtime_s = 0;
  plan = PlaceJobs({small, big}, {pair, long_job}, {}, o);
  ASSERT_EQ(plan.placed.size(), 2u);
  EXPECT_EQ(Find(plan, 1)->nodes[0].worker_id, "small");
}

// Choosing first never takes the node reserved for the job at the head
// of the queue: the 2-GPU job waits for the cheap node's other GPU (free
// in an hour), so the long job keeps off it although it costs less.
TEST(LongJob, ChoosingFirstKeepsOffTheHeadJobsReservation) {
  PlacementOptions o = Opts(Policy::kTupa);
  NodeView small = Busy(Node("small", 2, "T4"), 1);
  NodeView big = Busy(Node("big", 8, "G2"), 7);
  small.price_per_gpu_hour = 0.62;
  big.price_per_gpu_hour = 0.90;
  const RunningJob on_small = RunningOn(10, "small", 1, o.now_ms + 3'600'000);
  const RunningJob on_big = RunningOn(11, "big", 7, o.now_ms + 7'200'000);
  JobRequest pair = Job(1, 2), long_job = Job(2, 1);
  pair.max_runtime_s = 600;
  long_job.max_runtime_s = 5 * 86400;
  auto plan = PlaceJobs({small, big}, {pair, long_job}, {on_small, on_big}, o);
  ASSERT_EQ(PlacedIds(plan), (std::vector<int64_t>{2}));
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "big");
  // Alone, nothing is reserved: the cheap node.
  plan = PlaceJobs({small, big}, {long_job}, {on_small, on_big}, o);
  ASSERT_EQ(PlacedIds(plan), (std::vector<int64_t>{2}));
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "small");
}

// Among nodes of equal cost, fragmentation and fit still decide; a type
// the job does not accept is never taken for its price.
TEST(LongJob, FitDecidesAmongEqualCostsAndTypesStillBind) {
  NodeView snug = Busy(Node("snug", 4, "T4"), 2);
  NodeView empty = Node("empty", 4, "T4");
  NodeView dear = Busy(Node("dear", 4, "V100"), 3);
  NodeView cheaper = Node("cheaper", 4, "P4");
  snug.price_per_gpu_hour = empty.price_per_gpu_hour = 0.62;
  dear.price_per_gpu_hour = 2.48;
  cheaper.price_per_gpu_hour = 0.30;
  JobRequest job = Job(1, 1);
  job.max_runtime_s = 2 * 86400;
  job.gpu_types = {"T4", "V100"};
  auto plan =
      PlaceJobs({dear, empty, cheaper, snug}, {job}, {}, Opts(Policy::kTupa));
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id, "snug");
  // The class search (no request mix) orders the same way.
  ClusterState state({dear, empty, cheaper, snug}, Policy::kTupa);
  auto demand = state.MakeDemand(1, 1, kGiB, {"T4", "V100"}, 1);
  ASSERT_TRUE(demand.has_value());
  demand->run_until_ms = job.max_runtime_s * 1000;
  auto choice = state.FindNode(*demand, {});
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(state.WorkerId(choice->node), "snug");
  demand->run_until_ms = 0;
  EXPECT_EQ(state.WorkerId(state.FindNode(*demand, {})->node), "dear");
}

TEST(BestFit, SharePacksOntoPartlyUsedDevice) {
  NodeView n = Node("w", 4);
  n.devices[2].free_share = 0.5;
  for (Policy p : {Policy::kBestFit, Policy::kTupa}) {
    auto plan = PlaceJobs({n}, {Job(1, 0.5)}, {}, Opts(p));
    ASSERT_EQ(plan.placed.size(), 1u);
    EXPECT_EQ(plan.placed[0].nodes[0].device_indexes, (std::vector<int>{2}));
  }
}

TEST(BestFit, WholeGpuRequestMustBeIntegral) {
  auto plan = PlaceJobs({Node("w", 4)}, {Job(1, 1.5)}, {}, Opts());
  EXPECT_EQ(plan.pending.at(1).reason, PendingReason::kNeverFits);
}

TEST(Gang, DevicesOfOneAssignmentShareAType) {
  NodeView mixed = Node("m", 0);
  mixed.devices = {{0, "A100", 1}, {1, "V100", 1}, {2, "V100", 1}};
  auto plan = PlaceJobs({mixed}, {Job(1, 2)}, {}, Opts());
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].device_indexes, (std::vector<int>{1, 2}));
  plan = PlaceJobs({mixed}, {Job(1, 3)}, {}, Opts());
  EXPECT_EQ(plan.pending.at(1).reason, PendingReason::kNeverFits);
}

TEST(Gang, LargerThanClusterNeverFits) {
  auto plan =
      PlaceJobs({Node("a", 2), Node("b", 2)}, {Job(1, 1, 3)}, {}, Opts());
  EXPECT_EQ(plan.pending.at(1).reason, PendingReason::kNeverFits);
  EXPECT_EQ(CheckEverFits({Node("a", 2), Node("b", 2)}, Job(1, 1, 3)),
            PendingReason::kNeverFits);
  EXPECT_EQ(CheckEverFits({Node("a", 2), Node("b", 2)}, Job(1, 2, 2)),
            PendingReason::kNone);
}

TEST(FairShare, TeamHoldingFewerGpusGoesFirst) {
  JobRequest a = Job(1, 1), b = Job(2, 1);
  a.team = "rich";
  b.team = "poor";
  RunningJob r;
  r.team = "rich";
  r.gpus = 4;
  r.worker_ids = {"x"};
  auto plan = PlaceJobs({Node("w", 1)}, {a, b}, {r}, Opts());
  EXPECT_EQ(PlacedIds(plan), (std::vector<int64_t>{2}));
}

TEST(FairShare, AlternatesBetweenTeamsWithinAPass) {
  std::vector<JobRequest> jobs;
  for (int i = 0; i < 4; ++i) {
    JobRequest j = Job(i + 1, 1);
    j.team = i < 2 ? "a" : "b";  // a submits both of its jobs first
    jobs.push_back(j);
  }
  auto plan = PlaceJobs({Node("w", 2)}, jobs, {}, Opts());
  EXPECT_EQ(PlacedIds(plan), (std::vector<int64_t>{1, 3}));
}

}  // namespace
}  // namespace tupa::scheduler

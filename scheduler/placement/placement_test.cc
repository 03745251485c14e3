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

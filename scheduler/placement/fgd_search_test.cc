// The kFgd policy against the FGD simulator's rules on hand-made clusters
// where the model tupa-sim used before issue 20 chose differently (one
// representative per class of identical GPU state, the tightest device for
// a share, a random draw among top-scored classes); and kTupa where it
// departs from FGD for jobs without GPUs (copies counted, CPU packed).
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/placement/cluster_state.h"

namespace tupa::scheduler {
namespace {

using Policy = PlacementOptions::Policy;

NodeView Node(const std::string& id, std::vector<double> free, double cpu) {
  NodeView n;
  n.worker_id = id;
  for (int i = 0; i < static_cast<int>(free.size()); ++i) {
    n.devices.push_back({i, "T4", free[i]});
  }
  n.cpu_total = n.cpu_free = cpu;
  n.memory_total = n.memory_free = int64_t{64} << 30;
  return n;
}

// One share shape of `gpus` with one core.
std::vector<RequestShape> ShareMix(double gpus) {
  return {{gpus, 1, 0, {}, 1}};
}

TEST(FgdSearch, TiedSharesGoToTheFirstNodeNotTheTightestCpu) {
  // Two nodes of the same GPU state; n1 has less free CPU. Every option
  // scores the same, so FGD's scheduler takes the first node in the list;
  // the old search scored only n1, the best CPU fit of the class.
  std::vector<NodeView> nodes = {Node("n0", {1, 1}, 32),
                                 Node("n1", {1, 1}, 16)};
  ClusterState state(nodes, Policy::kFgd);
  state.SetRequestMix(ShareMix(0.5), 128);
  auto demand = state.MakeDemand(0.5, 1, 0, {}, 1);
  ASSERT_TRUE(demand.has_value());
  for (int k = 0; k < 2; ++k) {
    auto choice = state.FindNode(*demand, {});
    ASSERT_TRUE(choice.has_value());
    EXPECT_EQ(state.WorkerId(choice->node), "n0") << "share " << k;
    // Both shares on device 0: the first index among the tied devices.
    EXPECT_EQ(choice->device_indexes, std::vector<int>{0}) << "share " << k;
    state.Apply(*choice);
  }
  // n0's device 0 is full, the other three untouched.
  EXPECT_EQ(state.free_gpu_milli(), 3000);
}

TEST(FgdSearch, ShareTakesTheFirstDeviceAmongTiedOnesNotTheTightest) {
  // Devices in index order: a free one, then one with 0.6 free. A 0.1
  // share leaves no fragment for a 0.1 mix on either, so the two tie; FGD
  // (allocateGpuIdBasedOnFGDScore) takes device 0, best fit would take 1.
  std::vector<NodeView> nodes = {Node("n0", {1, 0.6}, 32)};
  ClusterState state(nodes, Policy::kFgd);
  state.SetRequestMix(ShareMix(0.1), 128);
  auto demand = state.MakeDemand(0.1, 1, 0, {}, 1);
  auto choice = state.FindNode(*demand, {});
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->device_indexes, std::vector<int>{0});
  // No tie: with a 0.5 mix a 0.2 share on the 0.6 device would leave 0.4
  // as fragment, so the free device wins even when it comes second.
  std::vector<NodeView> swapped = {Node("n0", {0.6, 1}, 32)};
  ClusterState other(swapped, Policy::kFgd);
  other.SetRequestMix(ShareMix(0.5), 128);
  auto pick = other.FindNode(*other.MakeDemand(0.2, 1, 0, {}, 1), {});
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->device_indexes, std::vector<int>{1});
}

TEST(FgdSearch, ABetterScoreBeatsNodeOrder) {
  // n0 is first but a 0.5 share there splits a free device while n1 has a
  // half-used one that the share fills exactly: for a mix of 0.5 shares
  // and whole GPUs the fill removes fragment, the split adds some.
  std::vector<NodeView> nodes = {Node("n0", {1, 1}, 32),
                                 Node("n1", {0.5, 1}, 32)};
  ClusterState state(nodes, Policy::kFgd);
  state.SetRequestMix({{0.5, 1, 0, {}, 1}, {1, 1, 0, {}, 1}}, 128);
  auto choice = state.FindNode(*state.MakeDemand(0.5, 1, 0, {}, 1), {});
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(state.WorkerId(choice->node), "n1");
  EXPECT_EQ(choice->device_indexes, std::vector<int>{0});
}

// Where kTupa puts a 30-core job without GPUs against a mix of 1-GPU,
// 10-core jobs ("" when it fits nowhere).
std::string TupaNodeForA30CoreJob(const std::vector<NodeView>& nodes) {
  ClusterState state(nodes, Policy::kTupa);
  state.SetRequestMix({{1, 10, 0, {}, 1}}, 128);
  auto choice = state.FindNode(*state.MakeDemand(0, 30, 0, {}, 1), {});
  return choice.has_value() ? state.WorkerId(choice->node) : "";
}

TEST(TupaSearch, AJobWithoutGpusTakesCpuThatNoFreeGpuNeeds) {
  // A 1-GPU, 10-core mix. n0 has 2 free GPUs and 40 cores, n1 4 free GPUs
  // and 100 cores. A 30-core job without GPUs leaves every GPU shape able
  // to run once on either, so FGD's measure ties them and the least free
  // GPU would pick n0, leaving 10 cores for 2 free GPUs (one stranded).
  // Counting copies, n1 keeps 70 cores for its 4 GPUs: n1.
  EXPECT_EQ(TupaNodeForA30CoreJob(
                {Node("n0", {1, 1}, 40), Node("n1", {1, 1, 1, 1}, 100)}),
            "n1");
}

TEST(TupaSearch, TiedJobsWithoutGpusPackCpuTight) {
  // Both nodes have every GPU in use (two classes: 2 and 3 devices); the
  // job fits either and changes no fragment. The least CPU left wins (n1),
  // not the node order.
  EXPECT_EQ(TupaNodeForA30CoreJob(
                {Node("n0", {0, 0}, 64), Node("n1", {0, 0, 0}, 40)}),
            "n1");
}

TEST(FgdSearch, TypicalPodsDropMemoryAndRareShapes) {
  // FGD's typical pods: memory is not part of a shape, and the most
  // frequent shapes are kept until they cover 95% of the pods.
  std::vector<FragModel::Shape> shapes;
  auto add = [&](int milli, int count, int64_t cpu, int64_t mem, double w) {
    FragModel::Shape s;
    s.demand.milli = milli;
    s.demand.count = count;
    s.demand.cpu_milli = cpu;
    s.demand.memory = mem;
    s.weight = w;
    shapes.push_back(s);
  };
  add(500, 1, 1000, 1 << 20, 50);
  add(500, 1, 1000, 2 << 20, 46);  // same shape without memory: 96
  add(1000, 8, 1000, 0, 4);        // the rarest 4%: dropped
  auto typical = FgdTypicalShapes(shapes, kFgdTypicalCoverage);
  ASSERT_EQ(typical.size(), 1u);
  EXPECT_EQ(typical[0].demand.milli, 500);
  EXPECT_EQ(typical[0].demand.memory, 0);
  EXPECT_DOUBLE_EQ(typical[0].weight, 96);
}

}  // namespace
}  // namespace tupa::scheduler

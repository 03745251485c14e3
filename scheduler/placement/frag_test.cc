#include "scheduler/placement/frag.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/placement/placement.h"

namespace tupa::scheduler {
namespace {

constexpr uint64_t kTypeA = 1, kTypeB = 2;

FragModel::Shape Shape(int milli, int count, uint64_t types, double weight) {
  FragModel::Shape s;
  s.demand.milli = milli;
  s.demand.count = count;
  s.demand.types = types;
  s.weight = weight;
  return s;
}

TEST(FragModel, CountsDevicesTooSmallForAShape) {
  // One shape, a whole GPU: the half-free device is fragment, the free one
  // is not.
  FragModel m({Shape(1000, 1, kAnyType, 1)}, 0);
  const int free[] = {500, 1000};
  EXPECT_DOUBLE_EQ(m.Frag(free, 2, 0, 1000, 1000), 500);
}

TEST(FragModel, AllFreeIsFragmentWhenTheShapeCannotRun) {
  // Two whole GPUs on a node with one free device, or without the CPU.
  FragModel m({Shape(1000, 2, kAnyType, 1)}, 0);
  const int one[] = {0, 1000};
  EXPECT_DOUBLE_EQ(m.Frag(one, 2, 0, 1000, 1000), 1000);
  FragModel cpu({Shape(1000, 1, kAnyType, 1)}, 0);
  FragModel::Shape big = Shape(1000, 1, kAnyType, 1);
  big.demand.cpu_milli = 2000;
  FragModel needs_cpu({big}, 0);
  const int two[] = {1000, 1000};
  EXPECT_DOUBLE_EQ(cpu.Frag(two, 2, 0, 1000, 1000), 0);
  EXPECT_DOUBLE_EQ(needs_cpu.Frag(two, 2, 0, 1000, 1000), 2000);
}

TEST(FragModel, WeightsAreNormalisedAndMixed) {
  // Half the mix wants 0.5 GPU (fits both devices), half a whole GPU.
  FragModel m({Shape(500, 1, kAnyType, 3), Shape(1000, 1, kAnyType, 3)}, 0);
  const int free[] = {500, 1000};
  EXPECT_DOUBLE_EQ(m.Frag(free, 2, 0, 1000, 1000), 0.5 * 0 + 0.5 * 500);
}

TEST(FragModel, ShapesWithoutGpusCountEveryFreeGpu) {
  // A quarter of the mix asks for no GPU: FGD counts all free capacity as
  // fragment for it, and the GPU shapes keep the other three quarters.
  FragModel m({Shape(0, 0, kAnyType, 1), Shape(1000, 1, kAnyType, 3)}, 0);
  const int free[] = {500, 1000};
  EXPECT_DOUBLE_EQ(m.Frag(free, 2, 0, 1000, 1000), 0.25 * 1500 + 0.75 * 500);
  // With supplies known the no-GPU weight is not taken for type pressure.
  FragModel supplied({Shape(0, 0, kAnyType, 1), Shape(1000, 1, kAnyType, 3)}, 0,
                     {2000, 6000});
  EXPECT_DOUBLE_EQ(supplied.Frag(free, 2, 1, 1000, 1000),
                   0.25 * 1500 + 0.75 * 500);
  // Only shapes without GPUs: nothing to score against.
  EXPECT_TRUE(FragModel({Shape(0, 0, kAnyType, 1)}, 0).empty());
}

TEST(FragModel, PlainFgdTypeTermWithoutSupplies) {
  // FGD: a shape that rejects the pool's type counts all its free GPU.
  FragModel m({Shape(1000, 1, kTypeA, 1), Shape(1000, 1, kAnyType, 1)}, 0);
  const int free[] = {1000};
  EXPECT_DOUBLE_EQ(m.Frag(free, 1, /*type_id=*/1, 1000, 1000), 500);
  EXPECT_DOUBLE_EQ(m.Frag(free, 1, /*type_id=*/0, 1000, 1000), 0);
}

TEST(FragModel, SuppliesChangeNothingWhenEveryShapeAcceptsEveryType) {
  const std::vector<FragModel::Shape> mix = {Shape(500, 1, kAnyType, 1),
                                             Shape(1000, 2, kAnyType, 3)};
  FragModel plain(mix, 0), supplied(mix, 0, {2000, 16000});
  const int free[] = {300, 1000};
  for (int type : {0, 1}) {
    EXPECT_DOUBLE_EQ(supplied.Frag(free, 2, type, 1000, 1000),
                     plain.Frag(free, 2, type, 1000, 1000));
  }
}

TEST(FragModel, EqualSuppliesRankTypesAsFgdDoes) {
  // A is asked for by a quarter of the mix, B by the rest: the free GPU of
  // A counts more as fragment, with or without (equal) supplies.
  const std::vector<FragModel::Shape> mix = {Shape(1000, 1, kTypeA, 1),
                                             Shape(1000, 1, kTypeB, 3)};
  FragModel plain(mix, 0), supplied(mix, 0, {8000, 8000});
  const int free[] = {1000, 1000};
  EXPECT_GT(plain.Frag(free, 2, 0, 1000, 1000),
            plain.Frag(free, 2, 1, 1000, 1000));
  EXPECT_GT(supplied.Frag(free, 2, 0, 1000, 1000),
            supplied.Frag(free, 2, 1, 1000, 1000));
}

NodeView OneGpuNode(const std::string& id, const std::string& type) {
  NodeView n;
  n.worker_id = id;
  n.devices.push_back({0, type, 1.0});
  n.cpu_total = n.cpu_free = 8;
  n.memory_total = n.memory_free = int64_t{64} << 30;
  return n;
}

// A scarce type (1 GPU of A) and a plentiful one (10 of B); jobs asking for
// B by name outnumber those asking for A, but per GPU of supply A is the
// more wanted. Plain FGD would send a job that accepts either type to A
// (see the next test); the pressure term sends it to B and leaves A to the
// jobs that can run nowhere else.
TEST(TypePressure, FlexibleJobLeavesTheScarceTypeAlone) {
  std::vector<NodeView> nodes = {OneGpuNode("a0", "A")};
  for (int i = 0; i < 10; ++i) {
    nodes.push_back(OneGpuNode("b" + std::to_string(i), "B"));
  }
  PlacementOptions o;
  o.policy = PlacementOptions::Policy::kTupa;
  o.request_mix = {{1, 0, 0, {"A"}, 1}, {1, 0, 0, {"B"}, 2}, {1, 0, 0, {}, 1}};
  JobRequest flexible;
  flexible.job_id = 1;
  flexible.gpus = 1;
  auto plan = PlaceJobs(nodes, {flexible}, {}, o);
  ASSERT_EQ(plan.placed.size(), 1u);
  EXPECT_EQ(plan.placed[0].nodes[0].worker_id.substr(0, 1), "b");
}

TEST(FragModel, CountingCopiesLeavesUnfedDevicesAsFragment) {
  // 1-GPU shapes of 10 cores on a node with 4 free GPUs and 25 cores: FGD
  // sees one copy fit and counts nothing; counting copies, the CPU feeds 2
  // of the 4 (floor(25 / 10)), so half the free GPU is fragment.
  FragModel::Shape s = Shape(1000, 1, kAnyType, 1);
  s.demand.cpu_milli = 10000;
  FragModel m({s}, 0, {}, 4);
  const int free[] = {1000, 1000, 1000, 1000};
  EXPECT_DOUBLE_EQ(m.Frag(free, 4, 0, 25000, 0), 0);
  EXPECT_DOUBLE_EQ(m.Frag(free, 4, 0, 25000, 0, true), 2000);
  // Enough CPU for every copy, or for none: the same as FGD.
  EXPECT_DOUBLE_EQ(m.Frag(free, 4, 0, 40000, 0, true), 0);
  EXPECT_DOUBLE_EQ(m.Frag(free, 4, 0, 9000, 0, true), 4000);
  // Shares count copies per device: 0.5 of a GPU fits twice on each.
  FragModel::Shape half = Shape(500, 1, kAnyType, 1);
  half.demand.memory = 10;
  FragModel shares({half}, 0, {}, 4);
  const int two[] = {1000, 1000};
  EXPECT_DOUBLE_EQ(shares.Frag(two, 2, 0, 0, 30, true), 2000.0 * 1 / 4);
}

TEST(FragModel, CopyBracketsSeeEveryMultipleOfAShapesCpu) {
  // Without copies 15 and 25 cores are one bracket (one threshold, 10);
  // counting copies they differ (20 lies between), and the next boundary
  // above 15 is 20.
  FragModel::Shape s = Shape(1000, 1, kAnyType, 1);
  s.demand.cpu_milli = 10000;
  FragModel m({s}, 0, {}, 4);
  EXPECT_EQ(m.CpuBracket(15000), m.CpuBracket(25000));
  EXPECT_NE(m.CpuBracket(15000, true), m.CpuBracket(25000, true));
  EXPECT_EQ(m.NextCpuBoundary(15000, 0, true), 20000);
  EXPECT_EQ(m.NextCpuBoundary(15000, 0), INT64_MAX);
  // No more copies than 4 devices hold: 40 and 90 cores are one bracket.
  EXPECT_EQ(m.CpuBracket(40000, true), m.CpuBracket(90000, true));
}

TEST(FragModel, CopyBracketsAboveTheLargestNodeChangeNothing) {
  // A share of 0.01 GPU with half a core: 8 devices hold 800 copies, but
  // no node has more than 32 cores / 64 GiB free, so the multiples above
  // are dropped. Every bracket, boundary up to the cap and Frag() agree.
  FragModel::Shape s = Shape(10, 1, kAnyType, 1);
  s.demand.cpu_milli = 500;
  s.demand.memory = int64_t{1} << 30;
  const int64_t max_cpu = 32000, max_memory = int64_t{64} << 30;
  FragModel all({s}, 0, {}, 8);
  FragModel capped({s}, 0, {}, 8, max_cpu, max_memory);
  const int free[] = {0, 400, 1000, 1000};
  for (int64_t cpu = 0; cpu <= max_cpu; cpu += 250) {
    EXPECT_EQ(all.CpuBracket(cpu, true), capped.CpuBracket(cpu, true)) << cpu;
    EXPECT_EQ(std::min(all.NextCpuBoundary(cpu, 500, true), max_cpu + 1),
              std::min(capped.NextCpuBoundary(cpu, 500, true), max_cpu + 1))
        << cpu;
    const int64_t memory = (cpu * max_memory) / max_cpu;
    EXPECT_EQ(all.MemoryBracket(memory, true),
              capped.MemoryBracket(memory, true))
        << memory;
    EXPECT_DOUBLE_EQ(all.Frag(free, 4, 0, cpu, memory, true),
                     capped.Frag(free, 4, 0, cpu, memory, true))
        << cpu;
  }
  // Above the largest node nothing changes any more.
  EXPECT_EQ(capped.NextCpuBoundary(max_cpu, 0, true), INT64_MAX);
}

TEST(TypePressure, PlainFgdWouldTakeTheScarceType) {
  // The same mix without supplies: FGD's coefficient for pool A is the
  // weight of the B-only shape (0.5), for pool B that of the A-only one
  // (0.25), so consuming A "removes more fragment".
  FragModel m({Shape(1000, 1, kTypeA, 1), Shape(1000, 1, kTypeB, 2),
               Shape(1000, 1, kAnyType, 1)},
              0);
  const int free[] = {1000}, none[] = {0};
  const double take_a = m.Frag(none, 1, 0, 0, 0) - m.Frag(free, 1, 0, 0, 0);
  const double take_b = m.Frag(none, 1, 1, 0, 0) - m.Frag(free, 1, 1, 0, 0);
  EXPECT_LT(take_a, take_b);
  FragModel p({Shape(1000, 1, kTypeA, 1), Shape(1000, 1, kTypeB, 2),
               Shape(1000, 1, kAnyType, 1)},
              0, {1000, 10000});
  EXPECT_GT(p.Frag(none, 1, 0, 0, 0) - p.Frag(free, 1, 0, 0, 0),
            p.Frag(none, 1, 1, 0, 0) - p.Frag(free, 1, 1, 0, 0));
}

}  // namespace
}  // namespace tupa::scheduler

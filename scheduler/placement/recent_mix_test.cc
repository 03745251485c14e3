#include "scheduler/placement/recent_mix.h"

#include "gtest/gtest.h"

namespace tupa::scheduler {
namespace {

JobRequest Shape(double gpus, int nodes = 1,
                 std::vector<std::string> types = {}) {
  JobRequest j;
  j.gpus = gpus;
  j.nodes = nodes;
  j.cpu = 4;
  j.memory = int64_t{16} << 30;
  j.gpu_types = std::move(types);
  return j;
}

double WeightOf(const std::vector<RequestShape>& mix, double gpus,
                size_t types = 0) {
  for (const RequestShape& s : mix) {
    if (s.gpus == gpus && s.gpu_types.size() == types) return s.weight;
  }
  return 0;
}

TEST(RecentMix, MergesShapesAndCountsGangNodes) {
  RecentMix mix(10);
  EXPECT_TRUE(mix.Mix().empty());
  mix.Add(Shape(1));
  mix.Add(Shape(1));
  mix.Add(Shape(8, /*nodes=*/2));
  mix.Add(Shape(1, 1, {"T4"}));
  const auto m = mix.Mix();
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(WeightOf(m, 1), 2);
  EXPECT_EQ(WeightOf(m, 8), 2);
  EXPECT_EQ(WeightOf(m, 1, 1), 1);
}

TEST(RecentMix, ForgetsTheOldestBeyondItsCapacity) {
  RecentMix mix(3);
  mix.Add(Shape(8));
  mix.Add(Shape(1));
  mix.Add(Shape(1));
  mix.Add(Shape(0.5));  // pushes the 8-GPU job out
  const auto m = mix.Mix();
  EXPECT_EQ(mix.size(), 3u);
  EXPECT_EQ(WeightOf(m, 8), 0);
  EXPECT_EQ(WeightOf(m, 1), 2);
  EXPECT_EQ(WeightOf(m, 0.5), 1);
}

TEST(RecentMix, ZeroCapacityRemembersEverything) {
  RecentMix mix(0);
  for (int i = 0; i < 10000; ++i) mix.Add(Shape(1));
  EXPECT_EQ(WeightOf(mix.Mix(), 1), 10000);
}

}  // namespace
}  // namespace tupa::scheduler

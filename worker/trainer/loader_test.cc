#include "worker/trainer/loader.h"

#include <algorithm>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "worker/trainer/cpu/cpu_backend.h"

namespace tupa::trainer {
namespace {

TEST(ShardSamplerTest, EpochIsAPermutationThatDependsOnSeedAndEpoch) {
  ShardSampler s(100, 0, 1, 10, 7);
  std::vector<int64_t> e0 = s.EpochIndices(0);
  std::vector<int64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_NE(e0, s.EpochIndices(1));
  EXPECT_EQ(e0, ShardSampler(100, 0, 1, 10, 7).EpochIndices(0));
  EXPECT_NE(e0, ShardSampler(100, 0, 1, 10, 8).EpochIndices(0));
}

TEST(ShardSamplerTest, RanksSplitEachGlobalBatchOfTheOneRankRun) {
  const int world = 4, batch = 8;
  ShardSampler one(1000, 0, 1, world * batch, 3);
  const std::vector<int64_t> global = one.EpochIndices(2);
  std::vector<std::vector<int64_t>> shards;
  for (int r = 0; r < world; ++r) {
    shards.push_back(ShardSampler(1000, r, world, batch, 3).EpochIndices(2));
  }
  EXPECT_EQ(one.steps_per_epoch(),
            ShardSampler(1000, 1, world, batch, 3).steps_per_epoch());
  for (int64_t step = 0; step < one.steps_per_epoch(); ++step) {
    std::multiset<int64_t> want(global.begin() + step * world * batch,
                                global.begin() + (step + 1) * world * batch);
    std::multiset<int64_t> got;
    for (int r = 0; r < world; ++r) {
      got.insert(shards[r].begin() + step * batch,
                 shards[r].begin() + (step + 1) * batch);
    }
    ASSERT_EQ(got, want) << "step " << step;
  }
}

TEST(ShardSamplerTest, PadsByWrappingSoEveryRankGetsTheSameCount) {
  // 10 samples on 4 ranks: 3 each, 2 padded from the start of the epoch.
  std::multiset<int64_t> all;
  for (int r = 0; r < 4; ++r) {
    ShardSampler s(10, r, 4, 1, 0);
    ASSERT_EQ(s.per_rank(), 3);
    for (int64_t i : s.EpochIndices(0)) all.insert(i);
  }
  EXPECT_EQ(all.size(), 12u);
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 10u);
}

TEST(BatchLoaderTest, DeliversTheRequestedStepsInOrder) {
  CpuBackend be;
  std::vector<float> x(50 * 2);
  std::vector<int32_t> y(50);
  for (int i = 0; i < 50; ++i) {
    x[2 * i] = static_cast<float>(i);
    y[i] = i % 3;
  }
  Dataset d = Dataset::FromF32(50, 2, x, y);
  ShardSampler s(50, 0, 1, 5, 1);  // 10 steps per epoch
  BatchLoader loader(&be, &d, &s, 5, /*first_step=*/7, /*last_step=*/23, 3);
  ASSERT_TRUE(loader.Start().ok());
  for (int64_t step = 7; step < 23; ++step) {
    auto b = loader.Next();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ((*b)->step, step);
    EXPECT_EQ((*b)->epoch, step / 10);
    const std::vector<int64_t> idx = s.EpochIndices(step / 10);
    for (int k = 0; k < 5; ++k) {
      EXPECT_EQ((*b)->x[2 * k], static_cast<float>(idx[(step % 10) * 5 + k]));
    }
    loader.Release(*b);
  }
  EXPECT_EQ(loader.Next().status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace tupa::trainer

#include "worker/trainer/grad_buckets.h"

#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace tupa::trainer {
namespace {

using Launches = std::vector<std::pair<size_t, size_t>>;

std::vector<GradBuckets::Range> Layers(const std::vector<size_t>& counts) {
  std::vector<GradBuckets::Range> out;
  size_t offset = 0;
  for (size_t c : counts) {
    out.push_back({offset, c});
    offset += c;
  }
  return out;
}

TEST(GradBucketsTest, BucketsFillFromTheLastLayerWithASmallFirstBucket) {
  // 4-byte floats: first cap 40 bytes = 10 floats, later caps 100 floats.
  GradBuckets b(Layers({60, 50, 8, 4}), /*tail=*/1, 40, 400);
  ASSERT_EQ(b.buckets().size(), 2u);
  // Bucket 0: layers 3, 2 (4 + 8 + tail 1 >= 10 floats).
  EXPECT_EQ(b.buckets()[0].first_layer, 2);
  EXPECT_EQ(b.buckets()[0].last_layer, 3);
  EXPECT_EQ(b.buckets()[0].range.offset, 110u);
  EXPECT_EQ(b.buckets()[0].range.count, 13u);  // includes the tail
  // Bucket 1: layers 1, 0 (the rest).
  EXPECT_EQ(b.buckets()[1].first_layer, 0);
  EXPECT_EQ(b.buckets()[1].range.offset, 0u);
  EXPECT_EQ(b.buckets()[1].range.count, 110u);
}

TEST(GradBucketsTest, LaunchesEachBucketOnceAllItsLayersAreReady) {
  GradBuckets b(Layers({60, 50, 8, 4}), 1, 40, 400);
  Launches launched;
  auto launch = [&](size_t off, size_t n) {
    launched.emplace_back(off, n);
    return absl::OkStatus();
  };
  b.BeginStep();
  ASSERT_TRUE(b.MarkReady(3, launch).ok());
  EXPECT_TRUE(launched.empty());
  ASSERT_TRUE(b.MarkReady(2, launch).ok());
  EXPECT_EQ(launched, (Launches{{110, 13}}));
  ASSERT_TRUE(b.MarkReady(1, launch).ok());
  EXPECT_EQ(launched.size(), 1u);
  ASSERT_TRUE(b.MarkReady(0, launch).ok());
  EXPECT_EQ(launched, (Launches{{110, 13}, {0, 110}}));
  EXPECT_TRUE(b.AllLaunched());
  // A new step starts over.
  b.BeginStep();
  EXPECT_FALSE(b.AllLaunched());
}

TEST(GradBucketsTest, BucketsLaunchInOrderEvenIfLayersFinishOutOfOrder) {
  GradBuckets b(Layers({60, 50, 8, 4}), 1, 40, 400);
  Launches launched;
  auto launch = [&](size_t off, size_t n) {
    launched.emplace_back(off, n);
    return absl::OkStatus();
  };
  b.BeginStep();
  ASSERT_TRUE(b.MarkReady(0, launch).ok());
  ASSERT_TRUE(b.MarkReady(1, launch).ok());
  EXPECT_TRUE(launched.empty());
  ASSERT_TRUE(b.MarkReady(3, launch).ok());
  ASSERT_TRUE(b.MarkReady(2, launch).ok());
  EXPECT_EQ(launched, (Launches{{110, 13}, {0, 110}}));
}

TEST(GradBucketsTest, LaunchErrorsPropagate) {
  GradBuckets b(Layers({4}), 1);
  b.BeginStep();
  auto fail = [](size_t, size_t) { return absl::UnavailableError("peer"); };
  EXPECT_EQ(b.MarkReady(0, fail).code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tupa::trainer

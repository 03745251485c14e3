#include "scheduler/placement/fit_bounds.h"

#include <gtest/gtest.h>

namespace tupa::scheduler {
namespace {

NodeView Node(std::vector<double> free_shares, double cpu_free,
              int64_t memory_free, bool schedulable = true) {
  NodeView n;
  n.worker_id = "w";
  for (size_t i = 0; i < free_shares.size(); ++i)
    n.devices.push_back({static_cast<int>(i), "H100", free_shares[i]});
  n.cpu_total = 64;
  n.cpu_free = cpu_free;
  n.memory_total = int64_t{1} << 40;
  n.memory_free = memory_free;
  n.schedulable = schedulable;
  return n;
}

JobRequest Request(double gpus, double cpu = 0, int64_t memory = 0) {
  JobRequest r;
  r.gpus = gpus;
  r.cpu = cpu;
  r.memory = memory;
  return r;
}

TEST(FitBoundsTest, AFullFleetFitsNoGpuJobButStillACpuJob) {
  const FitBounds b = FitBounds::Of(
      {Node({0, 0, 0, 0}, 56, 1 << 30), Node({0, 0}, 8, 1 << 30)});
  EXPECT_FALSE(b.CouldFit(Request(1)));
  EXPECT_FALSE(b.CouldFit(Request(0.5)));
  EXPECT_TRUE(b.CouldFit(Request(0, 1)));
  EXPECT_FALSE(b.CouldFit(Request(0, 57)));
  EXPECT_FALSE(b.CouldFit(Request(0, 1, int64_t{2} << 30)));
}

TEST(FitBoundsTest, WholeDevicesAreCountedPerNodeAndSharesPerDevice) {
  const FitBounds b = FitBounds::Of(
      {Node({1, 1, 0.5, 0}, 64, 1 << 30), Node({1, 0.25, 0.25}, 64, 1 << 30)});
  EXPECT_TRUE(b.CouldFit(Request(2)));
  EXPECT_FALSE(b.CouldFit(Request(3)));  // 3 whole devices on no one node
  EXPECT_TRUE(b.CouldFit(Request(0.5)));
  EXPECT_TRUE(b.CouldFit(Request(0.999)));  // a whole device takes a share
}

TEST(FitBoundsTest, UnschedulableNodesOfferNothing) {
  const FitBounds none = FitBounds::Of({Node({1, 1}, 64, 1 << 30, false)});
  EXPECT_FALSE(none.CouldFit(Request(0, 1)));
  EXPECT_FALSE(FitBounds::Of({}).CouldFit(Request(0)));
}

TEST(FitBoundsTest, NeverRefusesWhatPlacementWouldStart) {
  // Whatever fits one node by itself is accepted (the bound is necessary).
  const std::vector<NodeView> nodes = {Node({1, 0.3, 1, 0}, 3, 1000),
                                       Node({0.7, 0.7}, 16, 50)};
  const FitBounds b = FitBounds::Of(nodes);
  for (const JobRequest& r : {Request(2, 3, 1000), Request(0.7, 16, 50),
                              Request(0.3, 2, 10), Request(1, 0, 0)})
    EXPECT_TRUE(b.CouldFit(r)) << r.gpus << " " << r.cpu << " " << r.memory;
}

TEST(FitBoundsTest, BoundsWithinOthersRefuseWhatTheOthersRefuse) {
  const FitBounds full = FitBounds::Of({Node({0.5, 0}, 4, 1 << 20)});
  const FitBounds fuller = FitBounds::Of({Node({0.25, 0}, 4, 1 << 20)});
  const FitBounds freed = FitBounds::Of({Node({1, 0}, 4, 1 << 20)});
  EXPECT_TRUE(fuller.Within(full));
  EXPECT_TRUE(full.Within(full));
  EXPECT_FALSE(freed.Within(full));  // a whole device came free
  EXPECT_FALSE(full.Within(fuller));
  EXPECT_FALSE(full.CouldFit(Request(1)));
  EXPECT_FALSE(fuller.CouldFit(Request(1)));
  EXPECT_TRUE(freed.CouldFit(Request(1)));
  // No schedulable node is within anything; nothing is within it but that.
  const FitBounds none = FitBounds::Of({Node({1}, 4, 1 << 20, false)});
  EXPECT_TRUE(none.Within(full));
  EXPECT_FALSE(full.Within(none));
}

}  // namespace
}  // namespace tupa::scheduler

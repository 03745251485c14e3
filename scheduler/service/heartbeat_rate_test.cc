#include "scheduler/service/heartbeat_rate.h"

#include <gtest/gtest.h>

namespace tupa::scheduler {
namespace {

TEST(HeartbeatRateTest, SmallFleetBeatsAtBase) {
  HeartbeatRate rate;  // 1 s, 250/s, 15 s lease
  EXPECT_EQ(rate.IntervalFor(0), absl::Seconds(1));
  EXPECT_EQ(rate.IntervalFor(1), absl::Seconds(1));
  EXPECT_EQ(rate.IntervalFor(250), absl::Seconds(1));
}

TEST(HeartbeatRateTest, LargeFleetKeepsTheRateAtTheLimit) {
  HeartbeatRate rate;
  EXPECT_EQ(rate.IntervalFor(251), absl::Milliseconds(1004));
  EXPECT_EQ(rate.IntervalFor(1000), absl::Seconds(4));
  rate.max_per_second = 50;
  EXPECT_EQ(rate.IntervalFor(200), absl::Seconds(4));
}

TEST(HeartbeatRateTest, NeverPastAThirdOfTheLease) {
  HeartbeatRate rate;
  EXPECT_EQ(rate.IntervalFor(5000), absl::Seconds(5));
  rate.lease = absl::Seconds(30);
  EXPECT_EQ(rate.IntervalFor(5000), absl::Seconds(10));
  // A lease shorter than three base intervals keeps the base.
  rate.lease = absl::Seconds(2);
  EXPECT_EQ(rate.IntervalFor(5000), absl::Seconds(1));
}

TEST(HeartbeatRateTest, NoLimitMeansBase) {
  HeartbeatRate rate;
  rate.max_per_second = 0;
  EXPECT_EQ(rate.IntervalFor(100000), absl::Seconds(1));
  rate.base = absl::Milliseconds(500);
  EXPECT_EQ(rate.IntervalFor(100000), absl::Milliseconds(500));
}

}  // namespace
}  // namespace tupa::scheduler

#include "scheduler/service/port_blocks.h"

#include <gtest/gtest.h>

namespace tupa::scheduler {
namespace {

TEST(PortBlocks, SpanCoversStoreHorovodAndEveryTensorFlowWorker) {
  EXPECT_EQ(PortSpan(1), 3);  // MASTER_PORT, +1 Horovod, +2 TF worker 0
  EXPECT_EQ(PortSpan(16), 18);
  EXPECT_EQ(PortSpan(0), 3);  // a job has at least one rank
}

TEST(PortBlocks, FirstChoiceWhenNothingIsUsed) {
  EXPECT_EQ(PickPortBlock({}, 4, 29500, 2000, 10), 29510);
}

// The collision this prevents: job A holds 29500 (store), 29501 (Horovod),
// 29502-29505 (TF workers of 4 ranks). Job B's first choice 29501 would
// put its store on A's Horovod rendezvous port.
TEST(PortBlocks, SkipsEveryBlockThatOverlapsAnotherJobsPorts) {
  const std::vector<PortRange> used = {{29500, PortSpan(4)}};
  EXPECT_EQ(PickPortBlock(used, PortSpan(1), 29500, 2000, 1), 29506);
  // A block that would end inside a used one is refused too.
  EXPECT_EQ(PickPortBlock({{29510, 3}}, 5, 29500, 2000, 8), 29513);
}

TEST(PortBlocks, WrapsAroundAndStaysInsideTheRange) {
  // Starts near the end: a block that would run past base + count wraps.
  auto p = PickPortBlock({}, 10, 29500, 100, 95);
  ASSERT_TRUE(p.has_value());
  EXPECT_GE(*p, 29500);
  EXPECT_LE(*p + 10, 29600);
  EXPECT_EQ(PickPortBlock({{29500, 95}}, 5, 29500, 100, 0), 29595);
}

TEST(PortBlocks, NoneFreeIsNullopt) {
  EXPECT_FALSE(PickPortBlock({{29500, 100}}, 3, 29500, 100, 7).has_value());
  EXPECT_FALSE(PickPortBlock({}, 101, 29500, 100, 0).has_value());
}

}  // namespace
}  // namespace tupa::scheduler

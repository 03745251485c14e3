#include "worker/agent/progress_parser.h"

#include <gtest/gtest.h>

namespace tupa::worker {
namespace {

TEST(ExtractProgress, ParsesStepLinesAcrossChunkBoundaries) {
  std::string buffer;
  auto first = ExtractProgress(buffer, "plain log line\n{\"step\": 10, \"ep");
  EXPECT_TRUE(first.empty());
  auto second = ExtractProgress(
      buffer, "och\": 1, \"loss\": 0.5, \"samples_per_s\": 1000}\n");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].step(), 10);
  EXPECT_EQ(second[0].epoch(), 1);
  EXPECT_DOUBLE_EQ(second[0].loss(), 0.5);
  EXPECT_DOUBLE_EQ(second[0].samples_per_s(), 1000);
  EXPECT_TRUE(buffer.empty());
}

TEST(ExtractProgress, StepLinesCarryTheRunsLength) {
  std::string buffer;
  auto p = ExtractProgress(buffer,
                           "{\"step\": 50, \"epoch\": 0, \"loss\": 1.5, "
                           "\"total_steps\": 4690, \"total_epochs\": 10}\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].total_steps(), 4690);
  EXPECT_EQ(p[0].total_epochs(), 10);
}

TEST(ExtractProgress, SummaryCarriesTestAccuracy) {
  std::string buffer;
  auto p = ExtractProgress(buffer,
                           "{\"summary\": true, \"steps\": 4690, "
                           "\"final_loss\": 0.2, \"test_accuracy\": 0.889}\n"
                           "{not json}\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].step(), 4690);
  EXPECT_DOUBLE_EQ(p[0].test_accuracy(), 0.889);
}

TEST(ExtractProgress, CarriesTheParallelLayoutAndParameterMemory) {
  std::string buffer;
  auto p = ExtractProgress(buffer,
                           "{\"step\": 5, \"epoch\": 0, \"loss\": 1.5, "
                           "\"layout\": \"2x2\", \"param_bytes\": 4194304}\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].layout(), "2x2");
  EXPECT_EQ(p[0].param_bytes_per_rank(), 4194304);
}

}  // namespace
}  // namespace tupa::worker

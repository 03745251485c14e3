#include "common/quantity.h"

#include <gtest/gtest.h>

namespace tupa {
namespace {

TEST(ParseDuration, AcceptsCompoundUnits) {
  EXPECT_EQ(*ParseDuration("1h30m", "f"), absl::Minutes(90));
  EXPECT_EQ(*ParseDuration("90s", "f"), absl::Seconds(90));
  EXPECT_EQ(*ParseDuration("250ms", "f"), absl::Milliseconds(250));
  EXPECT_EQ(*ParseDuration("2d", "f"), absl::Hours(48));
}

TEST(ParseDuration, RejectsGarbageNamingTheField) {
  for (const char* bad : {"", "2x", "h", "10", "-5m", "1h 2m"}) {
    auto d = ParseDuration(bad, "max_runtime");
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(d.status().message().rfind("max_runtime:", 0), 0u);
  }
}

TEST(ParseMemory, BinaryAndDecimalSuffixes) {
  EXPECT_EQ(*ParseMemory("16Gi", "m"), 16LL << 30);
  EXPECT_EQ(*ParseMemory("512Mi", "m"), 512LL << 20);
  EXPECT_EQ(*ParseMemory("2G", "m"), 2000000000LL);
  EXPECT_EQ(*ParseMemory("1024", "m"), 1024);
  EXPECT_FALSE(ParseMemory("16GB", "m").ok());
  EXPECT_FALSE(ParseMemory("-1Gi", "m").ok());
}

TEST(ParseMoney, CanonicalDecimal) {
  EXPECT_EQ(*ParseMoney("25.00", "c"), "25.00");
  EXPECT_EQ(*ParseMoney("007", "c"), "7");
  EXPECT_FALSE(ParseMoney("1e3", "c").ok());
  EXPECT_FALSE(ParseMoney("-2", "c").ok());
  EXPECT_FALSE(ParseMoney("2.", "c").ok());
  EXPECT_FALSE(ParseMoney("0.0000001", "c").ok());
}

TEST(Human, DurationsAndMemory) {
  EXPECT_EQ(HumanDuration(absl::Seconds(42)), "42s");
  EXPECT_EQ(HumanDuration(absl::Seconds(252)), "4m12s");
  EXPECT_EQ(HumanDuration(absl::Minutes(125)), "2h05m");
  EXPECT_EQ(HumanMemory(16LL << 30), "16Gi");
}

}  // namespace
}  // namespace tupa

#include "scheduler/pricing/usage_window.h"

#include "absl/time/civil_time.h"
#include "gtest/gtest.h"

namespace tupa::pricing {
namespace {

absl::Time Utc(int y, int mo, int d, int h) {
  return absl::FromCivil(absl::CivilHour(y, mo, d, h), absl::UTCTimeZone());
}

PriceEntry Flat(const char* per_gpu_hour) {
  PriceEntry e;
  e.per_gpu_hour = *Money::FromString(per_gpu_hour);
  return e;
}

// 2 GPU-dollars an hour, half price from 00:00 to 12:00 UTC every day.
PriceEntry HalfPriceMornings() {
  auto catalog = PriceCatalog::Parse(
      "currency: USD\nprices: [{per_gpu_hour: 2, off_peak: [{days: "
      "[mon,tue,wed,thu,fri,sat,sun], hours: \"00:00-12:00\", timezone: "
      "UTC, discount: 0.5}]}]");
  EXPECT_TRUE(catalog.ok()) << catalog.status();
  return catalog.ok() ? catalog->entries()[0] : PriceEntry();
}

TEST(ClipUsage, ASpanCrossingTheWindowCountsOnlyItsTimeInside) {
  // The auditor's example: 1 GPU at 2/h, window Nov 1 00:00 - Nov 2 00:00.
  UsageSpan before{Utc(2026, 10, 31, 12), Utc(2026, 11, 1, 12), 1,
                   *Money::FromString("48.00"), Flat("2")};
  UsageSpan after{Utc(2026, 11, 1, 12), Utc(2026, 11, 3, 12), 1,
                  *Money::FromString("96"), Flat("2")};
  const absl::Time since = Utc(2026, 11, 1, 0), until = Utc(2026, 11, 2, 0);
  for (const UsageSpan& span : {before, after}) {
    auto pieces = ClipUsage(span, since, until, false);
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0].cost.ToString(), "24.00");
    EXPECT_DOUBLE_EQ(pieces[0].gpu_seconds, 12 * 3600.0);
  }
  // Outside the window: nothing.
  EXPECT_TRUE(ClipUsage(before, Utc(2026, 11, 2, 0), Utc(2026, 11, 3, 0), false)
                  .empty());
}

TEST(ClipUsage, ABilledSpanKeepsItsTotalAndItsOffPeakShape) {
  // 24 h from noon to noon: 12 h at 2 (24) + 12 h at 1 (12) = 36 as
  // priced, but it was billed 72 (say, the catalog changed since). Each
  // piece gets its share of the bill by the price schedule, not by time.
  UsageSpan span{Utc(2026, 11, 1, 12), Utc(2026, 11, 2, 12), 1,
                 *Money::FromString("72"), HalfPriceMornings()};
  auto pieces = ClipUsage(span, Utc(2026, 11, 1, 0), Utc(2026, 11, 3, 0), true);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].day, "2026-11-01");  // 12:00-24:00, full price
  EXPECT_EQ(pieces[0].cost.ToString(), "48.00");
  EXPECT_EQ(pieces[1].day, "2026-11-02");  // 00:00-12:00, half price
  EXPECT_EQ(pieces[1].cost.ToString(), "24.00");
}

TEST(ClipUsage, WithoutAPriceABilledSpanIsSharedByTime) {
  UsageSpan span{Utc(2026, 11, 1, 18), Utc(2026, 11, 2, 6), 2,
                 *Money::FromString("12"), std::nullopt};
  auto pieces = ClipUsage(span, Utc(2026, 11, 1, 0), Utc(2026, 11, 3, 0), true);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].cost.ToString(), "6.00");
  EXPECT_EQ(pieces[1].cost.ToString(), "6.00");
  EXPECT_DOUBLE_EQ(pieces[1].gpu_seconds, 2 * 6 * 3600.0);
}

TEST(ClipUsage, ARunningSpanIsPricedFromTheSchedule) {
  UsageSpan running{Utc(2026, 11, 1, 6), Utc(2026, 11, 1, 18), 0.5,
                    std::nullopt, HalfPriceMornings()};
  auto pieces =
      ClipUsage(running, Utc(2026, 11, 1, 10), Utc(2026, 11, 2, 0), false);
  ASSERT_EQ(pieces.size(), 1u);
  // 0.5 GPU x (2 h at 1 + 6 h at 2).
  EXPECT_EQ(pieces[0].cost.ToString(), "7.00");
  // Unpriced and unbilled: time counts, money does not.
  running.price.reset();
  pieces = ClipUsage(running, Utc(2026, 11, 1, 0), Utc(2026, 11, 2, 0), false);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_TRUE(pieces[0].cost.is_zero());
  EXPECT_DOUBLE_EQ(pieces[0].gpu_seconds, 0.5 * 12 * 3600.0);
}

}  // namespace
}  // namespace tupa::pricing

#include "scheduler/pricing/cost.h"

#include <algorithm>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "gtest/gtest.h"

namespace tupa::pricing {
namespace {

// Parses a one-entry catalog: `per_gpu_hour` and an `off_peak` list.
PriceEntry Entry(const std::string& price, const std::string& off_peak = "") {
  std::string yaml =
      absl::StrCat("currency: USD\nprices: [{per_gpu_hour: ", price);
  if (!off_peak.empty()) absl::StrAppend(&yaml, ", off_peak: ", off_peak);
  absl::StrAppend(&yaml, "}]");
  absl::StatusOr<PriceCatalog> c = PriceCatalog::Parse(yaml);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? c->entries()[0] : PriceEntry();
}

// The São Paulo A100 entry.
PriceEntry SaoPaulo() {
  return Entry("2.90",
               "[{days: [mon,tue,wed,thu,fri], hours: \"22:00-06:00\", "
               "timezone: America/Sao_Paulo, discount: 0.30}, "
               "{days: [sat,sun], hours: \"00:00-24:00\", "
               "timezone: America/Sao_Paulo, discount: 0.30}]");
}

absl::Time At(const char* zone, int y, int mo, int d, int h, int mi = 0) {
  absl::TimeZone tz;
  EXPECT_TRUE(absl::LoadTimeZone(zone, &tz)) << zone;
  return absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, 0), tz);
}
absl::Time Utc(int y, int mo, int d, int h, int mi = 0) {
  return At("UTC", y, mo, d, h, mi);
}

std::string CostOf(const PriceEntry& e, double gpus, absl::Time a,
                   absl::Time b) {
  absl::StatusOr<Money> m = Cost(e, gpus, a, b);
  return m.ok() ? m->ToString() : m.status().ToString();
}

TEST(CostTest, FlatPriceIsGpusTimesHoursTimesPrice) {
  PriceEntry e = Entry("2.90");
  EXPECT_EQ(CostOf(e, 2, Utc(2026, 3, 2, 10), Utc(2026, 3, 2, 11, 30)), "8.70");
  // One second of one GPU: 2.90 / 3600 = 0.000805555... -> 0.000805556.
  EXPECT_EQ(
      CostOf(e, 1, Utc(2026, 3, 2, 10), Utc(2026, 3, 2, 10) + absl::Seconds(1)),
      "0.000805556");
}

TEST(CostTest, ZeroLengthIntervalCostsNothing) {
  PriceEntry e = SaoPaulo();
  absl::Time t = Utc(2026, 3, 2, 10);
  EXPECT_EQ(CostOf(e, 8, t, t), "0.00");
  EXPECT_EQ(CostOf(e, 0, t, t + absl::Hours(5)), "0.00");
}

TEST(CostTest, RejectsBadArguments) {
  PriceEntry e = Entry("1.00");
  absl::Time t = Utc(2026, 3, 2, 10);
  EXPECT_FALSE(Cost(e, 1, t, t - absl::Seconds(1)).ok());
  EXPECT_FALSE(Cost(e, -1, t, t + absl::Hours(1)).ok());
  EXPECT_FALSE(Cost(e, std::nan(""), t, t + absl::Hours(1)).ok());
  EXPECT_FALSE(Cost(e, 1, t, absl::InfiniteFuture()).ok());
  EXPECT_FALSE(Cost(e, 1, t, t + kMaxCostInterval + absl::Hours(1)).ok());
}

TEST(CostTest, WindowWrappingMidnightIsSplitAtItsEdges) {
  PriceEntry e = Entry("2.90",
                       "[{days: [mon], hours: \"22:00-06:00\", timezone: UTC, "
                       "discount: 0.30}]");
  // Mon 2026-03-02 20:00 to Tue 08:00: 4 h at 2.90 and 8 h at 2.03.
  EXPECT_EQ(CostOf(e, 1, Utc(2026, 3, 2, 20), Utc(2026, 3, 3, 8)), "27.84");
  // Inside the window only.
  EXPECT_EQ(CostOf(e, 1, Utc(2026, 3, 2, 23), Utc(2026, 3, 3, 1)), "4.06");
  // Days name the opening day: Monday 00:00-06:00 belongs to Sunday.
  EXPECT_EQ(CostOf(e, 1, Utc(2026, 3, 2, 0), Utc(2026, 3, 2, 6)), "17.40");
}

TEST(CostTest, FridayNightWindowRunsIntoSaturday) {
  PriceEntry e = Entry("1.00",
                       "[{days: [fri], hours: \"22:00-06:00\", timezone: UTC, "
                       "discount: 0.50}]");
  // Sat 2026-03-07 00:00-12:00: 6 h at 0.50 and 6 h at 1.00.
  EXPECT_EQ(CostOf(e, 1, Utc(2026, 3, 7, 0), Utc(2026, 3, 7, 12)), "9.00");
}

TEST(CostTest, SpringForwardDayHas23DiscountedHoursInNewYork) {
  PriceEntry e = Entry("1.00",
                       "[{days: [sun], hours: \"00:00-24:00\", "
                       "timezone: America/New_York, discount: 0.50}]");
  // Sunday 2026-03-08 runs 05:00Z..04:00Z+1 (23 h). From Sat 17:00Z to Mon
  // 16:00Z: 24 h at 1.00 and 23 h at 0.50.
  EXPECT_EQ(CostOf(e, 1, Utc(2026, 3, 7, 17), Utc(2026, 3, 9, 16)), "35.50");
}

TEST(CostTest, FallBackDayHas25DiscountedHoursInNewYork) {
  PriceEntry e = Entry("1.00",
                       "[{days: [sun], hours: \"00:00-24:00\", "
                       "timezone: America/New_York, discount: 0.50}]");
  // Sunday 2026-11-01 runs 04:00Z..05:00Z+1 (25 h).
  EXPECT_EQ(CostOf(e, 1, Utc(2026, 11, 1, 4), Utc(2026, 11, 2, 5)), "12.50");
  EXPECT_EQ(CostOf(e, 1, Utc(2026, 10, 31, 4), Utc(2026, 11, 3, 4)), "59.50");
}

TEST(CostTest, NightWindowAcrossSpringForwardCountsRealHours) {
  PriceEntry e = Entry("2.00",
                       "[{days: [sat], hours: \"22:00-06:00\", "
                       "timezone: America/New_York, discount: 0.50}]");
  // Sat 22:00 EST (03:00Z) to Sun 06:00 EDT (10:00Z) is 7 real hours.
  EXPECT_EQ(CostOf(e, 1, Utc(2026, 3, 7, 0), Utc(2026, 3, 9, 0)), "89.00");
  EXPECT_EQ(NextPriceChange(e, Utc(2026, 3, 8, 4)), Utc(2026, 3, 8, 10));
}

TEST(CostTest, OverlappingWindowsApplyTheLargerDiscountOnly) {
  PriceEntry e = Entry("1.00",
                       "[{hours: \"20:00-04:00\", timezone: UTC, "
                       "discount: 0.20}, "
                       "{hours: \"00:00-06:00\", timezone: UTC, "
                       "discount: 0.50}]");
  // 00-06 at 0.50 (6 h -> 3.00), 06-20 full (14.00), 20-24 at 0.80 (3.20).
  EXPECT_EQ(CostOf(e, 1, Utc(2026, 3, 4, 0), Utc(2026, 3, 5, 0)), "20.20");
  EXPECT_EQ(PriceAt(e, Utc(2026, 3, 4, 2)).ToString(), "0.50");
  EXPECT_EQ(PriceAt(e, Utc(2026, 3, 4, 21)).ToString(), "0.80");
}

TEST(CostTest, WeekInSaoPauloEqualsSumOfItsDays) {
  PriceEntry e = SaoPaulo();
  absl::TimeZone sp;
  ASSERT_TRUE(absl::LoadTimeZone("America/Sao_Paulo", &sp));
  absl::CivilDay monday(2026, 3, 2);
  Money days;
  for (int i = 0; i < 7; ++i) {
    absl::StatusOr<Money> day = Cost(e, 1, absl::FromCivil(monday + i, sp),
                                     absl::FromCivil(monday + i + 1, sp));
    ASSERT_TRUE(day.ok()) << day.status();
    days += *day;
  }
  absl::StatusOr<Money> week =
      Cost(e, 1, absl::FromCivil(monday, sp), absl::FromCivil(monday + 7, sp));
  ASSERT_TRUE(week.ok()) << week.status();
  // 82 discounted hours (Mon 2, Tue-Fri 8 each, Sat+Sun 48), 86 full.
  EXPECT_EQ(week->ToString(), "415.86");
  EXPECT_EQ(days, *week);
}

TEST(CostTest, FractionalGpusScaleExactly) {
  PriceEntry e = SaoPaulo();
  absl::Time mon = At("America/Sao_Paulo", 2026, 3, 2, 0);
  EXPECT_EQ(CostOf(e, 0.25, mon, mon + absl::Hours(1)), "0.725");
  EXPECT_EQ(CostOf(e, 0.25, mon, mon + absl::Hours(24 * 7)), "103.965");
  EXPECT_EQ(CostOf(e, 0.125, mon, mon + absl::Hours(24 * 7)), "51.9825");
  absl::StatusOr<Money> est = Estimate(e, 0.25, mon, absl::Hours(24 * 7));
  ASSERT_TRUE(est.ok());
  EXPECT_EQ(est->ToString(), "103.965");
}

TEST(CostTest, PriceAtAndNextPriceChangeFollowTheWindows) {
  PriceEntry e = SaoPaulo();
  const char* sp = "America/Sao_Paulo";
  EXPECT_EQ(PriceAt(e, At(sp, 2026, 3, 2, 12)).ToString(), "2.90");
  EXPECT_EQ(PriceAt(e, At(sp, 2026, 3, 2, 23)).ToString(), "2.03");
  EXPECT_EQ(PriceAt(e, At(sp, 2026, 3, 2, 22)).ToString(), "2.03");
  EXPECT_EQ(NextPriceChange(e, At(sp, 2026, 3, 2, 12)), At(sp, 2026, 3, 2, 22));
  // The edge itself belongs to the new price; the next change is 06:00.
  EXPECT_EQ(NextPriceChange(e, At(sp, 2026, 3, 2, 22)), At(sp, 2026, 3, 3, 6));
  // Friday night runs into the weekend window: next change is Monday 00:00.
  EXPECT_EQ(NextPriceChange(e, At(sp, 2026, 3, 6, 23)), At(sp, 2026, 3, 9, 0));
  EXPECT_EQ(NextPriceChange(Entry("1.00"), Utc(2026, 3, 2, 0)),
            absl::InfiniteFuture());
  PriceEntry always = Entry("1.00",
                            "[{hours: \"00:00-24:00\", timezone: UTC, "
                            "discount: 0.25}]");
  EXPECT_EQ(NextPriceChange(always, Utc(2026, 3, 2, 0)),
            absl::InfiniteFuture());
  EXPECT_EQ(PriceAt(always, Utc(2026, 3, 2, 0)).ToString(), "0.75");
}

// Windows in two zones, one with DST, so that random intervals cross window
// edges, weekday boundaries and DST changes (the NY Saturday night window
// spans both 2026 changes).
PriceEntry Mixed() {
  return Entry("3.17",
               "[{days: [mon,tue,wed,thu,fri], hours: \"22:00-06:00\", "
               "timezone: America/Sao_Paulo, discount: 0.30}, "
               "{days: [sat,sun], hours: \"00:00-24:00\", "
               "timezone: America/Sao_Paulo, discount: 0.25}, "
               "{days: [sat], hours: \"22:00-06:00\", "
               "timezone: America/New_York, discount: 0.45}, "
               "{days: [wed], hours: \"04:00-05:15\", "
               "timezone: America/New_York, discount: 0.10}]");
}

// An independent reference for the integrand: looks at the local wall clock
// of each window instead of computing window edges. Agrees with the library
// whenever no window edge is a civil time skipped or repeated by DST.
__int128 ReferenceRate(const PriceEntry& e, int64_t t_s) {
  int64_t best = 0;
  for (const OffPeakWindow& w : e.off_peak) {
    absl::CivilSecond cs =
        absl::ToCivilSecond(absl::FromUnixSeconds(t_s), w.timezone);
    absl::CivilDay day(cs);
    int m = cs.hour() * 60 + cs.minute();
    bool today = w.days[static_cast<int>(absl::GetWeekday(day))];
    bool yesterday = w.days[static_cast<int>(absl::GetWeekday(day - 1))];
    bool open =
        w.end_minute > w.start_minute
            ? today && m >= w.start_minute && m < w.end_minute
            : (today && m >= w.start_minute) || (yesterday && m < w.end_minute);
    if (open) best = std::max(best, w.discount_ppm);
  }
  return e.per_gpu_hour.nanos() * (kPpm - best);
}

// Brute force: the reference integrand summed step by step (edges fall on
// whole minutes, so a step of one minute or one second never straddles one).
__int128 BruteForce(const PriceEntry& e, int64_t start_s, int64_t end_s,
                    int64_t step_s) {
  __int128 sum = 0;
  for (int64_t t = start_s; t < end_s; t += step_s)
    sum += ReferenceRate(e, t) * (step_s * 1000000);
  return sum;
}

TEST(CostTest, IntegralEqualsPerMinuteSumOverRandomIntervals) {
  PriceEntry e = Mixed();
  std::mt19937_64 rng(7);
  const int64_t year_start = absl::ToUnixSeconds(Utc(2026, 1, 1, 0)) / 60;
  for (int i = 0; i < 1000; ++i) {
    int64_t start_min = year_start + static_cast<int64_t>(rng() % (365 * 1440));
    int64_t len_min = static_cast<int64_t>(rng() % (2 * 1440));
    int64_t a = start_min * 60, b = (start_min + len_min) * 60;
    ASSERT_EQ(internal::PriceIntegral(e, a * 1000000, b * 1000000),
              BruteForce(e, a, b, 60))
        << absl::FromUnixSeconds(a) << " + " << len_min << " min";
  }
}

TEST(CostTest, IntegralEqualsPerSecondSumAcrossDstChanges) {
  PriceEntry e = Mixed();
  std::mt19937_64 rng(11);
  const absl::Time changes[] = {Utc(2026, 3, 8, 7), Utc(2026, 11, 1, 6)};
  for (int i = 0; i < 100; ++i) {
    int64_t mid = absl::ToUnixSeconds(changes[i % 2]);
    int64_t a = mid - static_cast<int64_t>(rng() % (5 * 3600));
    int64_t b = mid + static_cast<int64_t>(rng() % (5 * 3600));
    ASSERT_EQ(internal::PriceIntegral(e, a * 1000000, b * 1000000),
              BruteForce(e, a, b, 1));
  }
}

TEST(CostTest, ThousandsOfPiecesSumToTheWholeToTheCent) {
  PriceEntry e = Mixed();
  std::mt19937_64 rng(3);
  const int64_t start = absl::ToUnixMicros(Utc(2026, 2, 20, 0));
  const int64_t end = absl::ToUnixMicros(Utc(2026, 4, 10, 0));
  const int kPieces = 5000;
  std::vector<int64_t> cuts = {start, end};
  for (int i = 1; i < kPieces; ++i)
    cuts.push_back(start + static_cast<int64_t>(rng() % (end - start)));
  std::sort(cuts.begin(), cuts.end());
  __int128 integral = 0;
  Money pieces;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    integral += internal::PriceIntegral(e, cuts[i], cuts[i + 1]);
    absl::StatusOr<Money> c = Cost(e, 2, absl::FromUnixMicros(cuts[i]),
                                   absl::FromUnixMicros(cuts[i + 1]));
    ASSERT_TRUE(c.ok());
    pieces += *c;
  }
  EXPECT_EQ(integral, internal::PriceIntegral(e, start, end));
  absl::StatusOr<Money> whole =
      Cost(e, 2, absl::FromUnixMicros(start), absl::FromUnixMicros(end));
  ASSERT_TRUE(whole.ok());
  // Each piece is rounded once, to a nano-unit.
  Money diff = pieces - *whole;
  EXPECT_LE(diff, Money::FromNanos(kPieces));
  EXPECT_GE(diff, Money::FromNanos(-kPieces));
  EXPECT_EQ(pieces.RoundTo(2), whole->RoundTo(2));
}

}  // namespace
}  // namespace tupa::pricing

#include "client/money.h"

#include <gtest/gtest.h>

namespace tupa::client {
namespace {

std::string Round(absl::string_view text, int places = 2) {
  absl::StatusOr<std::string> r = RoundDecimal(text, places);
  return r.ok() ? *r : "error";
}

TEST(MoneyTest, ExactHalvesRoundToTheEvenDigit) {
  EXPECT_EQ(Round("2.345"), "2.34");
  EXPECT_EQ(Round("2.355"), "2.36");
  EXPECT_EQ(Round("0.005"), "0.00");
  EXPECT_EQ(Round("0.015"), "0.02");
  EXPECT_EQ(Round("2.3450000"), "2.34");
}

TEST(MoneyTest, MoreOrLessThanHalfRoundsToTheNearest) {
  EXPECT_EQ(Round("2.3450001"), "2.35");
  EXPECT_EQ(Round("2.344999"), "2.34");
  EXPECT_EQ(Round("0.0051"), "0.01");
  EXPECT_EQ(Round("12.346"), "12.35");
}

TEST(MoneyTest, CarriesIntoTheWholePart) {
  EXPECT_EQ(Round("9.995"), "10.00");
  EXPECT_EQ(Round("999.999"), "1000.00");
  EXPECT_EQ(Round("0.999", 0), "1");
}

// Digits a double cannot hold survive: the result is the rounded exact
// value, not the rounded nearest double.
TEST(MoneyTest, WorksOnTheDigitsNotADouble) {
  EXPECT_EQ(Round("123456789012345.675"), "123456789012345.68");
  EXPECT_EQ(Round("1.00500000000000000001"), "1.01");
  EXPECT_EQ(Round("1.005"), "1.00");  // 1.005 as a double is 1.00499...
}

TEST(MoneyTest, PadsShortFractionsAndDropsLeadingZeros) {
  EXPECT_EQ(Round("12"), "12.00");
  EXPECT_EQ(Round("12.5"), "12.50");
  EXPECT_EQ(Round("007.1"), "7.10");
  EXPECT_EQ(Round("0"), "0.00");
  EXPECT_EQ(Round("2.5", 0), "2");
  EXPECT_EQ(Round("3.5", 0), "4");
}

TEST(MoneyTest, SignKeptOnlyWhenTheRoundedValueIsNotZero) {
  EXPECT_EQ(Round("-2.355"), "-2.36");
  EXPECT_EQ(Round("-0.004"), "0.00");
}

TEST(MoneyTest, RejectsWhatIsNotADecimal) {
  for (const char* bad : {"", "-", ".5", "5.", "1e3", "1,50", "abc", " 1"})
    EXPECT_FALSE(RoundDecimal(bad, 2).ok()) << bad;
}

TEST(MoneyTest, FormatMoneyAddsTheCurrencyAndShowsGarbageAsSent) {
  EXPECT_EQ(FormatMoney("12.345678", "USD"), "12.35 USD");
  EXPECT_EQ(FormatMoney("12.3", ""), "12.30");
  EXPECT_EQ(FormatMoney("", "USD"), "");
  EXPECT_EQ(FormatMoney("NaN", "USD"), "NaN USD");
}

TEST(MoneyTest, PricesKeepSubCentDigitsUpToFour) {
  EXPECT_EQ(FormatPrice("2.9", "USD"), "2.90 USD");
  EXPECT_EQ(FormatPrice("0.345", "BRL"), "0.345 BRL");
  EXPECT_EQ(FormatPrice("1.23455", ""), "1.2346");
  EXPECT_EQ(FormatPrice("1.23445", ""), "1.2344");
  EXPECT_EQ(FormatPrice("3", ""), "3.00");
  EXPECT_EQ(FormatPrice("", "USD"), "");
}

TEST(MoneyTest, GpuHoursHaveTwoDecimals) {
  EXPECT_EQ(FormatGpuHours(5400), "1.50");
  EXPECT_EQ(FormatGpuHours(0), "0.00");
}

}  // namespace
}  // namespace tupa::client

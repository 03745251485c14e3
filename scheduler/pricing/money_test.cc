#include "scheduler/pricing/money.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace tupa::pricing {
namespace {

Money M(const char* text) {
  absl::StatusOr<Money> m = Money::FromString(text);
  EXPECT_TRUE(m.ok()) << text << ": " << m.status();
  return m.value_or(Money());
}

TEST(MoneyTest, ParsesAndPrintsCanonicalDecimal) {
  EXPECT_EQ(M("25.00").ToString(), "25.00");
  EXPECT_EQ(M("2.90").ToString(), "2.90");
  EXPECT_EQ(M("2.9").ToString(), "2.90");
  EXPECT_EQ(M("7").ToString(), "7.00");
  EXPECT_EQ(M("0").ToString(), "0.00");
  EXPECT_EQ(M("0.000000001").ToString(), "0.000000001");
  EXPECT_EQ(M("-3.5").ToString(), "-3.50");
  EXPECT_EQ(M("-0.000000007").ToString(), "-0.000000007");
  EXPECT_EQ(M("0012.340").ToString(), "12.34");
  EXPECT_EQ(M("2.90").nanos(), 2900000000);
}

TEST(MoneyTest, FromStringRejectsMalformedText) {
  for (const char* bad :
       {"", "-", ".5", "1.", "1.2.3", "1e3", "+1", " 1", "1 ", "1,00", "abc",
        "0.0000000001", "123456789012345678901"}) {
    EXPECT_FALSE(Money::FromString(bad).ok()) << bad;
  }
}

TEST(MoneyTest, ToStringRoundTripsRandomValues) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 10000; ++i) {
    __int128 nanos = static_cast<__int128>(rng()) * (1 + (rng() % 1000));
    if (rng() & 1) nanos = -nanos;
    Money m = Money::FromNanos(nanos);
    absl::StatusOr<Money> back = Money::FromString(m.ToString());
    ASSERT_TRUE(back.ok()) << m.ToString();
    EXPECT_EQ(*back, m) << m.ToString();
  }
}

TEST(MoneyTest, UserParseFollowsCommonParseMoneyRules) {
  absl::StatusOr<Money> ok = Money::Parse("500.00", "budgets[0].monthly");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, Money::FromUnits(500));
  absl::StatusOr<Money> neg = Money::Parse("-1.00", "prices[0].per_gpu_hour");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("prices[0].per_gpu_hour"),
            std::string::npos);
  EXPECT_FALSE(Money::Parse("0.0000001", "x").ok());  // 7 decimals
  EXPECT_FALSE(Money::Parse("1e2", "x").ok());
}

TEST(MoneyTest, ArithmeticIsExact) {
  // 0.1 + 0.2 == 0.3, which binary floating point gets wrong.
  EXPECT_EQ(M("0.1") + M("0.2"), M("0.3"));
  Money sum;
  for (int i = 0; i < 1000; ++i) sum += M("0.01");
  EXPECT_EQ(sum, M("10.00"));
  EXPECT_EQ(M("2.90") * 3, M("8.70"));
  EXPECT_EQ(M("1.00") - M("2.50"), M("-1.50"));
  EXPECT_LT(M("2.899999999"), M("2.90"));
  EXPECT_GT(M("0.000000001"), Money());
  EXPECT_EQ(-M("4.20"), M("-4.20"));
}

TEST(MoneyTest, FromRatioRoundsHalfToEven) {
  EXPECT_EQ(Money::FromRatio(5, 2).nanos(), 2);    // 2.5 -> 2
  EXPECT_EQ(Money::FromRatio(7, 2).nanos(), 4);    // 3.5 -> 4
  EXPECT_EQ(Money::FromRatio(26, 10).nanos(), 3);  // 2.6 -> 3
  EXPECT_EQ(Money::FromRatio(24, 10).nanos(), 2);  // 2.4 -> 2
  EXPECT_EQ(Money::FromRatio(-5, 2).nanos(), -2);  // -2.5 -> -2
  EXPECT_EQ(Money::FromRatio(-7, 2).nanos(), -4);  // -3.5 -> -4
  EXPECT_EQ(Money::FromRatio(-26, 10).nanos(), -3);
  EXPECT_EQ(Money::FromRatio(9, 3).nanos(), 3);
}

TEST(MoneyTest, RoundToCentsIsHalfEven) {
  EXPECT_EQ(M("2.345").RoundTo(2), M("2.34"));
  EXPECT_EQ(M("2.355").RoundTo(2), M("2.36"));
  EXPECT_EQ(M("2.3450001").RoundTo(2), M("2.35"));
  EXPECT_EQ(M("-2.345").RoundTo(2), M("-2.34"));
  EXPECT_EQ(M("0.5").RoundTo(0), M("0"));
  EXPECT_EQ(M("1.5").RoundTo(0), M("2"));
  EXPECT_EQ(M("1.123456789").RoundTo(9), M("1.123456789"));
}

}  // namespace
}  // namespace tupa::pricing

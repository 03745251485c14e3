// Money: an exact decimal amount of one currency, stored as a signed 128-bit
// count of nano-units (1e-9 of the currency unit). Never floating point.
//
// Text form (ToString / FromString) is the PostgreSQL NUMERIC literal: an
// optional '-', whole digits, '.', then at least two and at most nine
// fractional digits, trailing zeros beyond the second trimmed ("25.00",
// "2.90", "0.000123457", "-3.50"). FromString(ToString(m)) == m for every m,
// so a NUMERIC column (unconstrained, or NUMERIC(38,9)) round-trips exactly.
//
// Rounding rule: the only place a value is rounded is FromRatio (used by
// the cost integral in cost.h, once per interval, at the end): round half to
// even to one nano-unit. Sums of Money are exact. RoundTo(2) rounds half to
// even for display to the cent; do not store the rounded value.
//
// Range: |amount| < 1e20 units from text; arithmetic does not check for
// overflow (it would need ~1.7e29 units). A value type; thread-compatible.
#ifndef TUPA_SCHEDULER_PRICING_MONEY_H_
#define TUPA_SCHEDULER_PRICING_MONEY_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tupa::pricing {

class Money {
 public:
  static constexpr int kDecimals = 9;
  static constexpr int64_t kNanosPerUnit = 1000000000;

  constexpr Money() = default;

  static constexpr Money FromNanos(__int128 nanos) { return Money(nanos); }
  static constexpr Money FromUnits(int64_t units) {
    return Money(static_cast<__int128>(units) * kNanosPerUnit);
  }
  // numerator / denominator nano-units, rounded half to even.
  // Requires denominator > 0.
  static Money FromRatio(__int128 numerator, __int128 denominator);

  // Parses the text form above (also accepts 0 or 1 fractional digits and
  // no '.'; at most 9 fractional digits, at most 20 whole digits; no '+',
  // no exponent, no spaces). InvalidArgument otherwise. Use for values read
  // back from PostgreSQL or written by ToString.
  static absl::StatusOr<Money> FromString(absl::string_view text);

  // Parses an amount a user typed (prices, budgets, max_cost) with the rules
  // of tupa::ParseMoney (common/quantity.h): non-negative, at most 6
  // fractional digits, at most 12 whole digits. InvalidArgument naming
  // `field` otherwise.
  static absl::StatusOr<Money> Parse(absl::string_view text,
                                     absl::string_view field);

  constexpr __int128 nanos() const { return nanos_; }
  constexpr bool is_zero() const { return nanos_ == 0; }
  constexpr bool is_negative() const { return nanos_ < 0; }

  // The canonical text form described above.
  std::string ToString() const;
  // Rounded half to even to `decimals` (0..9) fractional digits.
  Money RoundTo(int decimals) const;
  // Nearest double, for metrics and JSON numbers only; never store it.
  double ToDouble() const;

  constexpr Money operator-() const { return Money(-nanos_); }
  constexpr Money operator+(Money o) const { return Money(nanos_ + o.nanos_); }
  constexpr Money operator-(Money o) const { return Money(nanos_ - o.nanos_); }
  constexpr Money operator*(int64_t k) const { return Money(nanos_ * k); }
  Money& operator+=(Money o) {
    nanos_ += o.nanos_;
    return *this;
  }
  Money& operator-=(Money o) {
    nanos_ -= o.nanos_;
    return *this;
  }
  constexpr bool operator==(Money o) const { return nanos_ == o.nanos_; }
  constexpr bool operator!=(Money o) const { return nanos_ != o.nanos_; }
  constexpr bool operator<(Money o) const { return nanos_ < o.nanos_; }
  constexpr bool operator<=(Money o) const { return nanos_ <= o.nanos_; }
  constexpr bool operator>(Money o) const { return nanos_ > o.nanos_; }
  constexpr bool operator>=(Money o) const { return nanos_ >= o.nanos_; }

 private:
  constexpr explicit Money(__int128 nanos) : nanos_(nanos) {}
  __int128 nanos_ = 0;
};

// Prints ToString(), so gtest and logs show amounts.
std::ostream& operator<<(std::ostream& os, Money m);

// round(numerator / denominator) to the nearest integer, ties to even.
// Requires denominator > 0. Exposed for cost.cc and tests.
__int128 DivRoundHalfEven(__int128 numerator, __int128 denominator);

}  // namespace tupa::pricing

#endif  // TUPA_SCHEDULER_PRICING_MONEY_H_

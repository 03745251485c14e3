#include "scheduler/pricing/money.h"

#include <algorithm>
#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/quantity.h"

namespace tupa::pricing {
namespace {

constexpr int kMaxWholeDigits = 20;

bool AllDigits(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

std::string UnsignedToString(unsigned __int128 v) {
  if (v == 0) return "0";
  std::string out;
  while (v > 0) {
    out.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

__int128 DivRoundHalfEven(__int128 numerator, __int128 denominator) {
  __int128 q = numerator / denominator;
  __int128 r = numerator % denominator;
  // Floor division, so that 0 <= r < denominator.
  if (r < 0) {
    q -= 1;
    r += denominator;
  }
  __int128 rest = denominator - r;
  if (r > rest || (r == rest && (q & 1) != 0)) q += 1;
  return q;
}

Money Money::FromRatio(__int128 numerator, __int128 denominator) {
  return Money(DivRoundHalfEven(numerator, denominator));
}

absl::StatusOr<Money> Money::FromString(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad money amount \"", text, "\": ", why));
  };
  absl::string_view rest = text;
  bool negative = false;
  if (!rest.empty() && rest.front() == '-') {
    negative = true;
    rest.remove_prefix(1);
  }
  size_t dot = rest.find('.');
  absl::string_view whole = rest.substr(0, dot);
  absl::string_view frac = dot == absl::string_view::npos
                               ? absl::string_view()
                               : rest.substr(dot + 1);
  if (whole.empty() || !AllDigits(whole) || !AllDigits(frac) ||
      (dot != absl::string_view::npos && frac.empty()))
    return bad("expected [-]digits[.digits]");
  if (frac.size() > kDecimals) return bad("more than 9 fractional digits");
  if (whole.size() > kMaxWholeDigits) return bad("too large");
  __int128 nanos = 0;
  for (char c : whole) nanos = nanos * 10 + (c - '0');
  for (int i = 0; i < kDecimals; ++i) {
    nanos =
        nanos * 10 + (i < static_cast<int>(frac.size()) ? frac[i] - '0' : 0);
  }
  return Money(negative ? -nanos : nanos);
}

absl::StatusOr<Money> Money::Parse(absl::string_view text,
                                   absl::string_view field) {
  absl::StatusOr<std::string> canonical = tupa::ParseMoney(text, field);
  if (!canonical.ok()) return canonical.status();
  // ParseMoney's canonical form is a subset of what FromString accepts.
  return FromString(*canonical);
}

std::string Money::ToString() const {
  unsigned __int128 magnitude =
      nanos_ < 0 ? static_cast<unsigned __int128>(-(nanos_ + 1)) + 1
                 : static_cast<unsigned __int128>(nanos_);
  std::string whole = UnsignedToString(magnitude / kNanosPerUnit);
  std::string frac = UnsignedToString(magnitude % kNanosPerUnit);
  frac.insert(0, kDecimals - frac.size(), '0');
  while (frac.size() > 2 && frac.back() == '0') frac.pop_back();
  return absl::StrCat(nanos_ < 0 ? "-" : "", whole, ".", frac);
}

Money Money::RoundTo(int decimals) const {
  decimals = std::clamp(decimals, 0, kDecimals);
  __int128 step = 1;
  for (int i = decimals; i < kDecimals; ++i) step *= 10;
  return Money(DivRoundHalfEven(nanos_, step) * step);
}

double Money::ToDouble() const {
  return static_cast<double>(nanos_) / static_cast<double>(kNanosPerUnit);
}

std::ostream& operator<<(std::ostream& os, Money m) {
  return os << m.ToString();
}

}  // namespace tupa::pricing

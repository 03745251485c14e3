#include "client/money.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tupa::client {
namespace {

bool AllDigits(absl::string_view s) {
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Adds one unit in the last place of the digit string `digits`, carrying
// into a new leading digit when needed ("999" -> "1000").
void Increment(std::string& digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return;
    }
    digits[i] = '0';
  }
  digits.insert(digits.begin(), '1');
}

std::string WithCurrency(std::string amount, absl::string_view currency) {
  if (!currency.empty()) absl::StrAppend(&amount, " ", currency);
  return amount;
}

}  // namespace

absl::StatusOr<std::string> RoundDecimal(absl::string_view text, int places) {
  const absl::string_view original = text;
  bool negative = false;
  if (!text.empty() && text[0] == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  const size_t dot = text.find('.');
  absl::string_view whole = text.substr(0, dot);
  absl::string_view frac =
      dot == absl::string_view::npos ? "" : text.substr(dot + 1);
  if (whole.empty() || !AllDigits(whole) || !AllDigits(frac) ||
      (dot != absl::string_view::npos && frac.empty()) || places < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a decimal amount: \"", original, "\""));
  }
  // All kept digits as one integer string; the point goes back at the end.
  std::string kept(whole);
  absl::StrAppend(&kept, frac.substr(0, places));
  kept.append(places - std::min<size_t>(frac.size(), places), '0');
  const absl::string_view rest =
      frac.size() > static_cast<size_t>(places) ? frac.substr(places) : "";
  if (!rest.empty() && rest[0] >= '5') {
    const bool exactly_half =
        rest[0] == '5' &&
        rest.find_first_not_of('0', 1) == absl::string_view::npos;
    const bool last_is_odd = (kept.back() - '0') % 2 == 1;
    if (!exactly_half || last_is_odd) Increment(kept);
  }
  const size_t int_digits = kept.size() - places;
  std::string int_part = kept.substr(0, int_digits);
  const size_t nz = int_part.find_first_not_of('0');
  int_part = nz == std::string::npos ? "0" : int_part.substr(nz);
  std::string out = int_part;
  if (places > 0) absl::StrAppend(&out, ".", kept.substr(int_digits));
  if (negative && kept.find_first_not_of('0') != std::string::npos)
    out.insert(out.begin(), '-');
  return out;
}

std::string FormatMoney(absl::string_view amount, absl::string_view currency) {
  if (amount.empty()) return "";
  absl::StatusOr<std::string> rounded = RoundDecimal(amount, 2);
  return WithCurrency(rounded.ok() ? *rounded : std::string(amount), currency);
}

std::string FormatPrice(absl::string_view price, absl::string_view currency) {
  if (price.empty()) return "";
  absl::StatusOr<std::string> rounded = RoundDecimal(price, 4);
  if (!rounded.ok()) return WithCurrency(std::string(price), currency);
  // Trailing zeros beyond the cents say nothing.
  std::string s = *std::move(rounded);
  while (s.size() - s.find('.') > 3 && s.back() == '0') s.pop_back();
  return WithCurrency(std::move(s), currency);
}

std::string FormatGpuHours(double gpu_seconds) {
  return absl::StrFormat("%.2f", gpu_seconds / 3600);
}

}  // namespace tupa::client

#include "common/quantity.h"

#include <cctype>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tupa {
namespace {

absl::Status Bad(absl::string_view field, absl::string_view text,
                 absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": bad value \"", text, "\" (expected ", expected, ")"));
}

}  // namespace

absl::StatusOr<absl::Duration> ParseDuration(absl::string_view text,
                                             absl::string_view field) {
  constexpr absl::string_view kExpected = "a duration such as 90s, 30m, 2h";
  if (text.empty()) return Bad(field, text, kExpected);
  absl::Duration total;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (
        i < text.size() &&
        (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    double value;
    if (start == i || !absl::SimpleAtod(text.substr(start, i - start), &value))
      return Bad(field, text, kExpected);
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])))
      ++i;
    absl::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit == "ms") {
      total += absl::Milliseconds(value);
    } else if (unit == "s") {
      total += absl::Seconds(value);
    } else if (unit == "m") {
      total += absl::Minutes(value);
    } else if (unit == "h") {
      total += absl::Hours(value);
    } else if (unit == "d") {
      total += absl::Hours(24 * value);
    } else {
      return Bad(field, text, kExpected);
    }
  }
  if (total > absl::Hours(24 * 366)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": \"", text, "\" is longer than a year"));
  }
  return total;
}

absl::StatusOr<int64_t> ParseMemory(absl::string_view text,
                                    absl::string_view field) {
  constexpr absl::string_view kExpected = "a size such as 512Mi, 16Gi, 2G";
  size_t i = 0;
  while (i < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  double value;
  if (i == 0 || !absl::SimpleAtod(text.substr(0, i), &value) || value < 0)
    return Bad(field, text, kExpected);
  absl::string_view suffix = text.substr(i);
  double scale;
  if (suffix.empty()) {
    scale = 1;
  } else if (suffix == "Ki") {
    scale = 1024.0;
  } else if (suffix == "Mi") {
    scale = 1024.0 * 1024;
  } else if (suffix == "Gi") {
    scale = 1024.0 * 1024 * 1024;
  } else if (suffix == "Ti") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else if (suffix == "K" || suffix == "k") {
    scale = 1e3;
  } else if (suffix == "M") {
    scale = 1e6;
  } else if (suffix == "G") {
    scale = 1e9;
  } else if (suffix == "T") {
    scale = 1e12;
  } else {
    return Bad(field, text, kExpected);
  }
  double bytes = value * scale;
  if (bytes > 9e18) return Bad(field, text, "a size below 8 EiB");
  return static_cast<int64_t>(std::llround(bytes));
}

absl::StatusOr<std::string> ParseMoney(absl::string_view text,
                                       absl::string_view field) {
  constexpr absl::string_view kExpected = "a decimal amount such as 25.00";
  size_t dot = text.find('.');
  absl::string_view whole = text.substr(0, dot);
  absl::string_view frac =
      dot == absl::string_view::npos ? "" : text.substr(dot + 1);
  auto digits = [](absl::string_view s) {
    for (char c : s)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
  };
  if (whole.empty() || !digits(whole) || !digits(frac) || frac.size() > 6 ||
      whole.size() > 12 || (dot != absl::string_view::npos && frac.empty()))
    return Bad(field, text, kExpected);
  size_t nz = whole.find_first_not_of('0');
  std::string canonical(nz == absl::string_view::npos ? "0" : whole.substr(nz));
  if (!frac.empty()) absl::StrAppend(&canonical, ".", frac);
  return canonical;
}

std::string HumanDuration(absl::Duration d) {
  if (d < absl::ZeroDuration()) d = absl::ZeroDuration();
  int64_t s = absl::ToInt64Seconds(d);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  return absl::StrFormat("%dd%dh", s / 86400, (s % 86400) / 3600);
}

std::string HumanMemory(int64_t bytes) {
  const char* units[] = {"", "Ki", "Mi", "Gi", "Ti"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return absl::StrCat(bytes);
  return std::fabs(v - std::round(v)) < 0.05
             ? absl::StrFormat("%.0f%s", v, units[u])
             : absl::StrFormat("%.1f%s", v, units[u]);
}

}  // namespace tupa

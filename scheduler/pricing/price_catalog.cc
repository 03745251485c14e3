#include "scheduler/pricing/price_catalog.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/yaml_fields.h"

namespace tupa::pricing {
namespace {

using yaml::CheckKeys;
using yaml::ExpectSequence;
using yaml::FieldError;
using yaml::Index;
using yaml::Join;
using yaml::NonEmpty;
using yaml::Path;
using yaml::Scalar;

// Per-GPU-hour prices above this are surely typos, and keeping them bounded
// keeps the cost integral inside 128 bits (see cost.cc).
constexpr int64_t kMaxPerGpuHour = 1000000;

absl::StatusOr<std::array<bool, 7>> ParseDays(const YAML::Node& node,
                                              const Path& path) {
  static constexpr absl::string_view kNames[7] = {"mon", "tue", "wed", "thu",
                                                  "fri", "sat", "sun"};
  RETURN_IF_ERROR(ExpectSequence(node, path));
  if (node.size() == 0) return FieldError(path, "must name at least one day");
  std::array<bool, 7> days{};
  for (size_t i = 0; i < node.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s, Scalar(node[i], Index(path, i)));
    std::string lower = absl::AsciiStrToLower(s);
    auto it = std::find(std::begin(kNames), std::end(kNames), lower);
    if (it == std::end(kNames)) {
      return FieldError(Index(path, i),
                        absl::StrCat("bad day \"", s,
                                     "\" (expected mon, tue, wed, thu, fri, "
                                     "sat or sun)"));
    }
    size_t d = static_cast<size_t>(it - std::begin(kNames));
    if (days[d])
      return FieldError(Index(path, i), absl::StrCat("\"", s, "\" repeated"));
    days[d] = true;
  }
  return days;
}

// "HH:MM" -> minute of the day, or -1. Accepts 24:00 only when `is_end`.
int ParseClock(absl::string_view s, bool is_end) {
  if (s.size() != 5 || s[2] != ':') return -1;
  for (int i : {0, 1, 3, 4})
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
  int h = (s[0] - '0') * 10 + (s[1] - '0');
  int m = (s[3] - '0') * 10 + (s[4] - '0');
  if (m > 59) return -1;
  if (h == 24 && m == 0 && is_end) return 24 * 60;
  if (h > 23) return -1;
  return h * 60 + m;
}

absl::Status ParseHours(const YAML::Node& node, const Path& path,
                        OffPeakWindow* w) {
  ASSIGN_OR_RETURN(std::string s, Scalar(node, path));
  size_t dash = s.find('-');
  int start = dash == std::string::npos
                  ? -1
                  : ParseClock(absl::string_view(s).substr(0, dash), false);
  int end = dash == std::string::npos
                ? -1
                : ParseClock(absl::string_view(s).substr(dash + 1), true);
  if (start < 0 || end < 0) {
    return FieldError(path, absl::StrCat("bad hours \"", s,
                                         "\" (expected HH:MM-HH:MM such as "
                                         "22:00-06:00 or 00:00-24:00)"));
  }
  if (start == end) {
    return FieldError(path, absl::StrCat("empty window \"", s,
                                         "\" (use 00:00-24:00 for the "
                                         "whole day)"));
  }
  w->start_minute = start;
  w->end_minute = end;
  return absl::OkStatus();
}

// A decimal fraction in [0, 1) -> parts per million.
absl::StatusOr<int64_t> ParseDiscount(const YAML::Node& node,
                                      const Path& path) {
  ASSIGN_OR_RETURN(std::string s, Scalar(node, path));
  ASSIGN_OR_RETURN(Money m, Money::Parse(s, path));
  if (m >= Money::FromUnits(1)) {
    return FieldError(path, absl::StrCat("discount ", s,
                                         " must be below 1 (a fraction: "
                                         "0.30 is 30% off)"));
  }
  return static_cast<int64_t>(m.nanos() / (Money::kNanosPerUnit / kPpm));
}

absl::StatusOr<OffPeakWindow> ParseWindow(const YAML::Node& node,
                                          const Path& path) {
  RETURN_IF_ERROR(
      CheckKeys(node, path, {"days", "hours", "timezone", "discount"}));
  OffPeakWindow w;
  w.days.fill(true);
  if (node["days"]) {
    ASSIGN_OR_RETURN(w.days, ParseDays(node["days"], Join(path, "days")));
  }
  for (const char* key : {"hours", "timezone", "discount"}) {
    if (!node[key]) return FieldError(Join(path, key), "required");
  }
  RETURN_IF_ERROR(ParseHours(node["hours"], Join(path, "hours"), &w));
  ASSIGN_OR_RETURN(w.timezone_name,
                   NonEmpty(node["timezone"], Join(path, "timezone")));
  if (!absl::LoadTimeZone(w.timezone_name, &w.timezone)) {
    return FieldError(Join(path, "timezone"),
                      absl::StrCat("unknown time zone \"", w.timezone_name,
                                   "\" (expected an IANA name such as "
                                   "America/Sao_Paulo)"));
  }
  ASSIGN_OR_RETURN(w.discount_ppm,
                   ParseDiscount(node["discount"], Join(path, "discount")));
  return w;
}

absl::StatusOr<PriceEntry> ParseEntry(const YAML::Node& node,
                                      const Path& path) {
  RETURN_IF_ERROR(CheckKeys(
      node, path,
      {"region", "gpu_type", "offering", "per_gpu_hour", "off_peak"}));
  PriceEntry e;
  if (node["region"]) {
    ASSIGN_OR_RETURN(e.region, NonEmpty(node["region"], Join(path, "region")));
  }
  if (node["gpu_type"]) {
    ASSIGN_OR_RETURN(e.gpu_type,
                     NonEmpty(node["gpu_type"], Join(path, "gpu_type")));
  }
  if (node["offering"]) {
    ASSIGN_OR_RETURN(e.offering,
                     NonEmpty(node["offering"], Join(path, "offering")));
  }
  Path price_path = Join(path, "per_gpu_hour");
  if (!node["per_gpu_hour"]) return FieldError(price_path, "required");
  ASSIGN_OR_RETURN(std::string price, Scalar(node["per_gpu_hour"], price_path));
  ASSIGN_OR_RETURN(e.per_gpu_hour, Money::Parse(price, price_path));
  if (e.per_gpu_hour > Money::FromUnits(kMaxPerGpuHour)) {
    return FieldError(price_path,
                      absl::StrCat(price, " is above the limit of ",
                                   kMaxPerGpuHour, " per GPU-hour"));
  }
  if (node["off_peak"]) {
    Path wp = Join(path, "off_peak");
    RETURN_IF_ERROR(ExpectSequence(node["off_peak"], wp));
    for (size_t i = 0; i < node["off_peak"].size(); ++i) {
      ASSIGN_OR_RETURN(OffPeakWindow w,
                       ParseWindow(node["off_peak"][i], Index(wp, i)));
      e.off_peak.push_back(std::move(w));
    }
  }
  return e;
}

absl::StatusOr<TeamBudget> ParseBudget(const YAML::Node& node,
                                       const Path& path) {
  RETURN_IF_ERROR(CheckKeys(node, path, {"team", "monthly"}));
  TeamBudget b;
  if (!node["team"]) return FieldError(Join(path, "team"), "required");
  ASSIGN_OR_RETURN(b.team, NonEmpty(node["team"], Join(path, "team")));
  if (!node["monthly"]) return FieldError(Join(path, "monthly"), "required");
  ASSIGN_OR_RETURN(std::string s,
                   Scalar(node["monthly"], Join(path, "monthly")));
  ASSIGN_OR_RETURN(b.monthly, Money::Parse(s, Join(path, "monthly")));
  return b;
}

bool MatchField(const std::string& pattern, absl::string_view value) {
  return pattern == kWildcard || (!value.empty() && pattern == value);
}

}  // namespace

absl::StatusOr<PriceCatalog> PriceCatalog::FromNode(const YAML::Node& node,
                                                    absl::string_view path_in) {
  const Path path(path_in);
  try {
    RETURN_IF_ERROR(CheckKeys(
        node, path, {"currency", "prices", "budgets", "budget_action"}));
    PriceCatalog c;
    Path cur = Join(path, "currency");
    if (!node["currency"]) return FieldError(cur, "required");
    ASSIGN_OR_RETURN(c.currency_, Scalar(node["currency"], cur));
    if (c.currency_.size() != 3 ||
        !std::all_of(c.currency_.begin(), c.currency_.end(),
                     [](char ch) { return ch >= 'A' && ch <= 'Z'; })) {
      return FieldError(cur, absl::StrCat("bad currency \"", c.currency_,
                                          "\" (expected an ISO 4217 code "
                                          "such as USD or BRL)"));
    }

    Path pp = Join(path, "prices");
    if (!node["prices"]) return FieldError(pp, "required");
    RETURN_IF_ERROR(ExpectSequence(node["prices"], pp));
    if (node["prices"].size() == 0)
      return FieldError(pp, "must hold at least one entry");
    std::map<std::tuple<std::string, std::string, std::string>, size_t> seen;
    for (size_t i = 0; i < node["prices"].size(); ++i) {
      ASSIGN_OR_RETURN(PriceEntry e,
                       ParseEntry(node["prices"][i], Index(pp, i)));
      auto [it, inserted] =
          seen.emplace(std::make_tuple(e.region, e.gpu_type, e.offering), i);
      if (!inserted) {
        return FieldError(Index(pp, i),
                          absl::StrCat("same region, gpu_type and offering as ",
                                       Index(pp, it->second)));
      }
      c.entries_.push_back(std::move(e));
    }

    if (node["budgets"]) {
      Path bp = Join(path, "budgets");
      RETURN_IF_ERROR(ExpectSequence(node["budgets"], bp));
      for (size_t i = 0; i < node["budgets"].size(); ++i) {
        ASSIGN_OR_RETURN(TeamBudget b,
                         ParseBudget(node["budgets"][i], Index(bp, i)));
        if (c.MonthlyBudget(b.team).has_value()) {
          return FieldError(Join(Index(bp, i), "team"),
                            absl::StrCat("team \"", b.team, "\" repeated"));
        }
        c.budgets_.push_back(std::move(b));
      }
    }

    if (node["budget_action"]) {
      Path ap = Join(path, "budget_action");
      ASSIGN_OR_RETURN(std::string a, Scalar(node["budget_action"], ap));
      if (a == "reject") {
        c.budget_action_ = BudgetAction::kReject;
      } else if (a == "hold") {
        c.budget_action_ = BudgetAction::kHold;
      } else {
        return FieldError(ap, absl::StrCat("bad value \"", a,
                                           "\" (expected reject or hold)"));
      }
    }
    return c;
  } catch (const YAML::Exception& e) {
    return FieldError(path, e.what());
  }
}

absl::StatusOr<PriceCatalog> PriceCatalog::Parse(absl::string_view yaml_text,
                                                 absl::string_view path) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return FieldError(std::string(path), e.what());
  }
  return FromNode(root, path);
}

absl::StatusOr<PriceEntry> PriceCatalog::Lookup(
    absl::string_view region, absl::string_view gpu_type,
    absl::string_view offering) const {
  const PriceEntry* best = nullptr;
  int best_score = -1;
  for (const PriceEntry& e : entries_) {
    if (!MatchField(e.region, region) || !MatchField(e.gpu_type, gpu_type) ||
        !MatchField(e.offering, offering)) {
      continue;
    }
    // Exact region outweighs everything after it, and so on.
    int score = (e.region != kWildcard ? 4 : 0) +
                (e.gpu_type != kWildcard ? 2 : 0) +
                (e.offering != kWildcard ? 1 : 0);
    if (score > best_score) {
      best = &e;
      best_score = score;
    }
  }
  if (best == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "no price for region \"", region, "\", gpu_type \"", gpu_type,
        "\", offering \"", offering,
        "\" in the pricing catalog (add an entry or a \"*\" wildcard)"));
  }
  return *best;
}

std::optional<Money> PriceCatalog::MonthlyBudget(absl::string_view team) const {
  for (const TeamBudget& b : budgets_)
    if (b.team == team) return b.monthly;
  return std::nullopt;
}

}  // namespace tupa::pricing

// PriceCatalog: what one GPU-hour costs per region x GPU type x offering,
// with off-peak discount windows, plus team budgets. Parsed from the
// `pricing:` YAML (scheduler config or `--pricing FILE`):
//
//   currency: USD                       # required, ISO 4217 (3 letters)
//   prices:                             # required, at least one entry
//     - region: sa-east-1               # default "*"
//       gpu_type: A100-80GB             # default "*"
//       offering: on-demand             # default "*"
//       per_gpu_hour: 2.90              # required, 0 <= x <= 1000000
//       off_peak:                       # optional
//         - days: [mon, tue, wed, thu, fri]   # default: every day
//           hours: "22:00-06:00"        # required, HH:MM-HH:MM
//           timezone: America/Sao_Paulo # required, IANA name
//           discount: 0.30              # required, 0 <= x < 1
//   budgets: [{team: vision, monthly: 500.00}]   # optional
//   budget_action: reject               # reject (default) | hold
//
// Off-peak windows: `days` are the days on which a window OPENS, in its own
// time zone; "22:00-06:00" on fri runs from Friday 22:00 to Saturday 06:00.
// An end at or before the start wraps past midnight; "00:00-24:00" is the
// whole day; 24:00 is allowed only as an end; start == end is refused.
// Where windows overlap, the largest discount applies (never the sum).
//
// Matching (Lookup): a field matches when it equals the query exactly
// (case-sensitive) or is "*". Among matching entries the most specific wins,
// compared field by field in the order region, gpu_type, offering: an exact
// region beats a wildcard region whatever the other fields are; then an
// exact gpu_type; then an exact offering. Two entries with the same three
// fields are refused at parse time, so the winner is unique.
//
// Parsing is strict: unknown keys, wrong shapes, bad values all give
// InvalidArgument naming the full field path, e.g.
// "pricing.prices[2].off_peak[0].hours: ...". Time zones come from the
// system tz database (absl::LoadTimeZone).
//
// Immutable after parsing; safe to share between threads.
#ifndef TUPA_SCHEDULER_PRICING_PRICE_CATALOG_H_
#define TUPA_SCHEDULER_PRICING_PRICE_CATALOG_H_

#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "scheduler/pricing/money.h"

namespace tupa::pricing {

inline constexpr absl::string_view kWildcard = "*";
// Discounts are held exactly, in parts per million (0.30 -> 300000).
inline constexpr int64_t kPpm = 1000000;

struct OffPeakWindow {
  // Indexed like absl::Weekday: [0] = Monday ... [6] = Sunday.
  std::array<bool, 7> days{};
  int start_minute = 0;  // minute of the day it opens, 0..1439
  int end_minute = 0;    // 1..1440; <= start_minute means the next day
  std::string timezone_name;
  absl::TimeZone timezone;
  int64_t discount_ppm = 0;  // 0 <= discount_ppm < kPpm
};

struct PriceEntry {
  std::string region = std::string(kWildcard);
  std::string gpu_type = std::string(kWildcard);
  std::string offering = std::string(kWildcard);
  Money per_gpu_hour;
  std::vector<OffPeakWindow> off_peak;
};

struct TeamBudget {
  std::string team;
  Money monthly;
};

enum class BudgetAction { kReject, kHold };

class PriceCatalog {
 public:
  // Parses a whole pricing document (the text of `--pricing FILE`). Error
  // paths start with `path` ("pricing" by default).
  static absl::StatusOr<PriceCatalog> Parse(absl::string_view yaml_text,
                                            absl::string_view path = "pricing");
  // Parses an already loaded node, e.g. the `pricing:` key of the scheduler
  // config; `path` prefixes the error paths.
  static absl::StatusOr<PriceCatalog> FromNode(const YAML::Node& node,
                                               absl::string_view path);

  // The most specific entry matching the three values (see the file
  // comment), returned by value. NotFound, naming the three values, when no
  // entry, not even a "*" one, matches. An empty value matches only "*".
  absl::StatusOr<PriceEntry> Lookup(absl::string_view region,
                                    absl::string_view gpu_type,
                                    absl::string_view offering) const;

  // The team's monthly budget, or nullopt when the team has none (no limit).
  std::optional<Money> MonthlyBudget(absl::string_view team) const;

  const std::string& currency() const { return currency_; }
  const std::vector<PriceEntry>& entries() const { return entries_; }
  const std::vector<TeamBudget>& budgets() const { return budgets_; }
  BudgetAction budget_action() const { return budget_action_; }

 private:
  std::string currency_;
  std::vector<PriceEntry> entries_;
  std::vector<TeamBudget> budgets_;
  BudgetAction budget_action_ = BudgetAction::kReject;
};

}  // namespace tupa::pricing

#endif  // TUPA_SCHEDULER_PRICING_PRICE_CATALOG_H_

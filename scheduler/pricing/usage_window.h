// The part of a span of priced usage (an allocation, or a worker's uptime)
// that a cost report's window [since, until) counts.
//
// A span that crosses the window's bounds counts only its time inside; by
// day, each UTC day gets its own piece. A billed span (closed, its cost
// stored) keeps its billed total: a piece gets the billed cost times its
// share of the span's cost under the price schedule (so off-peak hours stay
// cheaper), or of its duration when the schedule cannot price it (a catalog
// that changed since). An unbilled span (still running) is priced from the
// schedule. Pure and thread-safe.
#ifndef TUPA_SCHEDULER_PRICING_USAGE_WINDOW_H_
#define TUPA_SCHEDULER_PRICING_USAGE_WINDOW_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/pricing/money.h"
#include "scheduler/pricing/price_catalog.h"

namespace tupa::pricing {

struct UsageSpan {
  absl::Time start;
  absl::Time end;  // for a running span: now
  double gpus = 0;
  std::optional<Money> billed;      // the stored cost of a closed span
  std::optional<PriceEntry> price;  // the catalog's entry for it, if any
};

struct UsagePiece {
  std::string day;  // YYYY-MM-DD (UTC) when split by day, else ""
  double gpu_seconds = 0;
  Money cost;
};

// The pieces of `span` inside [since, until): none, one, or one per UTC
// day when `by_day`. Pieces of zero length are left out.
std::vector<UsagePiece> ClipUsage(const UsageSpan& span, absl::Time since,
                                  absl::Time until, bool by_day);

}  // namespace tupa::pricing

#endif  // TUPA_SCHEDULER_PRICING_USAGE_WINDOW_H_

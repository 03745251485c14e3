// The price of GPU time as a function of time, and its exact integral.
//
// price(t) = entry.per_gpu_hour x (1 - d(t)), where d(t) is the LARGEST
// discount among the entry's off-peak windows open at t (0 when none).
// Windows are evaluated in their own time zone with absl civil time, so
// they follow DST: a window "00:00-24:00" on the day clocks spring forward
// lasts 23 real hours. A window edge that falls on a civil time skipped by
// DST maps to the instant absl::FromCivil gives (the earlier offset: 02:30
// on a spring-forward day is 03:30 local); a repeated civil time maps to
// its first occurrence.
//
// Exactness: instants are taken at microsecond resolution (floored, like
// PostgreSQL timestamptz); `gpus` is taken in millionths of a GPU (rounded
// to nearest), so 0.25 or 0.125 are exact. The integral is summed exactly
// in integers over the pieces between window edges, then rounded ONCE, half
// to even, to one nano-unit (see money.h). Cost over [a, c) and the sum of
// Cost over [a, b) and [b, c) can therefore differ by at most 1 nano-unit;
// in aggregates, sum the stored per-interval costs.
//
// All functions are pure (no clock; time is a parameter) and thread-safe.
#ifndef TUPA_SCHEDULER_PRICING_COST_H_
#define TUPA_SCHEDULER_PRICING_COST_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/pricing/money.h"
#include "scheduler/pricing/price_catalog.h"

namespace tupa::pricing {

// Largest accepted interval and GPU count; beyond them the integral could
// leave 128 bits.
inline constexpr absl::Duration kMaxCostInterval = absl::Hours(24 * 366 * 100);
inline constexpr double kMaxGpus = 1e6;

// gpus x the integral of price(t) over [start, end). Zero when start == end.
// InvalidArgument when end < start, either end is infinite, the interval is
// longer than kMaxCostInterval, or gpus is NaN, negative or above kMaxGpus.
absl::StatusOr<Money> Cost(const PriceEntry& entry, double gpus,
                           absl::Time start, absl::Time end);

// Cost(entry, gpus, start, start + duration): what a job holding `gpus` for
// `duration` (e.g. its max_runtime) from `start` will cost.
absl::StatusOr<Money> Estimate(const PriceEntry& entry, double gpus,
                               absl::Time start, absl::Duration duration);

// price(t) per GPU-hour, rounded half to even to a nano-unit (it is exact
// unless the discount has more than 3 decimals). Cost does not use it.
Money PriceAt(const PriceEntry& entry, absl::Time t);

// The first instant after t at which price() differs from price(t), or
// absl::InfiniteFuture() when the price never changes (no windows, or
// windows that together cover all time with one discount). Window edges
// are whole seconds; t itself is floored to a microsecond.
absl::Time NextPriceChange(const PriceEntry& entry, absl::Time t);

// price(t) per GPU-hour at `from` and at each change in [from, from +
// horizon), as (instant, price) pairs: the idle cost rule's
// WorkerInfo::price_steps.
std::vector<std::pair<absl::Time, double>> PriceSteps(const PriceEntry& entry,
                                                      absl::Time from,
                                                      absl::Duration horizon);

namespace internal {

// The exact per-GPU integral of price over [start_us, end_us), in units of
// 1e-9 currency x 1e-6 (discount ppm) x 1 microsecond / hour; i.e.
// Cost = round(result x micro_gpus / (1e6 x 3.6e9 x 1e6)). Requires
// start_us <= end_us within kMaxCostInterval. Exposed for tests.
__int128 PriceIntegral(const PriceEntry& entry, int64_t start_us,
                       int64_t end_us);

// Integrand of PriceIntegral at one microsecond: per_gpu_hour nanos x
// (1e6 - ppm of the largest open discount).
__int128 RateAt(const PriceEntry& entry, int64_t t_us);

}  // namespace internal
}  // namespace tupa::pricing

#endif  // TUPA_SCHEDULER_PRICING_COST_H_

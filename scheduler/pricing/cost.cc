#include "scheduler/pricing/cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"

namespace tupa::pricing {
namespace {

constexpr int64_t kMicrosPerHour = int64_t{3600} * 1000000;
constexpr int64_t kMicroGpusPerGpu = 1000000;
// Cost nanos = integral x micro_gpus / kDenominator.
constexpr __int128 kDenominator =
    static_cast<__int128>(kPpm) * kMicrosPerHour * kMicroGpusPerGpu;
// Windows recur weekly, so any price change shows up within this horizon.
constexpr int64_t kChangeHorizonUs = int64_t{15} * 24 * kMicrosPerHour;

// A discount edge: at `t_us` a window with `ppm` opens (+1) or closes (-1).
struct Edge {
  int64_t t_us;
  int64_t ppm;
  int delta;
};

// Edges of every off-peak window of `entry` that overlaps [from_us, to_us),
// clipped to that range and sorted by time.
std::vector<Edge> WindowEdges(const PriceEntry& entry, int64_t from_us,
                              int64_t to_us) {
  std::vector<Edge> edges;
  if (from_us >= to_us) return edges;
  for (const OffPeakWindow& w : entry.off_peak) {
    // A window opened the day before `from` may still be open.
    absl::CivilDay first =
        absl::ToCivilDay(absl::FromUnixMicros(from_us), w.timezone) - 1;
    absl::CivilDay last =
        absl::ToCivilDay(absl::FromUnixMicros(to_us - 1), w.timezone);
    for (absl::CivilDay d = first; d <= last; ++d) {
      if (!w.days[static_cast<int>(absl::GetWeekday(d))]) continue;
      absl::CivilSecond open_cs = absl::CivilSecond(d) + w.start_minute * 60;
      absl::CivilSecond close_cs =
          w.end_minute > w.start_minute
              ? absl::CivilSecond(d) + w.end_minute * 60
              : absl::CivilSecond(d + 1) + w.end_minute * 60;
      int64_t open = absl::ToUnixMicros(absl::FromCivil(open_cs, w.timezone));
      int64_t close = absl::ToUnixMicros(absl::FromCivil(close_cs, w.timezone));
      open = std::max(open, from_us);
      close = std::min(close, to_us);
      if (open >= close) continue;
      edges.push_back({open, w.discount_ppm, +1});
      edges.push_back({close, w.discount_ppm, -1});
    }
  }
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return a.t_us < b.t_us; });
  return edges;
}

// The open discounts while sweeping edges; the largest one applies.
class OpenDiscounts {
 public:
  void Apply(const Edge& e) {
    if (e.delta > 0) {
      ++count_[e.ppm];
    } else if (--count_[e.ppm] == 0) {
      count_.erase(e.ppm);
    }
  }
  int64_t Max() const { return count_.empty() ? 0 : count_.rbegin()->first; }

 private:
  std::map<int64_t, int> count_;
};

__int128 Rate(const PriceEntry& entry, int64_t ppm) {
  return entry.per_gpu_hour.nanos() * (kPpm - ppm);
}

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("cost: ", what));
}

}  // namespace

namespace internal {

__int128 PriceIntegral(const PriceEntry& entry, int64_t start_us,
                       int64_t end_us) {
  std::vector<Edge> edges = WindowEdges(entry, start_us, end_us);
  OpenDiscounts open;
  __int128 sum = 0;
  int64_t cursor = start_us;
  for (const Edge& e : edges) {
    sum += Rate(entry, open.Max()) * (e.t_us - cursor);
    cursor = e.t_us;
    open.Apply(e);
  }
  sum += Rate(entry, open.Max()) * (end_us - cursor);
  return sum;
}

__int128 RateAt(const PriceEntry& entry, int64_t t_us) {
  OpenDiscounts open;
  for (const Edge& e : WindowEdges(entry, t_us, t_us + 1)) {
    if (e.delta > 0) open.Apply(e);
  }
  return Rate(entry, open.Max());
}

}  // namespace internal

absl::StatusOr<Money> Cost(const PriceEntry& entry, double gpus,
                           absl::Time start, absl::Time end) {
  if (start == absl::InfinitePast() || start == absl::InfiniteFuture() ||
      end == absl::InfinitePast() || end == absl::InfiniteFuture()) {
    return Invalid("interval must be finite");
  }
  if (end < start) {
    return Invalid(absl::StrCat("end ", absl::FormatTime(end),
                                " is before start ", absl::FormatTime(start)));
  }
  if (end - start > kMaxCostInterval) return Invalid("interval is too long");
  if (!(gpus >= 0 && gpus <= kMaxGpus)) {
    return Invalid(
        absl::StrCat("gpus must be between 0 and ", kMaxGpus, ", got ", gpus));
  }
  const __int128 micro_gpus =
      std::llround(gpus * static_cast<double>(kMicroGpusPerGpu));
  const __int128 integral = internal::PriceIntegral(
      entry, absl::ToUnixMicros(start), absl::ToUnixMicros(end));
  // integral x micro_gpus can exceed 128 bits, so divide in two steps:
  // integral = q x D + r, then (q x D + r) x g / D = q x g + r x g / D.
  const __int128 q = integral / kDenominator;
  const __int128 r = integral % kDenominator;
  const __int128 rg = r * micro_gpus;
  __int128 nanos = q * micro_gpus + rg / kDenominator;
  const __int128 rem = rg % kDenominator;
  const __int128 rest = kDenominator - rem;
  if (rem > rest || (rem == rest && (nanos & 1) != 0)) ++nanos;
  return Money::FromNanos(nanos);
}

absl::StatusOr<Money> Estimate(const PriceEntry& entry, double gpus,
                               absl::Time start, absl::Duration duration) {
  return Cost(entry, gpus, start, start + duration);
}

Money PriceAt(const PriceEntry& entry, absl::Time t) {
  return Money::FromRatio(internal::RateAt(entry, absl::ToUnixMicros(t)), kPpm);
}

absl::Time NextPriceChange(const PriceEntry& entry, absl::Time t) {
  if (entry.off_peak.empty() || t == absl::InfiniteFuture())
    return absl::InfiniteFuture();
  const int64_t from = absl::ToUnixMicros(t);
  std::vector<Edge> edges = WindowEdges(entry, from, from + kChangeHorizonUs);
  OpenDiscounts open;
  size_t i = 0;
  // Windows already open at t.
  for (; i < edges.size() && edges[i].t_us == from; ++i) open.Apply(edges[i]);
  const int64_t now_ppm = open.Max();
  while (i < edges.size()) {
    const int64_t at = edges[i].t_us;
    // The horizon edge is only the clip, not a real change.
    if (at >= from + kChangeHorizonUs) break;
    for (; i < edges.size() && edges[i].t_us == at; ++i) open.Apply(edges[i]);
    if (open.Max() != now_ppm) return absl::FromUnixMicros(at);
  }
  return absl::InfiniteFuture();
}

std::vector<std::pair<absl::Time, double>> PriceSteps(const PriceEntry& entry,
                                                      absl::Time from,
                                                      absl::Duration horizon) {
  std::vector<std::pair<absl::Time, double>> steps;
  const absl::Time end = from + horizon;
  for (absl::Time t = from; t < end; t = NextPriceChange(entry, t)) {
    steps.emplace_back(t, PriceAt(entry, t).ToDouble());
  }
  return steps;
}

}  // namespace tupa::pricing

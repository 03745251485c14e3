#include "scheduler/pricing/usage_window.h"

#include <algorithm>

#include "absl/time/civil_time.h"
#include "scheduler/pricing/cost.h"

namespace tupa::pricing {
namespace {

// `total` x part / whole, rounded half to even; whole > 0.
Money Share(Money total, __int128 part, __int128 whole) {
  return Money::FromRatio(total.nanos() * part, whole);
}

// The cost of [from, to) within `span`.
Money PieceCost(const UsageSpan& span, absl::Time from, absl::Time to) {
  std::optional<Money> piece, whole;
  if (span.price) {
    auto p = Cost(*span.price, span.gpus, from, to);
    if (p.ok()) piece = *p;
    if (span.billed) {
      auto w = Cost(*span.price, span.gpus, span.start, span.end);
      if (w.ok()) whole = *w;
    }
  }
  if (!span.billed) return piece.value_or(Money());
  if (from == span.start && to == span.end) return *span.billed;
  if (piece && whole && whole->nanos() > 0)
    return Share(*span.billed, piece->nanos(), whole->nanos());
  const int64_t span_us = absl::ToInt64Microseconds(span.end - span.start);
  if (span_us <= 0) return Money();
  return Share(*span.billed, absl::ToInt64Microseconds(to - from), span_us);
}

}  // namespace

std::vector<UsagePiece> ClipUsage(const UsageSpan& span, absl::Time since,
                                  absl::Time until, bool by_day) {
  std::vector<UsagePiece> out;
  const absl::Time from = std::max(span.start, since);
  const absl::Time to = std::min(span.end, until);
  if (from >= to) return out;
  const absl::TimeZone utc = absl::UTCTimeZone();
  absl::Time a = from;
  while (a < to) {
    absl::Time b = to;
    std::string day;
    if (by_day) {
      const absl::CivilDay civil = absl::ToCivilDay(a, utc);
      b = std::min(to, absl::FromCivil(civil + 1, utc));
      day = absl::FormatCivilTime(civil);
    }
    UsagePiece piece;
    piece.day = std::move(day);
    piece.gpu_seconds = span.gpus * absl::ToDoubleSeconds(b - a);
    piece.cost = PieceCost(span, a, b);
    out.push_back(std::move(piece));
    a = b;
  }
  return out;
}

}  // namespace tupa::pricing

// Parsing and printing of the quantities users type: durations ("90s",
// "2h", "1h30m", "1d"), memory sizes ("16Gi", "512Mi", "2G", "1024") and
// decimal money ("25.00"). Pure functions; thread-safe.
#ifndef TUPA_COMMON_QUANTITY_H_
#define TUPA_COMMON_QUANTITY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tupa {

// Accepts a sequence of <number><unit> with units ms, s, m, h, d (e.g.
// "1h30m"). Returns InvalidArgument naming `field` on anything else.
absl::StatusOr<absl::Duration> ParseDuration(absl::string_view text,
                                             absl::string_view field);

// Accepts an integer or decimal with an optional suffix: Ki Mi Gi Ti
// (powers of 1024) or K M G T (powers of 1000). Returns bytes.
absl::StatusOr<int64_t> ParseMemory(absl::string_view text,
                                    absl::string_view field);

// Accepts a non-negative decimal with at most 6 fractional digits.
// Returns the canonical text (no exponent, no sign).
absl::StatusOr<std::string> ParseMoney(absl::string_view text,
                                       absl::string_view field);

// "3s", "4m12s", "2h05m", "3d4h": short and human.
std::string HumanDuration(absl::Duration d);
// "512Mi", "16Gi".
std::string HumanMemory(int64_t bytes);

}  // namespace tupa

#endif  // TUPA_COMMON_QUANTITY_H_

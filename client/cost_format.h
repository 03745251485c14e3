// `tupa cost` and `tupa estimate`: parsing their flags and rendering the
// scheduler's CostReport and EstimateJobResponse as tables. Money stays the
// scheduler's exact decimal strings until a table rounds it (money.h).
// Pure; thread-safe.
#ifndef TUPA_CLIENT_COST_FORMAT_H_
#define TUPA_CLIENT_COST_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tupa/v1/job_service.pb.h"

namespace tupa::client {

// `--by`: team, user, gpu-type, region, day, job or array, in any case
// ("gpu_type" is accepted for gpu-type). Returns the canonical name.
// InvalidArgument naming --by otherwise.
absl::StatusOr<std::string> ParseCostGroup(absl::string_view text);

// `--since` / `--until`: a duration ("7d", "36h") means that long before
// `now`; a date ("2026-11-01") is that day's midnight UTC; an RFC 3339 time
// ("2026-11-01T08:00:00Z", "2026-11-01T08:00:00-03:00") is that instant.
// InvalidArgument naming `flag` otherwise.
absl::StatusOr<absl::Time> ParseTimeBound(absl::string_view text,
                                          absl::string_view flag,
                                          absl::Time now);

// The `cost` table: a header line "cost by team, 2026-11-25 .. 2026-12-02
// (USD)", then KEY GPU-HOURS COST SHARE, one row per group in the order
// sent, a TOTAL row and an IDLE row (paid but unallocated GPU time).
// SHARE is the group's part of TOTAL.
std::string RenderCostReport(const v1::CostReport& report);

// The `estimate` table: REGION GPU-TYPE OFFERING PRICE/GPU-H COST DURATION
// FINISH BASIS FITS-NOW, in the order sent (the scheduler sends the
// cheapest first). FINISH is relative to `now` ("in 2h05m").
std::string RenderEstimates(const v1::EstimateJobResponse& response,
                            absl::Time now);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_COST_FORMAT_H_

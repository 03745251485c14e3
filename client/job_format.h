// How jobs look in the CLI's tables and `get` blocks, and how users name
// job states on the command line. Pure; thread-safe.
#ifndef TUPA_CLIENT_JOB_FORMAT_H_
#define TUPA_CLIENT_JOB_FORMAT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tupa/v1/job.pb.h"

namespace tupa::client {

// "RUNNING" for JOB_STATE_RUNNING.
std::string JobStateName(v1::JobState state);

// True for SUCCEEDED, FAILED and CANCELLED.
bool IsTerminal(v1::JobState state);

// Parses `--state` values: a comma-separated list of state names in any
// case, with or without the JOB_STATE_ prefix, or a unique prefix of one
// ("run", "succ"); "canceled" is accepted too. Errors name --state.
absl::StatusOr<std::vector<v1::JobState>> ParseJobStates(
    absl::string_view text);

// Parses a JOB argument (a positive integer id). Errors name JOB.
absl::StatusOr<int64_t> ParseJobId(absl::string_view text);

// "2" for a one-node job, "2x4" (GPUs per node x nodes) for a gang.
std::string JobGpus(const v1::JobSpec& spec);

// "step 120 loss 0.4312", "step 500 acc 88.1%", or "" without progress.
std::string JobProgress(const v1::Job& job);

// How long the job has run (runtime) once started, else how long it has
// waited (age). "" when the job has no creation time.
std::string JobAgeOrRuntime(const v1::Job& job, absl::Time now);

// The `list` table: ID NAME USER TEAM STATE ATTEMPT GPUS AGE/RUNTIME COST
// PROGRESS MESSAGE. COST is rounded to cents with the currency, blank
// without a price catalog.
// With `fold_arrays`, the tasks of each job array are one row where its
// first task is listed: ID is the array's id, NAME its lowest index's name
// with "[EXPRESSION]", STATE "ARRAY", COST the tasks' sum, PROGRESS "D/N
// done" and MESSAGE the count of tasks per state (of the tasks listed,
// with "N of SIZE listed" when the list was cut by --limit).
std::string RenderJobsTable(const std::vector<v1::Job>& jobs, absl::Time now,
                            bool fold_arrays = false);

// The exact sum of decimal amounts ("1.25" + "0.000001"); "" when none is
// set. Amounts that are not decimals are skipped.
std::string SumDecimals(const std::vector<std::string>& amounts);

// The `get` block: one "key: value" line per field, placements and
// progress included; pending_reason, gpu_hours and cost when the scheduler
// sent them. Control characters in values are escaped (EscapeControl).
std::string RenderJobDetails(const v1::Job& job, absl::Time now);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_JOB_FORMAT_H_

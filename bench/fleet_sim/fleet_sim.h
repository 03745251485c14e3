// RunFleetSim: one tupa-fleet-sim run against a running scheduler. Connects
// `workers` simulated workers (SimWorker) and waits until all are welcomed,
// then submits the jobs (Submitter) while probing reads (Prober), waits
// until every job completed (or was acknowledged, with submitted_only),
// keeps probing for `hold`, and returns the figures. Blocks the calling
// thread for the whole run.
//
// Errors: InvalidArgument for bad options (mix, record path);
// Unavailable when no worker could connect. A run that hits
// duration_limit is not an error: the report says timed_out.
//
// The simulated workers' streams are cancelled before it returns, but
// gRPC may still be delivering their last callbacks: the process should
// exit soon after (main.cc exits without tearing gRPC down).
#ifndef TUPA_BENCH_FLEET_SIM_FLEET_SIM_H_
#define TUPA_BENCH_FLEET_SIM_FLEET_SIM_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/fleet_sim/options.h"
#include "bench/fleet_sim/report.h"

namespace tupa::fleet_sim {

absl::StatusOr<FleetReport> RunFleetSim(const FleetSimOptions& options);

// Waits until ListWorkers at `scheduler` shows `want` workers up;
// Unavailable after `timeout`.
absl::Status WaitForWorkersUp(const std::string& scheduler, int want,
                              absl::Duration timeout);

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_FLEET_SIM_H_

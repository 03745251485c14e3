// RunReader: the reads of a user outside the fleet, from a process of its
// own (tupa-fleet-sim --reader). The simulator's own Prober shares its
// process, and so gRPC's callback threads, with the thousand simulated
// workers' streams: a read's answer can wait there behind the fleet's
// messages, which a user's `tupa get` on another machine never does. The
// reader runs the same Prober (GetJob of the jobs its ListJobs probes
// return, ListJobs, ListWorkers) and nothing else.
//
// Waits until ListWorkers shows `options.wait_workers` workers up (so that
// it measures the same span as the simulator's prober), then probes until
// `stop` is set (SIGINT/SIGTERM in main.cc) or `options.duration_limit`
// passed. Unavailable when the workers did not come up within
// `options.connect_timeout`; stopped before they did, no samples.
#ifndef TUPA_BENCH_FLEET_SIM_READER_H_
#define TUPA_BENCH_FLEET_SIM_READER_H_

#include <atomic>

#include "absl/status/statusor.h"
#include "bench/fleet_sim/options.h"
#include "bench/fleet_sim/report.h"

namespace tupa::fleet_sim {

absl::StatusOr<ReaderReport> RunReader(const FleetSimOptions& options,
                                       const std::atomic<bool>& stop);

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_READER_H_

// ProcStats: CPU time and resident memory of another process, read from
// /proc/<pid>/stat and /proc/<pid>/status (Linux). NotFound when the
// process is gone. Stateless; thread-safe.
#ifndef TUPA_BENCH_FLEET_SIM_PROC_STATS_H_
#define TUPA_BENCH_FLEET_SIM_PROC_STATS_H_

#include "absl/status/statusor.h"

namespace tupa::fleet_sim {

struct ProcSample {
  double cpu_s = 0;  // user + system, since the process started
  double rss_mb = 0;
};

absl::StatusOr<ProcSample> ReadProcSample(int pid);

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_PROC_STATS_H_

// FleetSimOptions: everything one tupa-fleet-sim run is told, filled from
// flags by main.cc (libraries never read flags). Plain data.
#ifndef TUPA_BENCH_FLEET_SIM_OPTIONS_H_
#define TUPA_BENCH_FLEET_SIM_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace tupa::fleet_sim {

struct FleetSimOptions {
  std::string scheduler = "127.0.0.1:50051";  // host:port
  std::string join_token;  // read from --join-token-file; "" = none

  // The simulated fleet. 0 workers: submit and probe only; completion is
  // then observed by polling GetJob (e.g. against real tupa-worker
  // processes).
  int workers = 100;
  int gpus_per_worker = 8;
  std::string gpu_type = "SIM";
  // Cores of worker i: cpu_per_worker[i % size] (a mixed fleet).
  std::vector<double> cpu_per_worker = {64};
  int64_t memory_bytes_per_worker = int64_t{512} << 30;
  std::string region = "sim";
  std::string worker_prefix = "sim-";  // ids are prefix1 .. prefixN
  // Before submitting, wait until ListWorkers shows this many workers up
  // (e.g. real tupa-worker processes, with workers = 0).
  int wait_workers = 0;
  double progress_hz = 0;  // per running node
  double log_hz = 0;       // per running node

  // The load.
  int jobs = 1000;
  int clients = 32;
  double submit_rate = 0;       // jobs/s over all clients; 0: unpaced
  std::string mix = "default";  // see job_mix.h
  int runtime_min_ms = 2000;
  int runtime_max_ms = 5000;
  int retries = 2;  // JobSpec.retries of every job
  std::string team = "fleet";
  std::string key_prefix;  // idempotency keys are key_prefix + index

  // Reads probed while the load runs: GetJob, ListJobs (limit 100) and
  // ListWorkers, each at probe_hz; each call has probe_deadline.
  double probe_hz = 20;
  absl::Duration probe_deadline = absl::Seconds(10);

  // When the run ends: once every job completed, or (submitted_only) once
  // every job was acknowledged; then probes continue for `hold`. Never
  // later than duration_limit after the first submit.
  bool submitted_only = false;
  absl::Duration hold = absl::ZeroDuration();
  absl::Duration duration_limit = absl::Seconds(600);
  absl::Duration connect_timeout = absl::Seconds(120);

  int scheduler_pid = 0;    // > 0: CPU and RSS read from /proc/<pid>
  std::string record_path;  // "": no per-node record
};

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_OPTIONS_H_

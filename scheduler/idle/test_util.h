// Builders shared by the tupa_idle tests: a fixed clock, workers in pools
// and pending/running jobs with readable defaults.
#ifndef TUPA_SCHEDULER_IDLE_TEST_UTIL_H_
#define TUPA_SCHEDULER_IDLE_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/idle/decide.h"

namespace tupa::scheduler::idle::testing {

inline absl::Time Now() { return absl::FromUnixSeconds(1'700'000'000); }
inline absl::Time Ago(absl::Duration d) { return Now() - d; }

// Idle shutdown on, the timer: idle_after 10m, threshold 0.05, keep_warm 0,
// min_uptime 5m, no grace. Scale-up after 2m, zombies after 30m (flag).
inline IdlePolicy Policy(int keep_warm = 0) {
  IdlePolicy p;
  p.idle_shutdown.enabled = true;
  p.idle_shutdown.kind = IdleShutdownPolicy::Kind::kTimer;
  p.idle_shutdown.keep_warm_default = keep_warm;
  p.scale_up.enabled = true;
  p.zombie_jobs.enabled = true;
  return p;
}

// An UP worker in sa-east-1 with 4 free A100-80GB at 0% activity, up an
// hour, never busy, $2/GPU-hour.
inline WorkerInfo Worker(const std::string& id,
                         const std::string& region = "sa-east-1",
                         const std::string& type = "A100-80GB") {
  WorkerInfo w;
  w.id = id;
  w.region = region;
  w.gpu_type = type;
  w.instance_id = "i-" + id;
  w.joined_at = Ago(absl::Hours(1));
  w.gpus_total = w.gpus_free = 4;
  w.cpu_free = 32;
  w.memory_free = int64_t{256} << 30;
  w.device_activity = {0, 0, 0, 0};
  w.price_per_gpu_hour = 2.0;
  return w;
}

inline WorkerInfo WithJob(WorkerInfo w, int64_t job, int gpus = 1) {
  w.job_ids.push_back(job);
  w.gpus_free -= gpus;
  return w;
}

inline PendingJob Pending(int64_t id, int gpus, std::vector<std::string> types,
                          absl::Duration waited, bool fits = false) {
  PendingJob j;
  j.job_id = id;
  j.gpus_per_node = gpus;
  j.gpu_types = std::move(types);
  j.pending_since = Ago(waited);
  j.fits_live_worker = fits;
  return j;
}

}  // namespace tupa::scheduler::idle::testing

#endif  // TUPA_SCHEDULER_IDLE_TEST_UTIL_H_

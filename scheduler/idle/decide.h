// Decide(): the idle-shutdown, scale-up and zombie-job decisions of one
// scheduling cycle, each with the reason a person reads in `tupa workers`
// and in the events table. Pure: no I/O, no clock, no globals; the same
// inputs give the same decisions, so tupa-sim and the tests drive it.
//
// Rules (DESIGN §5, issue 6):
// - A worker is busy while it holds a job (even one at 0% device activity)
//   or any of its devices is at or above activity_threshold without one.
//   Otherwise it is idle, since it was last busy (or joined).
// - An idle worker is stopped only when it has been idle for idle_after,
//   has been up for min_uptime, no pending job could use it now, it is UP
//   (a DRAINING worker is left to the operator), and stopping it leaves at
//   least keep_warm UP workers in its pool (region x GPU type). Among idle
//   workers of one pool, the longest idle go first.
// - Under the cost rule (the default, cost_rule.h) idle_after is only the
//   longest idle time and keep_warm a floor: the idle workers of a pool
//   that passed the other checks, most recently idle first, are kept
//   (kWarmPays) while the rule says staying up costs less than a restart,
//   and the rest are stopped. Decide() updates each pool's PoolStats.
// - With grace > 0 a stop is first announced (kGrace); a worker that is
//   busy again, or that a pending job could use, before the grace ends is
//   kept and the stop is cancelled. With grace 0 the stop is immediate.
// - A pending job that fits no live worker for scale_up.pending_after asks
//   for capacity once per pending_after (at most once per
//   kMinScaleUpRepeat, so pending_after: 0s does not run the hook on every
//   pass), grouped by pool.
// - A running job whose measured activity stays below activity_threshold
//   for zombie_jobs.after is reported once (flag or cancel).
// Decide() does not act; the caller sends Shutdown, runs hooks, records
// events and keeps Decisions::state for the next call. Thread-compatible.
#ifndef TUPA_SCHEDULER_IDLE_DECIDE_H_
#define TUPA_SCHEDULER_IDLE_DECIDE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "scheduler/idle/policy.h"
#include "scheduler/idle/snapshot.h"

namespace tupa::scheduler::idle {

enum class Verdict {
  kDisabled,        // idle_shutdown is off
  kBusy,            // holds a job or its devices are active
  kIdle,            // idle, not yet for idle_after
  kMinUptime,       // idle long enough but joined too recently
  kPendingJobFits,  // a pending job could use it now
  kKeepWarm,        // the pool's warm minimum
  kWarmPays,        // cost rule: staying up until the next job is cheaper
  kDraining,        // the operator drained it; not ours to stop
  kGrace,           // stop announced, waiting for the grace to end
  kShutdown,        // stop it now (see Decisions::shutdowns)
  kShuttingDown,    // stop already decided in an earlier cycle
};
const char* VerdictName(Verdict v);  // "BUSY", "KEEP_WARM", ...

struct WorkerVerdict {
  std::string worker_id;
  Verdict verdict = Verdict::kBusy;
  std::string reason;  // e.g. "keep_warm: last 1 of pool sa-east-1/A100-80GB"
  absl::Duration idle = absl::ZeroDuration();  // zero while busy
};

struct ShutdownDecision {
  std::string worker_id;
  std::string instance_id;
  std::string region;
  std::string gpu_type;
  std::string reason_code = "IDLE";
  std::string reason;  // "no job and device activity below 0.05 for 12m3s"
  absl::Duration idle;
  double saved_per_hour = 0;  // price_per_gpu_hour x gpus_total
};

struct CancelledShutdown {
  std::string worker_id;
  std::string reason;  // "got job 42 during the shutdown grace"
};

struct ScaleUpRequest {
  std::string region;    // empty: any region
  std::string gpu_type;  // empty: any type
  int gpus_needed = 0;   // sum of gpus_per_node x nodes of its jobs
  std::vector<int64_t> job_ids;
  std::string reason;

  std::string pool() const { return PoolKey(region, gpu_type); }
};

struct ZombieJob {
  int64_t job_id = 0;
  std::vector<std::string> worker_ids;
  ZombieJobPolicy::Action action = ZombieJobPolicy::Action::kFlag;
  absl::Duration low_for;
  std::string reason;
};

struct Decisions {
  std::vector<WorkerVerdict> verdicts;  // one per snapshot worker, in order
  std::vector<ShutdownDecision> shutdowns;
  std::vector<CancelledShutdown> cancelled;
  std::vector<ScaleUpRequest> scale_ups;
  std::vector<ZombieJob> zombies;
  PolicyState state;  // pass to the next call
};

Decisions Decide(const IdlePolicy& policy, const Snapshot& snapshot,
                 const PolicyState& previous, absl::Time now);

// Whether one node's worth of `job` fits on `worker` now: free whole
// devices, GPU type, labels, and CPU/memory when the job asks for them.
bool PendingJobCanUse(const PendingJob& job, const WorkerInfo& worker);

// Whether `job.nodes` live (kUp) workers of `workers` can each take one
// node of `job` now: PendingJob::fits_live_worker.
bool FitsLiveWorkers(const PendingJob& job,
                     const std::vector<WorkerInfo>& workers);

}  // namespace tupa::scheduler::idle

#endif  // TUPA_SCHEDULER_IDLE_DECIDE_H_

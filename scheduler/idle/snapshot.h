// The input of Decide(): what the scheduler knows about its live workers,
// pending and running jobs at one instant, and the state Decide() carried
// over from the previous cycle. Plain values built by the caller; no
// ownership, no I/O. Times are absl::Time supplied by the caller.
#ifndef TUPA_SCHEDULER_IDLE_SNAPSHOT_H_
#define TUPA_SCHEDULER_IDLE_SNAPSHOT_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace tupa::scheduler::idle {

// One live (connected, not lost) worker.
struct WorkerInfo {
  enum class State { kUp, kDraining };

  std::string id;
  std::string region;
  std::string gpu_type;  // the pool is region x gpu_type
  std::string instance_id;
  std::map<std::string, std::string> labels;
  State state = State::kUp;
  absl::Time joined_at = absl::InfinitePast();

  int gpus_total = 0;       // devices
  int gpus_free = 0;        // devices with no allocation
  double cpu_free = 0;      // cores; checked only when a job asks for CPU
  int64_t memory_free = 0;  // bytes; checked only when a job asks for memory

  // Jobs holding an allocation here (ASSIGNED or RUNNING), whatever their
  // device activity: a notebook holding a GPU at 0% is still a job.
  std::vector<int64_t> job_ids;
  // Per device, utilisation averaged over the recent sampling window, in
  // [0, 1]. Empty when the worker cannot measure it (no NVML, emulated).
  std::vector<double> device_activity;
  // When it last had a job or device activity at or above the threshold,
  // if the caller knows (e.g. after a scheduler restart). InfinitePast:
  // unknown; idle time then counts from joined_at.
  absl::Time last_busy_at = absl::InfinitePast();

  // What the jobs here whose end is known (their max_runtime) give back
  // when they end: whole devices, cores and bytes. The cost rule's
  // scale-up waits for these rather than boot a worker (jobs.h).
  struct Release {
    absl::Time at = absl::InfiniteFuture();
    int gpus = 0;
    double cpu = 0;
    int64_t memory = 0;
  };
  std::vector<Release> releases;

  double price_per_gpu_hour = 0;  // for the money-saved estimate; 0 unknown
  // The price per GPU-hour from each instant on, the first at `now`, the
  // next ones where it changes (off-peak windows) over the coming day; for
  // the cost rule. Empty: price_per_gpu_hour, constant.
  std::vector<std::pair<absl::Time, double>> price_steps;
};

// A pending job reduced to what idle and scale-up decisions need.
struct PendingJob {
  int64_t job_id = 0;
  int gpus_per_node = 0;  // whole devices
  int nodes = 1;
  double cpu_per_node = 0;             // 0: not constrained
  int64_t memory_per_node = 0;         // 0: not constrained
  std::vector<std::string> gpu_types;  // acceptable, in preference; empty any
  std::map<std::string, std::string> labels;  // worker labels required
  absl::Time pending_since = absl::InfinitePast();
  // The placement's verdict: whether the job could be placed on the live
  // workers as they are now (counting gangs, CPU, memory).
  bool fits_live_worker = false;
  // Placement holds this long job for a stopped worker of this GPU type
  // that costs less to keep up than the live one it fits
  // (PendingReason::kWaitsForBoot): it asks for that boot at once, as a
  // job that fits no live worker, and keeps no live worker up. Empty: no.
  std::string waits_for_boot_of;
};

// A running job and the activity of the devices it holds.
struct RunningJob {
  int64_t job_id = 0;
  std::vector<std::string> worker_ids;
  absl::Time started_at = absl::InfinitePast();
  // Highest utilisation among its devices over the sampling window;
  // nullopt when unmeasured (a job is never judged a zombie blind).
  std::optional<double> activity;
};

struct Snapshot {
  std::vector<WorkerInfo> workers;
  std::vector<PendingJob> pending;
  std::vector<RunningJob> running;
};

// How many of its most recent gaps between pickups a pool remembers.
inline constexpr int kGapSamples = 32;

// What the cost rule (cost_rule.h) has learned about one pool (region x
// GPU type) from what it has seen: "pickups" are jobs that came to an idle
// worker of the pool or found none there (a pending job that fits no live
// worker and accepts the pool's GPU type). Constant size per pool.
struct PoolStats {
  absl::Time first_seen = absl::InfinitePast();
  absl::Time last_pickup = absl::InfinitePast();  // InfinitePast: none yet
  // The last min(pickups, kGapSamples) gaps between pickups, in seconds, a
  // ring whose next write goes to gaps_s[next_gap]: the pool's empirical
  // distribution of gaps (a survival estimate of its next arrival).
  std::array<float, kGapSamples> gaps_s{};
  int next_gap = 0;
  int64_t pickups = 0;

  int gap_count() const {
    return static_cast<int>(std::min<int64_t>(pickups, kGapSamples));
  }
};

// What Decide() remembers between cycles. The caller keeps the value
// returned in Decisions::state and passes it back next cycle; an empty
// state (after a restart) only makes the policy more cautious.
struct PolicyState {
  std::map<std::string, absl::Time> idle_since;     // worker -> since
  std::map<std::string, absl::Time> busy_at;        // worker -> last busy cycle
  std::map<std::string, absl::Time> grace_since;    // worker -> announced at
  std::map<std::string, absl::Time> shutting_down;  // worker -> decided at
  std::map<int64_t, absl::Time> low_activity_since;  // running job -> since
  std::map<int64_t, absl::Time> zombies;             // job -> reported at
  std::map<int64_t, absl::Time> scale_up_asked;      // pending job -> asked at
  std::map<std::string, PoolStats> pools;            // PoolKey -> stats
  std::set<int64_t> pending_seen;  // pending jobs of the last cycle
};

}  // namespace tupa::scheduler::idle

#endif  // TUPA_SCHEDULER_IDLE_SNAPSHOT_H_

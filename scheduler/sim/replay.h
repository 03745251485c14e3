// Time-driven replay of a job trace with real durations: jobs arrive at
// submit_time / arrival_speedup, each scheduling event runs one PlaceJobs()
// pass over everything pending (the scheduler's own code), started jobs
// hold their resources for duration_s (also given as max_runtime, i.e. a
// perfect runtime estimate for backfill) and then free them.
#ifndef TUPA_SCHEDULER_SIM_REPLAY_H_
#define TUPA_SCHEDULER_SIM_REPLAY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/placement/placement.h"
#include "scheduler/sim/replay_fleet.h"
#include "scheduler/sim/traces.h"

namespace tupa::sim {

struct ReplayOptions {
  scheduler::PlacementOptions::Policy policy =
      scheduler::PlacementOptions::Policy::kTupa;
  double arrival_speedup = 1;
  // Each job's submit time moves by a uniform draw in [-jitter, +jitter]
  // seconds of trace time (before the speed-up; clamped at 0), seeded by
  // `seed`. 0 replays the trace as it is. Replays with different seeds
  // tell a systematic difference between policies from which jobs
  // happened to collide.
  double arrival_jitter_s = 0;
  uint64_t seed = 1;
  // kTupa only. true: the request mix of every pass is built from all jobs
  // that have arrived so far (one unit of weight per arrival, merged by
  // shape), i.e. the workload's popularity as seen up to now, as inflation
  // does with the whole trace. false: PlaceJobs derives it from the pass's
  // pending jobs (its default when request_mix is empty).
  bool mix_from_arrivals = true;
  // PlacementOptions::long_job_runtime_s (jobs' max_runtime is their
  // trace duration).
  int64_t long_job_runtime_s = scheduler::PlacementOptions().long_job_runtime_s;
  int64_t lone_job_runtime_s = scheduler::PlacementOptions().lone_job_runtime_s;
  // Prices, the idle policy and the epoch of replay time 0.
  FleetOptions fleet;
};

struct ReplayResult {
  int jobs = 0;
  int finished = 0;
  int never_fit = 0;  // refused: larger than any node, unknown type
  int unstarted = 0;  // still pending at the end (stopped nodes, no scale-up)
  double avg_jct_s = 0, p95_jct_s = 0;
  double avg_wait_s = 0, p95_wait_s = 0;
  double makespan_s = 0;
  double gpu_utilisation = 0;  // GPU-seconds used / (GPUs x makespan)
  // Time-averaged share of GPUs allocated over the arrival window, i.e.
  // integral of allocated GPUs over [first arrival, last arrival] /
  // (GPUs x (last arrival - first arrival)). Leaves out the drain after
  // the last arrival (and so the long tail of the longest pod).
  double arrival_window_utilisation = 0;
  int passes = 0;     // PlaceJobs calls
  FleetReport fleet;  // cost, idle cost, shutdowns, boots
};

// NotFound when a node has no price in options.fleet.pricing.
absl::StatusOr<ReplayResult> RunReplay(
    const std::vector<scheduler::NodeView>& nodes,
    const std::vector<PodSpec>& jobs, const ReplayOptions& options);

}  // namespace tupa::sim

#endif  // TUPA_SCHEDULER_SIM_REPLAY_H_

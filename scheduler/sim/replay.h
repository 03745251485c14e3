// Time-driven replay of a job trace with real durations: jobs arrive at
// submit_time / arrival_speedup, each scheduling event runs one PlaceJobs()
// pass over everything pending (the scheduler's own code), started jobs
// hold their resources for duration_s (also given as max_runtime, i.e. a
// perfect runtime estimate for backfill) and then free them.
#ifndef TUPA_SCHEDULER_SIM_REPLAY_H_
#define TUPA_SCHEDULER_SIM_REPLAY_H_

#include <vector>

#include "scheduler/placement/placement.h"
#include "scheduler/sim/traces.h"

namespace tupa::sim {

struct ReplayOptions {
  scheduler::PlacementOptions::Policy policy =
      scheduler::PlacementOptions::Policy::kTupa;
  double arrival_speedup = 1;
};

struct ReplayResult {
  int jobs = 0;
  int finished = 0;
  int never_fit = 0;  // refused: larger than any node, unknown type
  double avg_jct_s = 0, p95_jct_s = 0;
  double avg_wait_s = 0, p95_wait_s = 0;
  double makespan_s = 0;
  double gpu_utilisation = 0;  // GPU-seconds used / (GPUs x makespan)
  int passes = 0;              // PlaceJobs calls
};

ReplayResult RunReplay(const std::vector<scheduler::NodeView>& nodes,
                       const std::vector<PodSpec>& jobs,
                       const ReplayOptions& options);

}  // namespace tupa::sim

#endif  // TUPA_SCHEDULER_SIM_REPLAY_H_

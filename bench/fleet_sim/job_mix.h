// JobMix: the specs tupa-fleet-sim submits. A mix is a comma-separated list
// of KIND[:WEIGHT] (weight 1 when omitted), KIND one of
//   1, 2, 4, 8   single-node jobs of that many GPUs
//   0.5          a half-GPU share
//   gang         2 nodes x 8 GPUs (all or nothing)
//   none         asks for no GPU and no CPU (the scheduler's defaults apply)
//   cpu          1 CPU, no GPU
// "default" is 1:30,2:15,4:15,8:15,gang:5,0.5:20. Every spec runs `true`
// (what a real tupa-worker executes) and carries TUPA_SIM_RUNTIME_MS, the
// time a simulated worker runs it, uniform in [runtime_min, runtime_max].
// Deterministic: the spec of job `index` depends only on (mix, index,
// runtimes). Immutable after Parse; thread-safe.
#ifndef TUPA_BENCH_FLEET_SIM_JOB_MIX_H_
#define TUPA_BENCH_FLEET_SIM_JOB_MIX_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tupa/v1/job.pb.h"

namespace tupa::fleet_sim {

struct JobMixOptions {
  std::string mix = "default";
  int runtime_min_ms = 2000;
  int runtime_max_ms = 5000;
  int retries = 2;
  std::string team = "fleet";
};

class JobMix {
 public:
  // InvalidArgument naming the bad entry.
  static absl::StatusOr<JobMix> Parse(const JobMixOptions& options);

  v1::JobSpec Spec(long index) const;

 private:
  struct Kind {
    std::string name;
    double weight;
  };
  JobMix(JobMixOptions options, std::vector<Kind> kinds);

  JobMixOptions options_;
  std::vector<Kind> kinds_;
  double total_weight_ = 0;
};

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_JOB_MIX_H_

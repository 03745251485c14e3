// Internal, compact form of a request used by the placement library: GPU
// shares in milli-GPUs, CPU in milli-cores, GPU types as a bit mask over the
// cluster's type ids. Plain values, no ownership.
#ifndef TUPA_SCHEDULER_PLACEMENT_DEMAND_H_
#define TUPA_SCHEDULER_PLACEMENT_DEMAND_H_

#include <cstdint>

namespace tupa::scheduler {

inline constexpr int kMilliPerGpu = 1000;
inline constexpr uint64_t kAnyType = ~uint64_t{0};

struct Demand {
  int milli = 0;  // per device: 1000 for whole GPUs, < 1000 a share, 0 none
  int count = 0;  // devices per node (1 for a share)
  int64_t cpu_milli = 0;
  int64_t memory = 0;
  uint64_t types = kAnyType;  // bit i = type id i acceptable
  int nodes = 1;
  // kTupa, a long job (PlacementOptions::long_job_runtime_s): its run,
  // [run_from_ms, run_until_ms). Nodes rank first by what keeping them up
  // for it adds to the fleet's bill (ClusterState::KeepUpCost), then by
  // fragmentation. run_until_ms 0: not a long job.
  int64_t run_from_ms = 0, run_until_ms = 0;

  int64_t GpuMilliPerNode() const { return int64_t{milli} * count; }
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_DEMAND_H_

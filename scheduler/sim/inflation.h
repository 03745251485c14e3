// The inflation experiment of the FGD paper (Weng et al., ATC'23), as
// ../shared/traces/README.md describes it: pods drawn from a pod list with
// replacement (seeded) are offered one at a time; one that fits nowhere is
// dropped; nothing departs; arrivals stop once the GPU requests offered
// reach `stop_ratio` of the cluster's GPU capacity. Placement is the
// library's own (ClusterState + PlaceGang), as PlaceJobs uses it.
#ifndef TUPA_SCHEDULER_SIM_INFLATION_H_
#define TUPA_SCHEDULER_SIM_INFLATION_H_

#include <cstdint>
#include <vector>

#include "scheduler/placement/placement.h"
#include "scheduler/sim/traces.h"

namespace tupa::sim {

struct InflationResult {
  double alloc_ratio = 0;       // allocated / total GPU capacity at the end
  double unallocated_gpus = 0;  // free GPU capacity at the end, in GPUs
  int offered = 0;
  int placed = 0;
};

InflationResult RunInflation(const std::vector<scheduler::NodeView>& nodes,
                             const std::vector<PodSpec>& pods,
                             scheduler::PlacementOptions::Policy policy,
                             uint64_t seed, double stop_ratio = 1.3);

// The request mix the kTupa policy scores against: every pod of the list.
std::vector<scheduler::RequestShape> MixOfPods(
    const std::vector<PodSpec>& pods);

}  // namespace tupa::sim

#endif  // TUPA_SCHEDULER_SIM_INFLATION_H_

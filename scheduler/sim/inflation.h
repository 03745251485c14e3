// The inflation experiment of the FGD paper (Weng et al., ATC'23): pods are
// offered one at a time; one that fits nowhere is dropped; nothing departs;
// the figure is the GPU allocation once the GPU requests offered reach
// `stop_ratio` of the cluster's GPU capacity. Placement is the library's
// own (ClusterState + PlaceGang), as PlaceJobs uses it.
//
// Two ways to make the arrival sequence (InflationProtocol):
//   - kFgdSimulator (the default): as the FGD authors' simulator runs it
//     (hkust-adsl/kubernetes-scheduler-simulator, `-tune 1.3 -tuneseed S
//     --shuffle-pod=true`: SortClusterPods, TunePodsByNodeTotalResource,
//     syncClusterResourceList). Every pod of the list once, in a seeded
//     random order, then pods drawn from the list with replacement while
//     the total GPU request stays within `stop_ratio` of capacity (a list
//     that asks for more loses random pods instead). The nodes are renamed
//     with a seeded random prefix there, so a score tie between nodes goes
//     to a seeded random node order, not the file's: the nodes are
//     shuffled with the same seed here.
//   - kDraw: pods drawn with replacement until the requests offered reach
//     `stop_ratio`; nodes in file order (../shared/traces/README.md's
//     description; what tupa-sim did before 5 Dec).
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

enum class InflationProtocol { kFgdSimulator, kDraw };

InflationResult RunInflation(
    const std::vector<scheduler::NodeView>& nodes,
    const std::vector<PodSpec>& pods,
    scheduler::PlacementOptions::Policy policy, uint64_t seed,
    double stop_ratio = 1.3,
    InflationProtocol protocol = InflationProtocol::kFgdSimulator);

// The request mix the kTupa policy scores against: every pod of the list.
std::vector<scheduler::RequestShape> MixOfPods(
    const std::vector<PodSpec>& pods);

}  // namespace tupa::sim

#endif  // TUPA_SCHEDULER_SIM_INFLATION_H_

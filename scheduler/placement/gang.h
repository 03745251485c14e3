// All-or-nothing placement of a job's node assignments on distinct nodes.
#ifndef TUPA_SCHEDULER_PLACEMENT_GANG_H_
#define TUPA_SCHEDULER_PLACEMENT_GANG_H_

#include <vector>

#include "scheduler/placement/cluster_state.h"

namespace tupa::scheduler {

struct GangAttempt {
  bool placed = false;
  int ranks_found = 0;              // node assignments found before giving up
  std::vector<NodeChoice> choices;  // node_rank order, when placed
};

// Finds `demand.nodes` assignments on distinct nodes, one at a time by the
// state's policy. On success they are applied to `state`; otherwise `state`
// is left as it was. Since every rank asks the same, greedy succeeds exactly
// when enough distinct nodes fit.
GangAttempt PlaceGang(ClusterState* state, const Demand& demand,
                      const SearchFilter& filter);

// Gives back what PlaceGang applied.
void UndoGang(ClusterState* state, const GangAttempt& attempt);

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_GANG_H_

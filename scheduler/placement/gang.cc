#include "scheduler/placement/gang.h"

namespace tupa::scheduler {

GangAttempt PlaceGang(ClusterState* state, const Demand& demand,
                      const SearchFilter& filter) {
  GangAttempt attempt;
  std::vector<int> used;
  SearchFilter f = filter;
  if (demand.nodes > 1) f.excluded = &used;
  for (int rank = 0; rank < demand.nodes; ++rank) {
    auto choice = state->FindNode(demand, f);
    if (!choice.has_value()) break;
    state->Apply(*choice);
    used.push_back(choice->node);
    attempt.choices.push_back(std::move(*choice));
  }
  attempt.ranks_found = static_cast<int>(attempt.choices.size());
  attempt.placed = attempt.ranks_found == demand.nodes;
  if (!attempt.placed) {
    UndoGang(state, attempt);
    attempt.choices.clear();
  }
  return attempt;
}

void UndoGang(ClusterState* state, const GangAttempt& attempt) {
  for (auto it = attempt.choices.rbegin(); it != attempt.choices.rend(); ++it) {
    state->Undo(*it);
  }
}

}  // namespace tupa::scheduler

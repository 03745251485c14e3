#include "scheduler/placement/reservation.h"

#include <algorithm>

#include "scheduler/placement/gang.h"

namespace tupa::scheduler {
namespace {

// Releases the group of jobs ending at releases[*i].end_ms; returns the
// nodes touched and advances *i past the group.
std::vector<int> ReleaseGroup(ClusterState* state,
                              const std::vector<Release>& releases, size_t* i) {
  std::vector<int> touched;
  const int64_t end = releases[*i].end_ms;
  for (; *i < releases.size() && releases[*i].end_ms == end; ++*i) {
    state->ReleaseRunning(*releases[*i].job);
    for (const std::string& w : releases[*i].job->worker_ids) {
      const int n = state->NodeIndex(w);
      if (n >= 0) touched.push_back(n);
    }
  }
  return touched;
}

bool MightFit(const ClusterState& state, const Demand& demand,
              const SearchFilter& filter, const std::vector<int>& touched) {
  if (demand.nodes > 1) return true;  // a gang can combine untouched nodes
  for (int n : touched) {
    if (state.FitsOnNode(demand, n, filter)) return true;
  }
  return false;
}

int64_t StartOf(int64_t end) { return end == kUnknownEnd ? 0 : end; }

}  // namespace

Reservation Reserve(const ClusterState& state,
                    const std::vector<Release>& releases, const Demand& demand,
                    const SearchFilter& filter) {
  Reservation r;
  ClusterState scratch = state;
  size_t i = 0;
  while (i < releases.size()) {
    const int64_t end = releases[i].end_ms;
    const std::vector<int> touched = ReleaseGroup(&scratch, releases, &i);
    if (!MightFit(scratch, demand, filter, touched)) continue;
    GangAttempt a = PlaceGang(&scratch, demand, filter);
    if (!a.placed) continue;
    r.active = true;
    r.start_ms = StartOf(end);
    for (const NodeChoice& c : a.choices) r.nodes.push_back(c.node);
    return r;
  }
  return r;
}

void EstimateStarts(const ClusterState& state,
                    const std::vector<Release>& releases,
                    std::vector<StartEstimate>* jobs) {
  if (jobs->empty()) return;
  ClusterState scratch = state;
  size_t i = 0, left = jobs->size();
  while (i < releases.size() && left > 0) {
    const int64_t end = releases[i].end_ms;
    const std::vector<int> touched = ReleaseGroup(&scratch, releases, &i);
    for (StartEstimate& job : *jobs) {
      if (job.found || !MightFit(scratch, job.demand, job.filter, touched)) {
        continue;
      }
      GangAttempt a = PlaceGang(&scratch, job.demand, job.filter);
      if (!a.placed) continue;
      UndoGang(&scratch, a);
      job.found = true;
      job.start_ms = StartOf(end);
      --left;
    }
  }
}

}  // namespace tupa::scheduler

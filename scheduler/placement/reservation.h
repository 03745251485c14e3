// Reservations and start-time estimates: replays the ends of running jobs,
// earliest first, on a copy of the cluster state until a job fits.
#ifndef TUPA_SCHEDULER_PLACEMENT_RESERVATION_H_
#define TUPA_SCHEDULER_PLACEMENT_RESERVATION_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "scheduler/placement/cluster_state.h"

namespace tupa::scheduler {

inline constexpr int64_t kUnknownEnd = std::numeric_limits<int64_t>::max();

// Resources that free up at `end_ms` (kUnknownEnd: some time, unknown).
// `job` is not owned: it points at a RunningJob that outlives every vector
// of releases holding it (the pass's running jobs, or those it placed), so
// a pass copies no job's strings to build, sort or filter its releases.
struct Release {
  int64_t end_ms = kUnknownEnd;
  const RunningJob* job = nullptr;
};

struct Reservation {
  bool active = false;
  int64_t start_ms = 0;    // 0 = unknown (only unknown ends free enough)
  std::vector<int> nodes;  // node indexes the reserved job would use
};

// The earliest point in `releases` (sorted by end_ms) at which `demand`
// fits, and where. Inactive when it never fits.
Reservation Reserve(const ClusterState& state,
                    const std::vector<Release>& releases, const Demand& demand,
                    const SearchFilter& filter);

struct StartEstimate {
  Demand demand;
  SearchFilter filter;
  bool found = false;
  int64_t start_ms = 0;  // 0 = unknown
};

// Reserve() for several jobs at once, ignoring one another; fills
// found/start_ms.
void EstimateStarts(const ClusterState& state,
                    const std::vector<Release>& releases,
                    std::vector<StartEstimate>* jobs);

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_RESERVATION_H_

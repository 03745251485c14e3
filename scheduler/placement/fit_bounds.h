// FitBounds: the most any single node offers right now, per resource, so
// that a placement pass that cannot start anything is skipped without
// running it (a deep queue behind a full fleet: every arrival would
// otherwise cost a pass over every pending job).
//
// The bounds are taken per resource over the schedulable nodes, each on
// its own, so CouldFit is only a necessary condition: a request it refuses
// fits no node; one it accepts may still fit none (placement decides).
#ifndef TUPA_SCHEDULER_PLACEMENT_FIT_BOUNDS_H_
#define TUPA_SCHEDULER_PLACEMENT_FIT_BOUNDS_H_

#include <cstdint>
#include <vector>

#include "scheduler/placement/placement.h"

namespace tupa::scheduler {

struct FitBounds {
  int whole_free_devices = 0;     // devices with nothing on them, on one node
  double largest_free_share = 0;  // of one device
  double cpu_free = 0;
  int64_t memory_free = 0;
  bool any_schedulable = false;

  static FitBounds Of(const std::vector<NodeView>& nodes);
  // Whether `request` (per node) could fit the best node of each resource.
  bool CouldFit(const JobRequest& request) const;
  // Whether these bounds are nowhere larger than `other`: then a request
  // that `other` refuses, these refuse too.
  bool Within(const FitBounds& other) const;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_FIT_BOUNDS_H_

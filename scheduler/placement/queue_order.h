// The order in which PlaceJobs() considers pending jobs: priority
// (descending), then fair share (within one priority, the team that holds
// the fewest GPUs goes next, counting jobs started earlier in the same
// pass), then age (submitted_at_ms ascending), then job_id.
// Not thread-safe; refers to `pending`, which must outlive it.
#ifndef TUPA_SCHEDULER_PLACEMENT_QUEUE_ORDER_H_
#define TUPA_SCHEDULER_PLACEMENT_QUEUE_ORDER_H_

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "scheduler/placement/placement.h"

namespace tupa::scheduler {

class QueueOrder {
 public:
  QueueOrder(const std::vector<JobRequest>& pending,
             const std::vector<RunningJob>& running);

  // Index into `pending` of the next job, or -1 when all were returned.
  int Next();
  // Tells the order that job `index` (from Next) started: its team now
  // holds more GPUs.
  void OnPlaced(int index);

 private:
  const std::vector<JobRequest>& pending_;
  std::vector<int> by_priority_;  // indexes, priority desc
  size_t level_begin_ = 0;        // first index of the current level
  std::map<std::string, std::deque<int>> level_;  // team -> age order
  std::map<std::string, double> held_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_QUEUE_ORDER_H_

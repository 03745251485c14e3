// RecentMix: the request mix the kTupa policy measures fragmentation
// against, as the shapes of the last `capacity` jobs submitted (FGD's
// "workload popularity", observed). A deep queue is not needed: with an
// empty queue a per-pass mix would be empty too and kTupa would fall back
// to best fit. Shapes are merged (GPUs per node, CPU, memory, GPU types);
// a gang counts once per node. The scheduler keeps one (fed at submit and
// rebuilt from the active jobs at start); tupa-sim replay feeds every
// arrival. Not thread-safe.
#ifndef TUPA_SCHEDULER_PLACEMENT_RECENT_MIX_H_
#define TUPA_SCHEDULER_PLACEMENT_RECENT_MIX_H_

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "scheduler/placement/placement.h"

namespace tupa::scheduler {

class RecentMix {
 public:
  // 0: remember every job ever added.
  explicit RecentMix(size_t capacity = 4096) : capacity_(capacity) {}

  void Add(const JobRequest& job);
  // One entry per distinct shape, weighted by how many of the remembered
  // jobs (times their nodes) had it. Empty before the first Add().
  std::vector<RequestShape> Mix() const;
  size_t size() const { return order_.size(); }

 private:
  using Key = std::tuple<double, double, int64_t, std::vector<std::string>>;
  struct Entry {
    Key key;
    double weight;
  };
  const size_t capacity_;
  std::deque<Entry> order_;        // oldest first, while capacity_ > 0
  std::map<Key, double> weights_;  // shape -> summed weight
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_RECENT_MIX_H_

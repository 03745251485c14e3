#include "scheduler/placement/queue_order.h"

#include <algorithm>
#include <tuple>

namespace tupa::scheduler {

QueueOrder::QueueOrder(const std::vector<JobRequest>& pending,
                       const std::vector<RunningJob>& running)
    : pending_(pending) {
  for (const RunningJob& r : running) {
    held_[r.team] += r.gpus * static_cast<double>(r.worker_ids.size());
  }
  by_priority_.resize(pending.size());
  for (size_t i = 0; i < pending.size(); ++i) by_priority_[i] = i;
  std::sort(by_priority_.begin(), by_priority_.end(), [&](int a, int b) {
    const JobRequest& x = pending[a];
    const JobRequest& y = pending[b];
    return std::make_tuple(-x.priority, x.submitted_at_ms, x.job_id) <
           std::make_tuple(-y.priority, y.submitted_at_ms, y.job_id);
  });
}

int QueueOrder::Next() {
  if (level_.empty()) {
    if (level_begin_ >= by_priority_.size()) return -1;
    // Load the next priority level; within a team it is already age order.
    const int priority = pending_[by_priority_[level_begin_]].priority;
    while (level_begin_ < by_priority_.size() &&
           pending_[by_priority_[level_begin_]].priority == priority) {
      const int i = by_priority_[level_begin_++];
      level_[pending_[i].team].push_back(i);
    }
  }
  // The team holding the fewest GPUs; ties go to the older head job.
  auto pick = level_.end();
  for (auto it = level_.begin(); it != level_.end(); ++it) {
    if (pick == level_.end()) {
      pick = it;
      continue;
    }
    const JobRequest& a = pending_[it->second.front()];
    const JobRequest& b = pending_[pick->second.front()];
    const double ha = held_[it->first], hb = held_[pick->first];
    if (std::make_tuple(ha, a.submitted_at_ms, a.job_id) <
        std::make_tuple(hb, b.submitted_at_ms, b.job_id)) {
      pick = it;
    }
  }
  const int index = pick->second.front();
  pick->second.pop_front();
  if (pick->second.empty()) level_.erase(pick);
  return index;
}

void QueueOrder::OnPlaced(int index) {
  const JobRequest& job = pending_[index];
  held_[job.team] += job.gpus * job.nodes;
}

}  // namespace tupa::scheduler

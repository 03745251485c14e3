#include "scheduler/placement/recent_mix.h"

#include <algorithm>

namespace tupa::scheduler {

void RecentMix::Add(const JobRequest& job) {
  Entry e{Key{job.gpus, job.cpu, job.memory, job.gpu_types},
          static_cast<double>(std::max(1, job.nodes))};
  weights_[e.key] += e.weight;
  if (capacity_ == 0) return;
  order_.push_back(std::move(e));
  if (order_.size() <= capacity_) return;
  const Entry& old = order_.front();
  auto it = weights_.find(old.key);
  it->second -= old.weight;
  if (it->second <= 0) weights_.erase(it);
  order_.pop_front();
}

std::vector<RequestShape> RecentMix::Mix() const {
  std::vector<RequestShape> mix;
  mix.reserve(weights_.size());
  for (const auto& [key, weight] : weights_) {
    const auto& [gpus, cpu, memory, types] = key;
    mix.push_back({gpus, cpu, memory, types, weight});
  }
  return mix;
}

}  // namespace tupa::scheduler

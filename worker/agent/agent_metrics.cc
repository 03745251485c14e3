// Agent's side of the worker metrics: which ranks hold which device.
#include <algorithm>
#include <thread>

#include "worker/agent/agent.h"

namespace tupa::worker {

std::unique_ptr<WorkerMetrics> Agent::MakeMetrics() {
  WorkerMetricsOptions o;
  o.worker_id = options_.worker_id;
  o.devices = options_.devices;
  o.visible_devices = options_.visible_devices;
  o.device_uses = [this] { return DeviceUses(); };
  auto metrics = std::make_unique<WorkerMetrics>(std::move(o));
  metrics->Start();
  return metrics;
}

std::vector<DeviceUse> Agent::DeviceUses() {
  const double host_cpus = std::max(1u, std::thread::hardware_concurrency());
  absl::MutexLock lock(&mu_);
  std::vector<DeviceUse> uses;
  for (const auto& [key, node] : nodes_) {
    if (node.runner == nullptr || node.devices.empty()) continue;
    const std::vector<int> groups = node.runner->pids();
    if (groups.empty()) continue;
    // Each rank may use host_cpus / ranks cores (RankPlan splits the BLAS
    // threads so). One rank per device maps exactly; otherwise (one rank
    // per node) the node's activity is spread evenly over its devices.
    const double cores =
        std::max(1.0, host_cpus / static_cast<double>(groups.size()));
    const bool one_to_one = groups.size() == node.devices.size();
    for (size_t i = 0; i < node.devices.size(); ++i) {
      DeviceUse u;
      u.device = node.devices[i];
      u.job_id = std::get<0>(key);
      u.cores = cores;
      if (one_to_one) {
        u.process_groups = {groups[i]};
      } else {
        u.process_groups = groups;
        u.share = 1.0 / static_cast<double>(node.devices.size());
        u.cores = std::max(1.0, host_cpus / node.devices.size());
      }
      uses.push_back(std::move(u));
    }
  }
  return uses;
}

}  // namespace tupa::worker

#include "scheduler/sim/inflation.h"

#include <algorithm>
#include <random>

#include "scheduler/placement/cluster_state.h"
#include "scheduler/placement/gang.h"

namespace tupa::sim {

using scheduler::ClusterState;

std::vector<scheduler::RequestShape> MixOfPods(
    const std::vector<PodSpec>& pods) {
  std::vector<scheduler::RequestShape> mix;
  mix.reserve(pods.size());
  for (const PodSpec& p : pods) {
    mix.push_back(
        {p.Gpus(), p.cpu_milli / 1000.0, p.memory_mib << 20, p.gpu_types, 1.0});
  }
  return mix;
}

InflationResult RunInflation(const std::vector<scheduler::NodeView>& nodes,
                             const std::vector<PodSpec>& pods,
                             scheduler::PlacementOptions::Policy policy,
                             uint64_t seed, double stop_ratio) {
  InflationResult result;
  ClusterState state(nodes, policy);
  if (scheduler::UsesRequestMix(policy)) {
    state.SetRequestMix(MixOfPods(pods), /*max_shapes=*/128);
  }
  const double total = static_cast<double>(state.total_gpu_milli());
  const double stop = stop_ratio * total;
  std::mt19937_64 rng(seed);
  double offered = 0;
  // Pods that ask for no GPU never raise `offered`: without one that does,
  // the loop could not end.
  const bool any_gpu = std::any_of(
      pods.begin(), pods.end(),
      [](const PodSpec& p) { return p.num_gpu > 0 && p.gpu_milli > 0; });
  while (offered < stop && any_gpu) {
    const PodSpec& pod = pods[rng() % pods.size()];
    offered += static_cast<double>(pod.num_gpu) * pod.gpu_milli;
    ++result.offered;
    auto demand = state.MakeDemand(pod.Gpus(), pod.cpu_milli / 1000.0,
                                   pod.memory_mib << 20, pod.gpu_types, 1);
    if (!demand.has_value()) continue;
    if (PlaceGang(&state, *demand, {}).placed) ++result.placed;
  }
  const double free = static_cast<double>(state.free_gpu_milli());
  result.alloc_ratio = total > 0 ? (total - free) / total : 0;
  result.unallocated_gpus = free / 1000.0;
  return result;
}

}  // namespace tupa::sim

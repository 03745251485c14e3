#include "scheduler/sim/inflation.h"

#include <algorithm>
#include <cstddef>
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

namespace {

double PodGpuMilli(const PodSpec& p) {
  return static_cast<double>(p.num_gpu) * p.gpu_milli;
}

// The arrival sequence (indexes into `pods`) of the FGD simulator's
// experiment: the list once in a random order, then tuned to `stop` milli-
// GPU requested in total (TunePodsByNodeTotalResource).
std::vector<int> FgdSequence(const std::vector<PodSpec>& pods, double stop,
                             bool any_gpu, std::mt19937_64& rng) {
  std::vector<int> seq(pods.size());
  double total = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    seq[i] = static_cast<int>(i);
    total += PodGpuMilli(pods[i]);
  }
  std::shuffle(seq.begin(), seq.end(), rng);
  if (total > stop) {  // tuneDownPods: drop random pods
    while (total > stop && !seq.empty()) {
      const size_t k = rng() % seq.size();
      total -= PodGpuMilli(pods[seq[k]]);
      seq.erase(seq.begin() + static_cast<std::ptrdiff_t>(k));
    }
  } else if (any_gpu) {  // tuneUpPods: append draws until one would exceed
    while (true) {
      const int k = static_cast<int>(rng() % pods.size());
      if (total + PodGpuMilli(pods[k]) > stop) break;
      total += PodGpuMilli(pods[k]);
      seq.push_back(k);
    }
  }
  return seq;
}

}  // namespace

InflationResult RunInflation(const std::vector<scheduler::NodeView>& nodes,
                             const std::vector<PodSpec>& pods,
                             scheduler::PlacementOptions::Policy policy,
                             uint64_t seed, double stop_ratio,
                             InflationProtocol protocol) {
  InflationResult result;
  std::mt19937_64 rng(seed);
  const bool fgd = protocol == InflationProtocol::kFgdSimulator;
  std::vector<scheduler::NodeView> order = nodes;
  if (fgd) std::shuffle(order.begin(), order.end(), rng);
  ClusterState state(order, policy);
  if (scheduler::UsesRequestMix(policy)) {
    state.SetRequestMix(MixOfPods(pods), /*max_shapes=*/128);
  }
  const double total = static_cast<double>(state.total_gpu_milli());
  const double stop = stop_ratio * total;
  // Pods that ask for no GPU never raise the GPU offered: without one that
  // does, drawing could not end.
  const bool any_gpu = std::any_of(
      pods.begin(), pods.end(),
      [](const PodSpec& p) { return p.num_gpu > 0 && p.gpu_milli > 0; });
  auto offer = [&](const PodSpec& pod) {
    ++result.offered;
    auto demand = state.MakeDemand(pod.Gpus(), pod.cpu_milli / 1000.0,
                                   pod.memory_mib << 20, pod.gpu_types, 1);
    if (!demand.has_value()) return;
    if (PlaceGang(&state, *demand, {}).placed) ++result.placed;
  };
  if (fgd) {
    if (!pods.empty()) {
      for (int k : FgdSequence(pods, stop, any_gpu, rng)) offer(pods[k]);
    }
  } else {
    double offered = 0;
    while (offered < stop && any_gpu) {
      const PodSpec& pod = pods[rng() % pods.size()];
      offered += PodGpuMilli(pod);
      offer(pod);
    }
  }
  const double free = static_cast<double>(state.free_gpu_milli());
  result.alloc_ratio = total > 0 ? (total - free) / total : 0;
  result.unallocated_gpus = free / 1000.0;
  return result;
}

}  // namespace tupa::sim

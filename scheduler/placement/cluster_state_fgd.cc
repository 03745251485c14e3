// The kFgd policy's search: the FGD paper's FGD as its Kubernetes simulator
// (hkust-adsl/kubernetes-scheduler-simulator) runs it, so that tupa-sim
// compares against the published figures in the same simulator:
//   - Filter: every node with the CPU, memory, GPU type and devices.
//   - Score (FGDScorePlugin, calculateGpuShareFragExtendScore): the integer
//     FragScore of the change of the node's fragmentation against FGD's
//     typical pods (FgdTypicalShapes: no memory, 95% of the pods). A share
//     is tried on every device with room and the node scores its best
//     device; the device it then lands on (allocateGpuIdBasedOnFGDScore)
//     is the first by index among the best. Whole GPUs take the free
//     devices of lowest index (AllocateExclusiveGpuId).
//   - Node: the top-scored node that comes first in the node list. The
//     simulator builds on a modified Kubernetes whose selectHost we cannot
//     read; a uniform draw among the top-scored nodes (stock selectHost)
//     falls 3-5 points below the published FGD where most pods share a GPU
//     (the integer score ties most options of a share, and a draw spreads
//     shares over the cluster), the first node reproduces the published
//     figures within 0.4 points on every list (docs/benchmarks.md).
// Nodes of one class (same GPU state) differ only in free CPU and memory;
// with shapes that ask for no memory, two members whose free CPU before and
// after falls in the same FragModel::CpuBracket score the same, so each
// class computes one score per bracket pair, not per node.
#include <algorithm>
#include <climits>
#include <tuple>
#include <vector>

#include "scheduler/placement/cluster_state.h"

namespace tupa::scheduler {

std::optional<NodeChoice> ClusterState::ByClassFgd(
    const Demand& demand, const SearchFilter& filter) const {
  const bool share = demand.count > 0 && demand.milli < kMilliPerGpu;
  double best = 0;
  int best_pool = -1, best_level = -1;
  std::vector<int> options, after;
  struct Cached {
    int before_bracket, after_bracket;
    std::vector<double> scores;  // per option
  };
  std::vector<Cached> cache;
  for (int slot = 0; slot <= num_types(); ++slot) {
    if (demand.count > 0 &&
        (slot == num_types() || !((demand.types >> slot) & 1))) {
      continue;
    }
    for (int cid : by_type_[slot]) {
      const Class& c = classes_[cid];
      if (demand.count > 0 && demand.milli >= kMilliPerGpu &&
          c.full_free < demand.count) {
        continue;
      }
      if (demand.count > 0 && c.max_free < demand.milli) continue;
      const int n = static_cast<int>(c.sorted_free.size());
      options.clear();
      if (share) {
        for (int f : c.sorted_free) {
          if (f >= demand.milli && (options.empty() || options.back() != f)) {
            options.push_back(f);
          }
        }
      } else {
        options.push_back(-1);
      }
      cache.clear();
      for (auto it =
               c.members.lower_bound({demand.cpu_milli, INT64_MIN, INT_MIN});
           it != c.members.end(); ++it) {
        const auto& [cpu, mem, p] = *it;
        if (mem < demand.memory || !Passes(pools_[p].node, filter)) continue;
        const Pool& pool = pools_[p];
        const int bb = frag_.CpuBracket(cpu);
        const int ba = frag_.CpuBracket(cpu - demand.cpu_milli);
        const Cached* hit = nullptr;
        for (const Cached& k : cache) {
          if (k.before_bracket == bb && k.after_bracket == ba) hit = &k;
        }
        if (hit == nullptr) {
          Cached k{bb, ba, {}};
          const double before =
              frag_.Frag(c.sorted_free.data(), n, pool.type_id, cpu, mem);
          for (int option : options) {
            after = c.sorted_free;
            if (demand.count > 0 && !share) {
              for (int d = 0; d < demand.count; ++d) after[n - 1 - d] = 0;
            } else if (share) {
              *std::find(after.begin(), after.end(), option) -= demand.milli;
            }
            std::sort(after.begin(), after.end());
            k.scores.push_back(FragScore(
                frag_.Frag(after.data(), n, pool.type_id,
                           cpu - demand.cpu_milli, mem - demand.memory) -
                before));
          }
          cache.push_back(std::move(k));
          hit = &cache.back();
        }
        // The node's score: its best device, the first by index on ties.
        double score = hit->scores[0];
        int level = options[0];
        if (share) {
          bool first = true;
          for (int f : pool.free) {
            if (f < demand.milli) continue;
            const int o = static_cast<int>(
                std::lower_bound(options.begin(), options.end(), f) -
                options.begin());
            if (first || hit->scores[o] < score) {
              score = hit->scores[o];
              level = f;
              first = false;
            }
          }
        }
        // The top-scored node first in the node list.
        if (best_pool < 0 || score < best ||
            (score == best && pools_[p].node < pools_[best_pool].node)) {
          best = score;
          best_pool = p;
          best_level = level;
        }
      }
    }
  }
  if (best_pool < 0) return std::nullopt;
  return MakeChoice(demand, best_pool, best_level);
}

}  // namespace tupa::scheduler

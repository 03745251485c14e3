// ClusterState::ByMember: the search of the kFgd and kTupa policies, which
// score every node that passes (not one representative per class).
//
// kFgd is the FGD paper's FGD as its Kubernetes simulator
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
//     figures within 0.4 points on every list (docs/benchmarks.md). The
//     FGD simulator renames its nodes with a seeded random prefix, so its
//     "first" is the first in a seeded random order: tupa-sim inflation
//     shuffles the node list per seed to match (scheduler/sim/inflation.h).
// kTupa scores the same way against its own measure (frag.h: type pressure,
// memory, the recent mix; copies counted for a job without GPUs) and breaks
// ties by what the job leaves: a share or a job without GPUs goes to the
// node with the least free GPU (it then leaves whole free devices and whole
// free nodes to the jobs that need them, and does not strand a half-empty
// node's GPUs behind its CPU), among those to the least CPU left (CPU
// packed tight is CPU left whole for the next pod); a whole-GPU job to the
// best fit over GPU, CPU and memory; then the cheaper node, then node
// order. Among a node's tied devices a share takes the tightest (kFgd: the
// first by index).
//
// Nodes of one class (same GPU state) differ only in free CPU and memory;
// two members whose free CPU and memory (before and after) fall in the same
// FragModel brackets score the same, so each class computes one score per
// bracket combination, not per node.
#include <algorithm>
#include <climits>
#include <tuple>
#include <vector>

#include "scheduler/placement/cluster_state.h"

namespace tupa::scheduler {

std::optional<NodeChoice> ClusterState::ByMember(
    const Demand& demand, const SearchFilter& filter) const {
  const bool share = demand.count > 0 && demand.milli < kMilliPerGpu;
  // A share or a job without GPUs breaks ties by free GPU (kTupa).
  const bool gpu_first = share || demand.count == 0;
  constexpr double kTieEps = 1e-12;
  const bool tupa = policy_ == Policy::kTupa;
  // kTupa counts copies for a job without GPUs (frag.h).
  const bool copies = tupa && demand.count == 0;
  double best = 0, best_tie = 0, best_price = 0, best_first = 0;
  int best_pool = -1, best_level = -1;
  std::vector<int> options, after;
  struct Cached {
    int before_bracket, after_bracket, mem_before, mem_after;
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
      int64_t gpu_free = 0;
      for (int f : c.sorted_free) gpu_free += f;
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
           it != c.members.end();) {
        const auto& [cpu, mem, p] = *it;
        if (mem < demand.memory || !Passes(pools_[p].node, filter)) {
          ++it;
          continue;
        }
        // kTupa: the members up to the next CPU bracket score the same and
        // fit worse (more CPU left): the first one stands for them.
        auto next = it;
        // A long job's cost key differs per member: each is scored.
        if (tupa && demand.run_until_ms == 0) {
          const int64_t bound =
              frag_.NextCpuBoundary(cpu, demand.cpu_milli, copies);
          next = bound == INT64_MAX
                     ? c.members.end()
                     : c.members.lower_bound({bound, INT64_MIN, INT_MIN});
        } else {
          ++next;
        }
        const Pool& pool = pools_[p];
        const int bb = frag_.CpuBracket(cpu, copies);
        const int ba = frag_.CpuBracket(cpu - demand.cpu_milli, copies);
        const int mb = frag_.MemoryBracket(mem, copies);
        const int ma = frag_.MemoryBracket(mem - demand.memory, copies);
        const Cached* hit = nullptr;
        for (const Cached& k : cache) {
          if (k.before_bracket == bb && k.after_bracket == ba &&
              k.mem_before == mb && k.mem_after == ma) {
            hit = &k;
          }
        }
        if (hit == nullptr) {
          Cached k{bb, ba, mb, ma, {}};
          const double before = frag_.Frag(c.sorted_free.data(), n,
                                           pool.type_id, cpu, mem, copies);
          for (int option : options) {
            after = c.sorted_free;
            if (demand.count > 0 && !share) {
              for (int d = 0; d < demand.count; ++d) after[n - 1 - d] = 0;
            } else if (share) {
              *std::find(after.begin(), after.end(), option) -= demand.milli;
            }
            std::sort(after.begin(), after.end());
            k.scores.push_back(
                FragScore(frag_.Frag(after.data(), n, pool.type_id,
                                     cpu - demand.cpu_milli,
                                     mem - demand.memory, copies) -
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
            // kTupa: the tightest of the tied devices (best fit).
            if (first || hit->scores[o] < score ||
                (tupa && hit->scores[o] == score && f < level)) {
              score = hit->scores[o];
              level = f;
              first = false;
            }
          }
        }
        // Ties (kTupa): the least free GPU for a share or a job without
        // GPUs, then the least CPU left (under one milli-GPU, so free GPU
        // decides first); else the best fit over all three resources.
        double tie = 0;
        if (tupa) {
          const double cpu_left =
              static_cast<double>(cpu - demand.cpu_milli) / cpu_norm_;
          tie = gpu_first ? static_cast<double>(gpu_free) + 0.9 * cpu_left
                          : 0.5 * cpu_left +
                                0.5 *
                                    static_cast<double>(
                                        gpu_free - demand.GpuMilliPerNode()) /
                                    gpu_norm_ +
                                0.5 * static_cast<double>(mem - demand.memory) /
                                    mem_norm_;
        }
        const double price = tupa ? nodes_[pool.node].price : 0;
        // A long job: the node cheapest to keep up for it first.
        const double first = CostKey(demand, pool.node);
        bool better = best_pool < 0 || first < best_first ||
                      (first == best_first && score < best);
        if (!better && first == best_first && score == best) {
          if (tie < best_tie - kTieEps) {
            better = true;
          } else if (tie <= best_tie + kTieEps) {
            better =
                price < best_price || (price == best_price &&
                                       pools_[p].node < pools_[best_pool].node);
          }
        }
        if (better) {
          best_price = price;
          best_first = first;
          best = score;
          best_tie = tie;
          best_pool = p;
          best_level = level;
        }
        it = next;
      }
    }
  }
  if (best_pool < 0) return std::nullopt;
  return MakeChoice(demand, best_pool, best_level);
}

}  // namespace tupa::scheduler

#include "scheduler/placement/frag.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <tuple>

namespace tupa::scheduler {

FragModel::FragModel(std::vector<Shape> shapes, int max_shapes,
                     const std::vector<int64_t>& type_supply, int max_devices,
                     int64_t max_cpu_free, int64_t max_memory_free) {
  std::map<std::tuple<int, int, int64_t, int64_t, uint64_t>, double> merged;
  double no_gpu = 0;  // summed weight of the shapes that ask for no GPU
  for (const Shape& s : shapes) {
    if (s.weight <= 0) continue;
    const Demand& d = s.demand;
    if (d.milli <= 0 || d.count <= 0) {
      no_gpu += s.weight;
      continue;
    }
    merged[{d.milli, d.count, d.cpu_milli, d.memory, d.types}] += s.weight;
  }
  for (const auto& [key, weight] : merged) {
    Shape s;
    std::tie(s.demand.milli, s.demand.count, s.demand.cpu_milli,
             s.demand.memory, s.demand.types) = key;
    s.weight = weight;
    shapes_.push_back(s);
  }
  // Heaviest first (stable on the key order) so the cap drops the rarest.
  std::stable_sort(
      shapes_.begin(), shapes_.end(),
      [](const Shape& a, const Shape& b) { return a.weight > b.weight; });
  if (max_shapes > 0 && static_cast<int>(shapes_.size()) > max_shapes) {
    shapes_.resize(max_shapes);
  }
  double gpu = 0;
  for (const Shape& s : shapes_) gpu += s.weight;
  reject_weight_.assign(64, 0.0);
  if (shapes_.empty()) return;  // no GPU shape: Frag() is not used
  const double total = gpu + no_gpu;
  for (Shape& s : shapes_) s.weight /= total;
  no_gpu_weight_ = no_gpu / total;
  std::stable_sort(shapes_.begin(), shapes_.end(),
                   [](const Shape& a, const Shape& b) {
                     return a.demand.milli < b.demand.milli;
                   });
  for (const Shape& s : shapes_) {
    const Demand& d = s.demand;
    cpu_thresholds_[0].push_back(d.cpu_milli);
    memory_thresholds_[0].push_back(d.memory);
    // The most copies of the shape one node's devices can hold.
    const int copies = std::max(
        1, d.milli >= kMilliPerGpu ? max_devices / d.count
                                   : max_devices * (kMilliPerGpu / d.milli));
    cpu_thresholds_[1].push_back(d.cpu_milli);
    memory_thresholds_[1].push_back(d.memory);
    for (int k = 2; k <= copies; ++k) {
      const bool cpu = d.cpu_milli > 0 && k * d.cpu_milli <= max_cpu_free;
      const bool memory = d.memory > 0 && k * d.memory <= max_memory_free;
      if (!cpu && !memory) break;  // both only grow with k
      if (cpu) cpu_thresholds_[1].push_back(k * d.cpu_milli);
      if (memory) memory_thresholds_[1].push_back(k * d.memory);
    }
  }
  for (auto* thresholds : {cpu_thresholds_, memory_thresholds_}) {
    for (int c = 0; c < 2; ++c) {
      std::sort(thresholds[c].begin(), thresholds[c].end());
    }
  }
  const int types = std::min<int>(type_supply.size(), 64);
  int64_t supply_total = 0;
  for (int t = 0; t < types; ++t) supply_total += type_supply[t];
  for (int t = 0; t < 64; ++t) {
    double accepted = 0;  // sum(w_s, s accepts t), per-supply when known
    for (const Shape& s : shapes_) {
      if (!((s.demand.types >> t) & 1)) continue;
      if (supply_total == 0) {
        accepted += s.weight;
        continue;
      }
      int64_t usable = 0;
      for (int u = 0; u < types; ++u) {
        if ((s.demand.types >> u) & 1) usable += type_supply[u];
      }
      if (usable > 0) {
        accepted += s.weight * static_cast<double>(supply_total) /
                    static_cast<double>(usable);
      }
    }
    reject_weight_[t] = gpu / total - accepted;
  }
}

double FragModel::Frag(const int* sorted_free, int n, int type_id,
                       int64_t cpu_free, int64_t memory_free,
                       bool count_copies) const {
  int64_t total = 0;
  for (int i = 0; i < n; ++i) total += sorted_free[i];
  if (total == 0) return 0;
  const uint64_t type_bit = uint64_t{1} << type_id;
  double frag = 0;
  // Shapes are sorted by milli, so the split point only moves right.
  int split = 0;      // first device with free >= milli
  int64_t below = 0;  // sum of free below the split
  for (const Shape& s : shapes_) {
    const Demand& d = s.demand;
    if (!(d.types & type_bit)) continue;  // counted in reject_weight_
    while (split < n && sorted_free[split] < d.milli) {
      below += sorted_free[split];
      ++split;
    }
    const bool fits = n - split >= d.count && cpu_free >= d.cpu_milli &&
                      memory_free >= d.memory;
    if (!fits) {
      frag += s.weight * static_cast<double>(total);
      continue;
    }
    double unfed = 0;  // usable free GPU that CPU and memory cannot feed
    if (count_copies) {
      int64_t gpu_copies = 0;  // >= 1: the shape fits
      if (d.milli >= kMilliPerGpu) {
        gpu_copies = (n - split) / d.count;
      } else {
        for (int i = split; i < n; ++i) gpu_copies += sorted_free[i] / d.milli;
      }
      int64_t fed = gpu_copies;
      if (d.cpu_milli > 0) fed = std::min(fed, cpu_free / d.cpu_milli);
      if (d.memory > 0) fed = std::min(fed, memory_free / d.memory);
      unfed = static_cast<double>(total - below) *
              static_cast<double>(gpu_copies - fed) /
              static_cast<double>(gpu_copies);
    }
    frag += s.weight * (static_cast<double>(below) + unfed);
  }
  return frag + (no_gpu_weight_ + reject_weight_[type_id]) *
                    static_cast<double>(total);
}

double FragScore(double delta) {
  constexpr double kMaxNodeScore = 100;
  return -std::floor(kMaxNodeScore /
                     (1 + std::exp(delta / static_cast<double>(kMilliPerGpu))));
}

int FragModel::CpuBracket(int64_t cpu_free, bool count_copies) const {
  const std::vector<int64_t>& t = cpu_thresholds_[count_copies];
  return static_cast<int>(std::upper_bound(t.begin(), t.end(), cpu_free) -
                          t.begin());
}

int64_t FragModel::NextCpuBoundary(int64_t cpu_free, int64_t taken,
                                   bool count_copies) const {
  const std::vector<int64_t>& t = cpu_thresholds_[count_copies];
  int64_t next = INT64_MAX;
  auto before = std::upper_bound(t.begin(), t.end(), cpu_free);
  if (before != t.end()) next = *before;
  auto after = std::upper_bound(t.begin(), t.end(), cpu_free - taken);
  if (after != t.end()) next = std::min(next, *after + taken);
  return next;
}

int FragModel::MemoryBracket(int64_t memory_free, bool count_copies) const {
  const std::vector<int64_t>& t = memory_thresholds_[count_copies];
  return static_cast<int>(std::upper_bound(t.begin(), t.end(), memory_free) -
                          t.begin());
}

std::vector<FragModel::Shape> FgdTypicalShapes(
    const std::vector<FragModel::Shape>& shapes, double coverage) {
  std::map<std::tuple<int64_t, int, int, uint64_t>, double> merged;
  double total = 0;
  for (const FragModel::Shape& s : shapes) {
    if (s.weight <= 0) continue;
    const Demand& d = s.demand;
    const bool gpu = d.milli > 0 && d.count > 0;
    merged[{d.cpu_milli, gpu ? d.milli : 0, gpu ? d.count : 0, d.types}] +=
        s.weight;
    total += s.weight;
  }
  std::vector<FragModel::Shape> out;
  for (const auto& [key, weight] : merged) {
    FragModel::Shape s;
    std::tie(s.demand.cpu_milli, s.demand.milli, s.demand.count,
             s.demand.types) = key;
    s.weight = weight;
    out.push_back(s);
  }
  // Most frequent first; equal counts in the FGD simulator's reverse order
  // of (CPU, GPU share, GPU count): the larger first.
  std::stable_sort(out.begin(), out.end(),
                   [](const FragModel::Shape& a, const FragModel::Shape& b) {
                     if (a.weight != b.weight) return a.weight > b.weight;
                     const Demand &x = a.demand, &y = b.demand;
                     return std::tie(x.cpu_milli, x.milli, x.count) >
                            std::tie(y.cpu_milli, y.milli, y.count);
                   });
  double covered = 0;
  size_t keep = 0;
  while (keep < out.size() && covered < coverage * total) {
    covered += out[keep++].weight;
  }
  out.resize(keep);
  return out;
}

}  // namespace tupa::scheduler

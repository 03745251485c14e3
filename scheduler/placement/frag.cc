#include "scheduler/placement/frag.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tupa::scheduler {

FragModel::FragModel(std::vector<Shape> shapes, int max_shapes) {
  std::map<std::tuple<int, int, int64_t, int64_t, uint64_t>, double> merged;
  for (const Shape& s : shapes) {
    if (s.demand.milli <= 0 || s.demand.count <= 0 || s.weight <= 0) continue;
    const Demand& d = s.demand;
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
  double total = 0;
  for (const Shape& s : shapes_) total += s.weight;
  for (Shape& s : shapes_) s.weight /= total;
  std::stable_sort(shapes_.begin(), shapes_.end(),
                   [](const Shape& a, const Shape& b) {
                     return a.demand.milli < b.demand.milli;
                   });
}

double FragModel::Frag(const int* sorted_free, int n, int type_id,
                       int64_t cpu_free, int64_t memory_free) const {
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
    while (split < n && sorted_free[split] < d.milli) {
      below += sorted_free[split];
      ++split;
    }
    const bool fits = (d.types & type_bit) != 0 && n - split >= d.count &&
                      cpu_free >= d.cpu_milli && memory_free >= d.memory;
    frag += s.weight * static_cast<double>(fits ? below : total);
  }
  return frag;
}

}  // namespace tupa::scheduler

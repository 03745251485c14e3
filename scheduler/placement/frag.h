// Expected GPU fragmentation of one node's GPU pool given a request mix,
// after FGD (Weng et al., ATC'23): for each request shape s of weight w_s,
// the free GPU capacity that s could not use counts as fragment:
//   - all free capacity when s cannot run on the pool (type not accepted, too
//     few devices with room, or too little CPU / memory left);
//   - otherwise the free capacity of devices with less room than s needs.
// The kTupa policy places a job where this expectation grows least, on
// FGD's integer 0..100 scale (FragScore in cluster_state.cc), ties by best
// fit.
// Immutable after construction; thread-compatible.
#ifndef TUPA_SCHEDULER_PLACEMENT_FRAG_H_
#define TUPA_SCHEDULER_PLACEMENT_FRAG_H_

#include <cstdint>
#include <vector>

#include "scheduler/placement/demand.h"

namespace tupa::scheduler {

class FragModel {
 public:
  struct Shape {
    Demand demand;
    double weight = 0;
  };

  FragModel() = default;
  // Keeps shapes that ask for GPUs (CPU-only ones add the same amount to
  // every candidate), merges duplicates, keeps the `max_shapes` heaviest and
  // normalises weights to sum 1.
  FragModel(std::vector<Shape> shapes, int max_shapes);

  bool empty() const { return shapes_.empty(); }

  // `sorted_free`: free milli-GPU of each device, ascending.
  double Frag(const int* sorted_free, int n, int type_id, int64_t cpu_free,
              int64_t memory_free) const;

 private:
  std::vector<Shape> shapes_;  // sorted by demand.milli ascending
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_FRAG_H_

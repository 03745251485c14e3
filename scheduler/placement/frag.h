// Expected GPU fragmentation of one node's GPU pool given a request mix,
// after FGD (Weng et al., ATC'23): for each request shape s of weight w_s,
// the free GPU capacity that s could not use counts as fragment:
//   - all free capacity when s cannot run on the pool (type not accepted, too
//     few devices with room, or too little CPU / memory left);
//   - otherwise the free capacity of devices with less room than s needs;
//   - all free capacity when s asks for no GPU at all. For one job this
//     term moves every candidate by the same amount, but it is part of
//     FGD's measure and shifts where FGD's integer score (FragScore in
//     cluster_state.cc) rounds: dropping it packs 0.33 points worse on
//     openb's gpushare40 list (docs/benchmarks.md).
// The kTupa policy places a job where this expectation grows least, on
// FGD's integer 0..100 scale (FragScore in cluster_state.cc), ties by best
// fit.
//
// Type pressure (tupa's change to FGD). In FGD the shapes that do not
// accept a pool's GPU type count all its free capacity as fragment, with
// coefficient sum(w_s, s rejects t). Consuming a pool's GPUs therefore
// "removes fragment" fastest on the type the fewest shapes accept, however
// small that type's supply: flexible jobs flood a scarce type and the jobs
// that can run only there queue behind them (the openb replay, where 5 of
// 7 models are asked for by name). With the cluster's capacity per type,
// the coefficient becomes 1 - sum(w_s * S / S(types of s), s accepts t),
// S the total capacity: each shape's demand is spread over the supply it
// can use, so a type counts as "wanted" in proportion to the demand per
// GPU it carries. Shapes that accept every type weigh w_s on every type
// either way, and with equal supplies per type this is FGD's coefficient.
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
  // Merges duplicate GPU shapes and keeps the `max_shapes` heaviest; the
  // shapes that ask for no GPU become one weight. Weights are normalised
  // to sum 1 over both.
  // `type_supply[t]`: total GPU capacity (any unit) of type id t; empty
  // keeps FGD's plain type term.
  FragModel(std::vector<Shape> shapes, int max_shapes,
            const std::vector<int64_t>& type_supply = {});

  bool empty() const { return shapes_.empty(); }

  // `sorted_free`: free milli-GPU of each device, ascending.
  double Frag(const int* sorted_free, int n, int type_id, int64_t cpu_free,
              int64_t memory_free) const;

 private:
  std::vector<Shape> shapes_;  // sorted by demand.milli ascending
  // Per type id: the weight with which a pool's whole free capacity counts
  // as fragment for the shapes that reject its type.
  std::vector<double> reject_weight_;
  double no_gpu_weight_ = 0;  // weight of the shapes that ask for no GPU
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_FRAG_H_

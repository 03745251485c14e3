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
// FGD's integer 0..100 scale (FragScore below), scoring every node
// (cluster_state_members.cc); ties go to the least free GPU for a share or
// a job without GPUs (then the least CPU left), to the best fit for whole
// GPUs.
//
// Counting copies (tupa's change to FGD, for jobs without GPUs). FGD asks
// whether ONE pod of a shape still fits: a node with 8 free GPUs and CPU
// for one more pod scores as if all 8 were usable. A job without GPUs
// changes only the node's CPU and memory, so for it that blind spot is
// the whole decision: on a list with many CPU-only pods (openb cpu250)
// they ate the CPU of nodes whose GPUs then stood idle. With copies
// counted, a shape that fits uses only the share of its devices that the
// node's free CPU and memory can feed copies of (floor(cpu_free / cpu) of
// them); the rest counts as fragment. Scoring GPU jobs this way too
// packed multi-GPU and share-heavy lists worse (docs/benchmarks.md), so
// it is used for jobs without GPUs only.
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

#include <climits>
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
  // keeps FGD's plain type term. `max_devices`: the most devices of one
  // node; it bounds the copies of a shape that Frag(..., true) counts.
  // `max_cpu_free` / `max_memory_free`: the most free CPU (milli) / memory
  // any node can have; multiples above them never change a bracket, so
  // they are not kept (this bounds the thresholds of tiny shares).
  FragModel(std::vector<Shape> shapes, int max_shapes,
            const std::vector<int64_t>& type_supply = {}, int max_devices = 8,
            int64_t max_cpu_free = INT64_MAX,
            int64_t max_memory_free = INT64_MAX);

  bool empty() const { return shapes_.empty(); }

  // `sorted_free`: free milli-GPU of each device, ascending.
  // `count_copies`: a shape uses only as many devices as the free CPU and
  // memory feed copies of it (see above); false is FGD's measure.
  double Frag(const int* sorted_free, int n, int type_id, int64_t cpu_free,
              int64_t memory_free, bool count_copies = false) const;

  // A bracket of free CPU: the number of thresholds at or below `cpu_free`
  // (a shape's CPU, and with `count_copies` every multiple of it up to the
  // copies a node can hold). Two nodes of the same GPU state whose free CPU
  // and memory (before and after a placement) fall in the same brackets
  // get the same Frag() with the same `count_copies`.
  int CpuBracket(int64_t cpu_free, bool count_copies = false) const;
  // The least free CPU above `cpu_free` at which CpuBracket(free CPU) or
  // CpuBracket(free CPU - `taken`) changes; INT64_MAX when neither does.
  int64_t NextCpuBoundary(int64_t cpu_free, int64_t taken,
                          bool count_copies = false) const;
  // The same for memory (0 for every node when no shape asks for memory).
  int MemoryBracket(int64_t memory_free, bool count_copies = false) const;

 private:
  std::vector<Shape> shapes_;  // sorted by demand.milli ascending
  // Bracket thresholds, ascending: [0] the shapes' cpu_milli / memory,
  // [1] with their multiples (count_copies).
  std::vector<int64_t> cpu_thresholds_[2];
  std::vector<int64_t> memory_thresholds_[2];
  // Per type id: the weight with which a pool's whole free capacity counts
  // as fragment for the shapes that reject its type.
  std::vector<double> reject_weight_;
  double no_gpu_weight_ = 0;  // weight of the shapes that ask for no GPU
};

// FGD's node score for a fragmentation change of `delta` milli-GPU, negated
// so that lower is better: the Kubernetes framework's 0..100 integer score
// of sigmoid(-delta / 1 GPU), as the FGD scheduler plugin computes it. The
// truncation makes changes closer than one point (about 0.04 GPU near 0)
// ties, which best fit then breaks; scoring the raw delta instead lets
// negligible differences in expected fragmentation override a much better
// fit, and packs worse on every openb pod list (docs/benchmarks.md).
double FragScore(double delta);

// The share of the request mix FGD's typical pods cover (the FGD
// simulator's podPopularityThreshold in its experiments).
inline constexpr double kFgdTypicalCoverage = 0.95;

// FGD's typical pods as the FGD simulator's experiments configure them
// (GetTypicalPods in its pkg/utils/frag.go, podPopularityThreshold 95,
// isInvolvedCpuPods true): a shape is CPU, GPU share, GPU count and type
// (no memory), and the most frequent shapes are kept until they cover
// `coverage` of the weight. Used by the kFgd policy only.
std::vector<FragModel::Shape> FgdTypicalShapes(
    const std::vector<FragModel::Shape>& shapes, double coverage);

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_FRAG_H_

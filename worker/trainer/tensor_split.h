// Tensor parallelism's split of an MLP (DESIGN §7 "Model parallelism";
// Megatron-LM, Shoeybi et al. 2019, §3).
//
// With T ranks per tensor-parallel group, layers (0,1), (2,3), ... form
// column/row pairs; an odd last layer stays replicated (so does every layer
// when T = 1). For a pair with weights W_c [h, in] and W_r [out, h]:
// - column-parallel: rank t holds rows [t·h/T, (t+1)·h/T) of W_c and b_c
//   and computes its slice of the hidden activation, with no communication;
// - row-parallel: rank t holds columns [t·h/T, (t+1)·h/T) of W_r, computes
//   a partial product, and one all-reduce over the group sums it (the "g"
//   operator) before the replicated bias b_r and the activation;
// - backward: the row layer needs no communication; the column layer's
//   input gradient is a partial sum, all-reduced over the group (the "f"
//   operator's backward) unless it is the first layer (no input gradient).
// The split widths are those of common/train_parallel_spec.h.
#ifndef TUPA_WORKER_TRAINER_TENSOR_SPLIT_H_
#define TUPA_WORKER_TRAINER_TENSOR_SPLIT_H_

#include <cstddef>
#include <string>
#include <vector>

namespace tupa::trainer {

enum class LayerSplit { kReplicated, kColumn, kRow };

// The split of each of `num_layers` layers under tensor parallelism `t`.
inline std::vector<LayerSplit> SplitLayers(int num_layers, int t) {
  std::vector<LayerSplit> out(num_layers, LayerSplit::kReplicated);
  if (t <= 1) return out;
  for (int i = 0; i + 1 < num_layers; i += 2) {
    out[i] = LayerSplit::kColumn;
    out[i + 1] = LayerSplit::kRow;
  }
  return out;
}

// The part of one full layer W [out, in], b [out] that a rank holds:
// rows [out_begin, out_begin + out) and columns [in_begin, in_begin + in)
// of W; b's entries [out_begin, out_begin + out).
struct LayerShard {
  int in = 0;
  int out = 0;
  int in_begin = 0;
  int out_begin = 0;
  size_t param_count() const {
    return static_cast<size_t>(in + 1) * static_cast<size_t>(out);
  }
};

inline LayerShard ShardOf(LayerSplit split, int full_in, int full_out, int t,
                          int tp_rank) {
  LayerShard s{full_in, full_out, 0, 0};
  if (split == LayerSplit::kColumn) {
    s.out = full_out / t;
    s.out_begin = tp_rank * s.out;
  } else if (split == LayerSplit::kRow) {
    s.in = full_in / t;
    s.in_begin = tp_rank * s.in;
  }
  return s;
}

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_TENSOR_SPLIT_H_

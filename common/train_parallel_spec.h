// The `train.parallel` section of a job spec (DESIGN §7 "Model
// parallelism"): YAML parsing, validation, and the rule that decides which
// layer widths tensor parallelism splits. The trainer
// (worker/trainer/tensor_split.h) splits exactly the widths named here.
//
//   train:
//     parallel: {tensor: 2}
//
// Consecutive pairs of linear layers (0,1), (2,3), ... are split
// column-then-row over `tensor` ranks of one node; the width between the
// two layers of a pair (layers[i + 1] for pair (i, i + 1)) is divided by
// `tensor`; an odd last layer stays whole. Errors are InvalidArgument and
// name the field. Thread-safe.
#ifndef TUPA_COMMON_TRAIN_PARALLEL_SPEC_H_
#define TUPA_COMMON_TRAIN_PARALLEL_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tupa/v1/job.pb.h"

namespace YAML {
class Node;
}

namespace tupa {

inline constexpr int kMaxTensorParallel = 1024;

// Parses the mapping under `path` (e.g. "train.parallel") into `out`.
// Unknown keys and non-integers are errors naming the field.
absl::Status ParseTrainParallel(const YAML::Node& node, const std::string& path,
                                v1::ParallelSpec* out);

// The tensor-parallel degree of a train spec (0 in the proto means 1).
int TensorParallelOf(const v1::TrainSpec& train);

// Indexes into `layers` of the widths split by tensor parallelism for a
// model of `num_layers` linear layers: 1, 3, 5, ... below num_layers.
std::vector<int> TensorSplitWidthIndexes(int num_layers);

// Checks `train.parallel.tensor` against the model and the ranks each node
// runs: 1..1024, dividing `ranks_per_node` (tensor-parallel groups stay on
// one node) and every width it splits, and at least one pair of layers to
// split when above 1.
absl::Status ValidateTrainParallel(const v1::TrainSpec& train,
                                   int ranks_per_node);

}  // namespace tupa

#endif  // TUPA_COMMON_TRAIN_PARALLEL_SPEC_H_

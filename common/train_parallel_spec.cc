#include "common/train_parallel_spec.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tupa {
namespace {

absl::Status FieldError(const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

}  // namespace

absl::Status ParseTrainParallel(const YAML::Node& node, const std::string& path,
                                v1::ParallelSpec* out) {
  if (!node.IsMap()) return FieldError(path, "must be a mapping");
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return FieldError(path, "keys must be strings");
    const std::string key = kv.first.Scalar();
    const std::string field = absl::StrCat(path, ".", key);
    if (key != "tensor") {
      return FieldError(field, "unknown field (known: tensor)");
    }
    if (!kv.second.IsScalar()) {
      return FieldError(field, "must be a scalar value");
    }
    int32_t v;
    if (!absl::SimpleAtoi(kv.second.Scalar(), &v)) {
      return FieldError(
          field, absl::StrCat("bad integer \"", kv.second.Scalar(), "\""));
    }
    out->set_tensor(v);
  }
  return absl::OkStatus();
}

int TensorParallelOf(const v1::TrainSpec& train) {
  return train.parallel().tensor() > 0 ? train.parallel().tensor() : 1;
}

std::vector<int> TensorSplitWidthIndexes(int num_layers) {
  std::vector<int> out;
  for (int i = 0; i + 1 < num_layers; i += 2) out.push_back(i + 1);
  return out;
}

absl::Status ValidateTrainParallel(const v1::TrainSpec& train,
                                   int ranks_per_node) {
  const std::string field = "train.parallel.tensor";
  const int t = train.parallel().tensor();
  if (t < 0 || t > kMaxTensorParallel) {
    return FieldError(
        field, absl::StrCat("must be between 1 and ", kMaxTensorParallel));
  }
  if (t <= 1) return absl::OkStatus();
  if (ranks_per_node % t != 0) {
    return FieldError(
        field, absl::StrCat(t, " does not divide the ", ranks_per_node,
                            " rank(s) per node (resources.gpus): a "
                            "tensor-parallel group must stay on one node"));
  }
  const int num_layers = train.model().layers_size() - 1;
  const std::vector<int> split = TensorSplitWidthIndexes(num_layers);
  if (split.empty()) {
    return FieldError(field, absl::StrCat(t,
                                          " needs at least 2 linear layers "
                                          "(3 widths in train.model.layers) to "
                                          "split"));
  }
  for (int i : split) {
    const int width = train.model().layers(i);
    if (width % t != 0) {
      return FieldError(
          field, absl::StrCat(t, " does not divide train.model.layers[", i,
                              "] = ", width, ", a width it splits"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tupa

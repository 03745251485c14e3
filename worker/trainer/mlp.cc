#include "worker/trainer/mlp.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/rng.h"

namespace tupa::trainer {

absl::StatusOr<std::unique_ptr<Mlp>> Mlp::Create(Backend* backend,
                                                 std::vector<int> widths,
                                                 int max_batch, int tensor,
                                                 int tp_rank) {
  if (widths.size() < 2) {
    return absl::InvalidArgumentError("model.layers: need at least 2 widths");
  }
  for (int w : widths) {
    if (w <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.layers: width ", w, " must be positive"));
    }
  }
  if (max_batch <= 0) {
    return absl::InvalidArgumentError("batch_size must be positive");
  }
  if (tensor < 1 || tp_rank < 0 || tp_rank >= tensor) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.parallel.tensor: rank ", tp_rank, " of ", tensor));
  }
  const int layers = static_cast<int>(widths.size()) - 1;
  const std::vector<LayerSplit> splits = SplitLayers(layers, tensor);
  if (tensor > 1 && (layers < 2)) {
    return absl::InvalidArgumentError(
        "train.parallel.tensor: needs at least 2 linear layers to split");
  }
  for (int i = 0; i < layers; ++i) {
    if (splits[i] == LayerSplit::kColumn && widths[i + 1] % tensor != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "train.parallel.tensor: ", tensor, " does not divide width ",
          widths[i + 1], " (train.model.layers[", i + 1, "])"));
    }
  }
  std::unique_ptr<Mlp> mlp(
      new Mlp(backend, std::move(widths), max_batch, tensor, tp_rank));
  RETURN_IF_ERROR(mlp->Allocate());
  return mlp;
}

Mlp::Mlp(Backend* backend, std::vector<int> widths, int max_batch, int tensor,
         int tp_rank)
    : backend_(backend),
      widths_(std::move(widths)),
      max_batch_(max_batch),
      tensor_(tensor) {
  splits_ = SplitLayers(num_layers(), tensor_);
  for (int i = 0; i < num_layers(); ++i) {
    shards_.push_back(
        ShardOf(splits_[i], widths_[i], widths_[i + 1], tensor_, tp_rank));
    offsets_.push_back(num_params_);
    num_params_ += shards_[i].param_count();
  }
}

Mlp::~Mlp() {
  backend_->Free(params_);
  backend_->Free(grads_);
  backend_->Free(labels_);
  for (void* p : acts_) backend_->Free(p);
  for (void* p : dacts_) backend_->Free(p);
}

absl::Status Mlp::Allocate() {
  ASSIGN_OR_RETURN(void* p, backend_->Alloc(num_params_ * sizeof(float)));
  params_ = static_cast<float*>(p);
  ASSIGN_OR_RETURN(void* g, backend_->Alloc((num_params_ + 1) * sizeof(float)));
  grads_ = static_cast<float*>(g);
  RETURN_IF_ERROR(backend_->Zero(grads_, (num_params_ + 1) * sizeof(float)));
  ASSIGN_OR_RETURN(void* l, backend_->Alloc(max_batch_ * sizeof(int32_t)));
  labels_ = static_cast<int32_t*>(l);
  const size_t eb = backend_->activation_bytes();
  for (size_t i = 0; i < widths_.size(); ++i) {
    // The width this rank sees: layer i's output shard (the input for i 0).
    const int width = i == 0 ? shards_[0].in : shards_[i - 1].out;
    const size_t bytes = eb * static_cast<size_t>(max_batch_) * width;
    ASSIGN_OR_RETURN(void* a, backend_->Alloc(bytes));
    acts_.push_back(a);
    if (i == 0) {
      dacts_.push_back(nullptr);
    } else {
      ASSIGN_OR_RETURN(void* d, backend_->Alloc(bytes));
      dacts_.push_back(d);
    }
  }
  return absl::OkStatus();
}

GradBuckets::Range Mlp::layer_range(int i) const {
  GradBuckets::Range r;
  r.offset = offsets_[i];
  r.count = shards_[i].param_count();
  return r;
}

std::vector<GradBuckets::Range> Mlp::sharded_ranges() const {
  std::vector<GradBuckets::Range> out;
  for (int i = 0; i < num_layers(); ++i) {
    if (splits_[i] == LayerSplit::kColumn) {
      out.push_back(layer_range(i));  // W and b
    } else if (splits_[i] == LayerSplit::kRow) {
      out.push_back({weight_offset(i), bias_offset(i) - weight_offset(i)});
    }
  }
  return out;
}

std::vector<GradBuckets::Range> Mlp::replicated_ranges() const {
  std::vector<GradBuckets::Range> out;
  for (int i = 0; i < num_layers(); ++i) {
    if (splits_[i] == LayerSplit::kReplicated) {
      out.push_back(layer_range(i));
    } else if (splits_[i] == LayerSplit::kRow) {
      out.push_back({bias_offset(i), static_cast<size_t>(shards_[i].out)});
    }
  }
  return out;
}

absl::Status Mlp::InitParams(uint64_t seed) {
  std::vector<float> host(num_params_);
  for (int i = 0; i < num_layers(); ++i) {
    // The full layer's values in order (W row-major, then b), keeping this
    // rank's shard: a shard holds what the 1-rank model holds there.
    Rng rng(seed, 0x494e4954ULL + static_cast<uint64_t>(i));
    const int in = widths_[i];
    const int out = widths_[i + 1];
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    const LayerShard& s = shards_[i];
    float* w = host.data() + weight_offset(i);
    float* b = host.data() + bias_offset(i);
    for (int o = 0; o < out; ++o) {
      const bool row_in = o >= s.out_begin && o < s.out_begin + s.out;
      for (int j = 0; j < in; ++j) {
        const float v = rng.Uniform(-bound, bound);
        if (row_in && j >= s.in_begin && j < s.in_begin + s.in) {
          w[static_cast<size_t>(o - s.out_begin) * s.in + (j - s.in_begin)] = v;
        }
      }
    }
    for (int o = 0; o < out; ++o) {
      const float v = rng.Uniform(-bound, bound);
      if (o >= s.out_begin && o < s.out_begin + s.out) b[o - s.out_begin] = v;
    }
  }
  RETURN_IF_ERROR(backend_->CopyToDevice(params_, host.data(),
                                         host.size() * sizeof(float)));
  return backend_->OnParamsUpdated(params_, num_params_);
}

absl::Status Mlp::Forward(int batch) {
  if (batch <= 0 || batch > max_batch_) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch ", batch, " outside [1, ", max_batch_, "]"));
  }
  const int n = num_layers();
  for (int i = 0; i < n; ++i) {
    const LayerShard& s = shards_[i];
    const bool relu = i + 1 < n;
    const float* w = params_ + weight_offset(i);
    const float* b = params_ + bias_offset(i);
    if (splits_[i] != LayerSplit::kRow) {
      RETURN_IF_ERROR(backend_->LinearForward(acts_[i], w, b, batch, s.in,
                                              s.out, relu, acts_[i + 1]));
      continue;
    }
    // Row-parallel: partial product, the "g" all-reduce, then the
    // replicated bias and the activation on the sum.
    RETURN_IF_ERROR(backend_->LinearForward(acts_[i], w, nullptr, batch, s.in,
                                            s.out, /*relu=*/false,
                                            acts_[i + 1]));
    RETURN_IF_ERROR(backend_->TensorAllReduceSum(
        acts_[i + 1], static_cast<size_t>(batch) * s.out));
    RETURN_IF_ERROR(
        backend_->BiasActivation(acts_[i + 1], b, batch, s.out, relu));
  }
  return absl::OkStatus();
}

absl::Status Mlp::TrainStep(
    int batch, float grad_scale,
    const std::function<absl::Status(int)>& on_layer_grads) {
  const int64_t before = backend_->collective_counts().tensor_allreduces;
  RETURN_IF_ERROR(Forward(batch));
  const int64_t after_forward = backend_->collective_counts().tensor_allreduces;
  tp_forward_ += after_forward - before;
  const int n = num_layers();
  RETURN_IF_ERROR(backend_->SoftmaxCrossEntropy(
      acts_[n], labels_, batch, widths_[n], grad_scale, dacts_[n], loss_sum()));
  for (int i = n - 1; i >= 0; --i) {
    const LayerShard& s = shards_[i];
    RETURN_IF_ERROR(backend_->LinearBackward(
        acts_[i], params_ + weight_offset(i), acts_[i + 1], dacts_[i + 1],
        batch, s.in, s.out, /*relu=*/i + 1 < n, grads_ + weight_offset(i),
        grads_ + bias_offset(i), i == 0 ? nullptr : dacts_[i]));
    RETURN_IF_ERROR(on_layer_grads(i));
    if (splits_[i] == LayerSplit::kColumn && i > 0) {
      // The column layer's input gradient is a partial sum over the group
      // (the backward of the "f" operator).
      RETURN_IF_ERROR(backend_->TensorAllReduceSum(
          dacts_[i], static_cast<size_t>(batch) * s.in));
    }
  }
  tp_backward_ +=
      backend_->collective_counts().tensor_allreduces - after_forward;
  return absl::OkStatus();
}

absl::Status Mlp::Evaluate(int batch, float* correct) {
  RETURN_IF_ERROR(Forward(batch));
  const int n = num_layers();
  return backend_->CountCorrect(acts_[n], labels_, batch, widths_[n], correct);
}

}  // namespace tupa::trainer

#include "worker/trainer/mlp.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/rng.h"

namespace tupa::trainer {

absl::StatusOr<std::unique_ptr<Mlp>> Mlp::Create(Backend* backend,
                                                 std::vector<int> widths,
                                                 int max_batch) {
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
  std::unique_ptr<Mlp> mlp(new Mlp(backend, std::move(widths), max_batch));
  RETURN_IF_ERROR(mlp->Allocate());
  return mlp;
}

Mlp::Mlp(Backend* backend, std::vector<int> widths, int max_batch)
    : backend_(backend), widths_(std::move(widths)), max_batch_(max_batch) {
  for (int i = 0; i + 1 < static_cast<int>(widths_.size()); ++i) {
    offsets_.push_back(num_params_);
    num_params_ += static_cast<size_t>(widths_[i] + 1) * widths_[i + 1];
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
    const size_t bytes = eb * static_cast<size_t>(max_batch_) * widths_[i];
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
  r.count = static_cast<size_t>(widths_[i] + 1) * widths_[i + 1];
  return r;
}

absl::Status Mlp::InitParams(uint64_t seed) {
  std::vector<float> host(num_params_);
  for (int i = 0; i < num_layers(); ++i) {
    Rng rng(seed, 0x494e4954ULL + static_cast<uint64_t>(i));
    const float bound = 1.0f / std::sqrt(static_cast<float>(widths_[i]));
    const size_t begin = offsets_[i];
    const size_t end = begin + layer_range(i).count;
    for (size_t k = begin; k < end; ++k) host[k] = rng.Uniform(-bound, bound);
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
    RETURN_IF_ERROR(backend_->LinearForward(
        acts_[i], params_ + weight_offset(i), params_ + bias_offset(i), batch,
        widths_[i], widths_[i + 1], /*relu=*/i + 1 < n, acts_[i + 1]));
  }
  return absl::OkStatus();
}

absl::Status Mlp::TrainStep(
    int batch, float grad_scale,
    const std::function<absl::Status(int)>& on_layer_grads) {
  RETURN_IF_ERROR(Forward(batch));
  const int n = num_layers();
  RETURN_IF_ERROR(backend_->SoftmaxCrossEntropy(
      acts_[n], labels_, batch, widths_[n], grad_scale, dacts_[n], loss_sum()));
  for (int i = n - 1; i >= 0; --i) {
    RETURN_IF_ERROR(backend_->LinearBackward(
        acts_[i], params_ + weight_offset(i), acts_[i + 1], dacts_[i + 1],
        batch, widths_[i], widths_[i + 1], /*relu=*/i + 1 < n,
        grads_ + weight_offset(i), grads_ + bias_offset(i),
        i == 0 ? nullptr : dacts_[i]));
    RETURN_IF_ERROR(on_layer_grads(i));
  }
  return absl::OkStatus();
}

absl::Status Mlp::Evaluate(int batch, float* correct) {
  RETURN_IF_ERROR(Forward(batch));
  const int n = num_layers();
  return backend_->CountCorrect(acts_[n], labels_, batch, widths_[n], correct);
}

}  // namespace tupa::trainer

// Mlp: a multi-layer perceptron (Linear, ReLU between layers, softmax
// cross-entropy on top) whose parameters, gradients and activations live in
// Backend memory.
//
// Parameters are one flat fp32 block in forward order: for each layer i,
// W_i [out, in] (row-major, torch layout) then b_i [out]. The gradient
// block has the same layout plus one extra float at index num_params():
// the batch's summed loss, so that the all-reduce of the gradients also
// sums the loss across ranks. Not thread-safe.
#ifndef TUPA_WORKER_TRAINER_MLP_H_
#define TUPA_WORKER_TRAINER_MLP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/trainer/backend.h"
#include "worker/trainer/grad_buckets.h"

namespace tupa::trainer {

class Mlp {
 public:
  // `widths` = [in, hidden..., out] (at least 2, all > 0); buffers are sized
  // for batches of up to `max_batch` rows. `backend` must outlive the Mlp.
  static absl::StatusOr<std::unique_ptr<Mlp>> Create(Backend* backend,
                                                     std::vector<int> widths,
                                                     int max_batch);
  ~Mlp();
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  const std::vector<int>& widths() const { return widths_; }
  int num_layers() const { return static_cast<int>(widths_.size()) - 1; }
  size_t num_params() const { return num_params_; }
  // Range of layer i's parameters (W then b) in the flat block.
  GradBuckets::Range layer_range(int i) const;
  size_t weight_offset(int i) const { return offsets_[i]; }
  size_t bias_offset(int i) const {
    return offsets_[i] + static_cast<size_t>(widths_[i]) * widths_[i + 1];
  }

  float* params() { return params_; }
  float* grads() { return grads_; }
  float* loss_sum() { return grads_ + num_params_; }
  // The input batch buffers the engine fills (Backend::LoadBatch).
  void* input() { return acts_[0]; }
  int32_t* labels() { return labels_; }

  // torch.nn.Linear initialisation (kaiming_uniform a=sqrt(5): W and b
  // uniform in ±1/sqrt(fan_in)), deterministic in `seed`; uploads it.
  absl::Status InitParams(uint64_t seed);

  // Forward, softmax cross-entropy (its gradient scaled by `grad_scale`,
  // e.g. loss_scale / global_batch) and backward for the batch in
  // input()/labels(). Calls on_layer_grads(i) right after layer i's
  // gradients are written, from the last layer down to layer 0.
  absl::Status TrainStep(
      int batch, float grad_scale,
      const std::function<absl::Status(int)>& on_layer_grads);

  // Forward only; adds the number of correct predictions to *correct
  // (device float).
  absl::Status Evaluate(int batch, float* correct);

 private:
  Mlp(Backend* backend, std::vector<int> widths, int max_batch);
  absl::Status Allocate();
  absl::Status Forward(int batch);

  Backend* const backend_;
  const std::vector<int> widths_;
  const int max_batch_;
  std::vector<size_t> offsets_;
  size_t num_params_ = 0;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  int32_t* labels_ = nullptr;
  std::vector<void*> acts_;   // acts_[0] input, acts_[i+1] output of layer i
  std::vector<void*> dacts_;  // gradient w.r.t. acts_[i], i >= 1
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_MLP_H_

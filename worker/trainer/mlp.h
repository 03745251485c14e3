// Mlp: a multi-layer perceptron (Linear, ReLU between layers, softmax
// cross-entropy on top) whose parameters, gradients and activations live in
// Backend memory.
//
// Parameters are one flat fp32 block in forward order: for each layer i,
// W_i [out, in] (row-major, torch layout) then b_i [out]. The gradient
// block has the same layout plus one extra float at index num_params():
// the batch's summed loss, so that the all-reduce of the gradients also
// sums the loss across ranks.
//
// Tensor parallelism (tensor_split.h): with T > 1 the Mlp is this rank's
// shard. Each layer's W_i/b_i in the block are the rank's LayerShard of
// the full layer (in the same layout, with the shard's shape); forward and
// backward issue the pair all-reduces over the tensor-parallel group. Every
// rank of a group must be given the same batch. Not thread-safe.
#ifndef TUPA_WORKER_TRAINER_MLP_H_
#define TUPA_WORKER_TRAINER_MLP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/trainer/backend.h"
#include "worker/trainer/grad_buckets.h"
#include "worker/trainer/tensor_split.h"

namespace tupa::trainer {

class Mlp {
 public:
  // `widths` = [in, hidden..., out] (at least 2, all > 0); buffers are sized
  // for batches of up to `max_batch` rows. `backend` must outlive the Mlp.
  // `tensor` ranks per tensor-parallel group (1: no split), this rank being
  // `tp_rank` of them; InvalidArgument naming train.parallel.tensor when it
  // does not divide a width it splits.
  static absl::StatusOr<std::unique_ptr<Mlp>> Create(Backend* backend,
                                                     std::vector<int> widths,
                                                     int max_batch,
                                                     int tensor = 1,
                                                     int tp_rank = 0);
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
    return offsets_[i] + static_cast<size_t>(shards_[i].in) * shards_[i].out;
  }
  int tensor() const { return tensor_; }
  LayerSplit split(int i) const { return splits_[i]; }
  // Which part of the full layer i this rank holds.
  const LayerShard& shard(int i) const { return shards_[i]; }
  // Ranges of the block split across the tensor-parallel group (each rank
  // holds a different part) and replicated on every rank of it; together
  // they cover [0, num_params()).
  std::vector<GradBuckets::Range> sharded_ranges() const;
  std::vector<GradBuckets::Range> replicated_ranges() const;

  float* params() { return params_; }
  float* grads() { return grads_; }
  float* loss_sum() { return grads_ + num_params_; }
  // The input batch buffers the engine fills (Backend::LoadBatch).
  void* input() { return acts_[0]; }
  int32_t* labels() { return labels_; }

  // torch.nn.Linear initialisation (kaiming_uniform a=sqrt(5): W and b
  // uniform in ±1/sqrt(fan_in)), deterministic in `seed`; uploads it. A
  // shard gets exactly its part of the full model's values.
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

  // Tensor-parallel all-reduces the backend issued during TrainStep's
  // forward and backward passes, summed over all TrainStep calls.
  int64_t tensor_allreduces_forward() const { return tp_forward_; }
  int64_t tensor_allreduces_backward() const { return tp_backward_; }

 private:
  Mlp(Backend* backend, std::vector<int> widths, int max_batch, int tensor,
      int tp_rank);
  absl::Status Allocate();
  absl::Status Forward(int batch);

  Backend* const backend_;
  const std::vector<int> widths_;
  const int max_batch_;
  const int tensor_;
  std::vector<LayerSplit> splits_;
  std::vector<LayerShard> shards_;
  std::vector<size_t> offsets_;
  size_t num_params_ = 0;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  int32_t* labels_ = nullptr;
  // acts_[0] input, acts_[i+1] output of layer i (this rank's slice of it
  // after a column-parallel layer).
  std::vector<void*> acts_;
  std::vector<void*> dacts_;  // gradient w.r.t. acts_[i], i >= 1
  int64_t tp_forward_ = 0;
  int64_t tp_backward_ = 0;
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_MLP_H_

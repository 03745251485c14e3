// Optimizer: AdamW or SGD-with-momentum over the flat parameter block, with
// an optional linear warmup + cosine decay schedule and global-norm
// gradient clipping (torch.nn.utils.clip_grad_norm_ semantics). State
// buffers live in Backend memory. Not thread-safe.
#ifndef TUPA_WORKER_TRAINER_OPTIMIZER_H_
#define TUPA_WORKER_TRAINER_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/train_defaults.h"
#include "worker/trainer/backend.h"

namespace tupa::trainer {

struct OptimizerConfig {
  std::string name = train_defaults::kOptimizer;  // "adamw" | "sgd"
  double lr = train_defaults::kLr;
  double weight_decay = train_defaults::kAdamwWeightDecay;
  double momentum = train_defaults::kMomentum;  // sgd
  double beta1 = train_defaults::kBeta1;
  double beta2 = train_defaults::kBeta2;
  double eps = train_defaults::kEps;
  int64_t warmup_steps = 0;
  std::string schedule = train_defaults::kSchedule;  // "constant" | "cosine"
  double grad_clip = 0.0;                            // 0 = off
};

// Learning rate for 1-based `step` of `total_steps`: linear warmup over
// warmup_steps, then constant or cosine decay to 0 at total_steps.
double LearningRate(const OptimizerConfig& config, int64_t step,
                    int64_t total_steps);

class Optimizer {
 public:
  // InvalidArgument for an unknown name or schedule.
  static absl::StatusOr<std::unique_ptr<Optimizer>> Create(
      Backend* backend, const OptimizerConfig& config, size_t num_params);
  ~Optimizer();

  // Applies one update for 1-based `step`. `grad_scale` multiplies the
  // gradients first (e.g. 1/loss_scale); clipping uses the norm of the
  // scaled gradients, `grad_sq_norm` (Σ g², unscaled) when the caller
  // already has it, or computes it (pass a negative value).
  absl::Status Step(float* params, const float* grads, int64_t step,
                    int64_t total_steps, float grad_scale, double grad_sq_norm);

  // State buffers (AdamW: m, v; SGD: momentum and an unused empty one), for
  // checkpoints.
  float* state(int i) { return state_[i]; }
  size_t state_size(int i) const { return i < num_state_ ? n_ : 0; }
  const OptimizerConfig& config() const { return config_; }

 private:
  Optimizer(Backend* backend, OptimizerConfig config, size_t n);

  Backend* const backend_;
  const OptimizerConfig config_;
  const size_t n_;
  int num_state_ = 0;
  float* state_[2] = {nullptr, nullptr};
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_OPTIMIZER_H_

#include "worker/trainer/optimizer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tupa::trainer {

double LearningRate(const OptimizerConfig& c, int64_t step,
                    int64_t total_steps) {
  if (c.warmup_steps > 0 && step <= c.warmup_steps) {
    return c.lr * static_cast<double>(step) / c.warmup_steps;
  }
  if (c.schedule == "cosine" && total_steps > c.warmup_steps) {
    const double progress = static_cast<double>(step - c.warmup_steps) /
                            static_cast<double>(total_steps - c.warmup_steps);
    return c.lr * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress)));
  }
  return c.lr;
}

absl::StatusOr<std::unique_ptr<Optimizer>> Optimizer::Create(
    Backend* backend, const OptimizerConfig& config, size_t num_params) {
  if (config.name != "adamw" && config.name != "sgd") {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer.name: want adamw|sgd, got \"", config.name, "\""));
  }
  if (config.schedule != "constant" && config.schedule != "cosine") {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.schedule: want constant|cosine, got \"",
                     config.schedule, "\""));
  }
  std::unique_ptr<Optimizer> opt(new Optimizer(backend, config, num_params));
  opt->num_state_ = config.name == "adamw" ? 2 : 1;
  for (int i = 0; i < opt->num_state_; ++i) {
    ASSIGN_OR_RETURN(void* p, backend->Alloc(num_params * sizeof(float)));
    opt->state_[i] = static_cast<float*>(p);
    RETURN_IF_ERROR(backend->Zero(p, num_params * sizeof(float)));
  }
  return opt;
}

Optimizer::Optimizer(Backend* backend, OptimizerConfig config, size_t n)
    : backend_(backend), config_(std::move(config)), n_(n) {}

Optimizer::~Optimizer() {
  for (float* p : state_) {
    if (p != nullptr) backend_->Free(p);
  }
}

absl::Status Optimizer::Step(float* params, const float* grads, int64_t step,
                             int64_t total_steps, float grad_scale,
                             double grad_sq_norm) {
  if (config_.grad_clip > 0) {
    if (grad_sq_norm < 0) {
      ASSIGN_OR_RETURN(grad_sq_norm, backend_->SumOfSquares(grads, n_));
    }
    const double norm = std::sqrt(grad_sq_norm) * grad_scale;
    const double coef = config_.grad_clip / (norm + 1e-6);
    if (coef < 1.0) grad_scale = static_cast<float>(grad_scale * coef);
  }
  const float lr = static_cast<float>(LearningRate(config_, step, total_steps));
  if (config_.name == "adamw") {
    AdamWHyper h;
    h.lr = lr;
    h.beta1 = static_cast<float>(config_.beta1);
    h.beta2 = static_cast<float>(config_.beta2);
    h.eps = static_cast<float>(config_.eps);
    h.weight_decay = static_cast<float>(config_.weight_decay);
    h.step = step;
    h.grad_scale = grad_scale;
    return backend_->AdamWStep(params, grads, state_[0], state_[1], n_, h);
  }
  SgdHyper h;
  h.lr = lr;
  h.momentum = static_cast<float>(config_.momentum);
  h.weight_decay = static_cast<float>(config_.weight_decay);
  h.first_step = step == 1;
  h.grad_scale = grad_scale;
  return backend_->SgdStep(params, grads, state_[0], n_, h);
}

}  // namespace tupa::trainer

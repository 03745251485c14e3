#include "worker/trainer/loss_scaler.h"

namespace tupa::trainer {

LossScaler::LossScaler(LossScalerOptions options)
    : options_(options), scale_(options.enabled ? options.init_scale : 1.0f) {}

bool LossScaler::Update(bool overflow) {
  if (!options_.enabled) return !overflow;
  if (overflow) {
    scale_ *= options_.backoff_factor;
    good_steps_ = 0;
    return false;
  }
  if (++good_steps_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    good_steps_ = 0;
  }
  return true;
}

void LossScaler::Restore(float scale, int64_t good_steps) {
  scale_ = options_.enabled ? scale : 1.0f;
  good_steps_ = good_steps;
}

}  // namespace tupa::trainer

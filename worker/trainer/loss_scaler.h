// LossScaler: dynamic loss scaling for fp16 training (torch.cuda.amp's
// GradScaler policy). The loss gradient is multiplied by scale(); after the
// all-reduce the engine checks the gradients for inf/NaN and calls
// Update(overflow): an overflowing step is skipped and the scale backs off;
// after `growth_interval` consecutive good steps the scale grows. When
// disabled (fp32, bf16) the scale is 1 and every step is applied.
// Backend-neutral, not thread-safe.
#ifndef TUPA_WORKER_TRAINER_LOSS_SCALER_H_
#define TUPA_WORKER_TRAINER_LOSS_SCALER_H_

#include <cstdint>

namespace tupa::trainer {

struct LossScalerOptions {
  bool enabled = false;
  float init_scale = 65536.0f;  // 2^16
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {});

  float scale() const { return scale_; }
  int64_t good_steps() const { return good_steps_; }

  // Records the outcome of one step; returns whether to apply it (false
  // when the gradients overflowed).
  bool Update(bool overflow);

  // Checkpointing.
  void Restore(float scale, int64_t good_steps);

 private:
  LossScalerOptions options_;
  float scale_;
  int64_t good_steps_ = 0;
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_LOSS_SCALER_H_

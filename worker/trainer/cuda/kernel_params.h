// Hyper-parameters shared by the CUDA optimizer kernels (kernels.h) and their
// CPU references (kernels_reference.h). Plain structs, no CUDA types.
#ifndef TUPA_WORKER_TRAINER_CUDA_KERNEL_PARAMS_H_
#define TUPA_WORKER_TRAINER_CUDA_KERNEL_PARAMS_H_

#include <cstdint>

namespace tupa::trainer::cuda {

// torch.optim.AdamW semantics (amsgrad=False, maximize=False):
//   g  = grad * grad_scale (* device scale when given)
//   p -= lr * weight_decay * p                  (decoupled decay)
//   m  = beta1 * m + (1 - beta1) * g
//   v  = beta2 * v + (1 - beta2) * g^2
//   p -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
struct AdamWParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
  int64_t step = 1;  // 1-based count of steps taken including this one.
  float grad_scale = 1.0f;
};

// torch.optim.SGD semantics (dampening, nesterov, coupled weight decay):
//   g   = grad * grad_scale + weight_decay * p
//   buf = first_step ? g : momentum * buf + (1 - dampening) * g
//   g   = nesterov ? g + momentum * buf : buf       (buf if momentum == 0: g)
//   p  -= lr * g
struct SgdParams {
  float lr = 1e-2f;
  float momentum = 0.9f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
  bool first_step = false;
  float grad_scale = 1.0f;
};

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_KERNEL_PARAMS_H_

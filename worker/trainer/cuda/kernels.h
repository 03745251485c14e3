// CUDA kernels of the trainer: fused softmax cross-entropy, optimizers
// (AdamW, SGD momentum) on fp32 master weights, mixed-precision helpers
// (casts, unscale + overflow check, global gradient norm for clipping) and
// the elementwise/reduction kernels behind GEMM epilogues (gemm.h).
//
// Every function enqueues work on `stream` and returns at once; the Status
// reports argument errors and launch failures only (asynchronous faults show
// up at the next synchronising call). Device pointers must stay valid until
// the stream reaches the work. Tensors are contiguous row-major. Each kernel
// has a CPU reference with the same semantics in kernels_reference.h.
#ifndef TUPA_WORKER_TRAINER_CUDA_KERNELS_H_
#define TUPA_WORKER_TRAINER_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "worker/trainer/cuda/dtype.h"
#include "worker/trainer/cuda/kernel_params.h"

namespace tupa::trainer::cuda {

// Softmax cross-entropy over `classes` logits per row, loss and gradient in
// one pass. For each row r:
//   losses[r]    = logsumexp(logits[r]) - logits[r, labels[r]]
//   dlogits[r,c] = (softmax(logits[r])[c] - [c == labels[r]]) * grad_scale
//   correct[r]   = argmax(logits[r]) == labels[r]   (first max wins; optional)
// grad_scale = loss_scale / batch gives the gradient of the mean loss times
// the loss scale. `dlogits` may alias `logits`. A label outside
// [0, classes) yields a NaN loss and a zero gradient row.
absl::Status SoftmaxCrossEntropy(DType type, const void* logits,
                                 const int32_t* labels, int64_t batch,
                                 int64_t classes, float grad_scale,
                                 void* dlogits, float* losses, int32_t* correct,
                                 cudaStream_t stream);

// *correct += the number of rows whose argmax (first max wins) equals the
// label. Exact while the count stays below 2^24.
absl::Status CountCorrect(DType type, const void* logits, const int32_t* labels,
                          int64_t batch, int64_t classes, float* correct,
                          cudaStream_t stream);

// dy[i] = y[i] > 0 ? dy[i] : 0: the ReLU backward, from the layer's output.
absl::Status ReluGradFromOutput(DType type, void* dy, const void* y, int64_t n,
                                cudaStream_t stream);

// AdamW step on `n` fp32 master weights with grads of `grad_type`. When
// `device_grad_scale` is non-null the gradient is also multiplied by
// *device_grad_scale (a clip coefficient computed on the device). When `skip`
// is non-null and *skip != 0 nothing changes (fp16 overflow). When
// `half_copy` is non-null the updated weights are also written as
// `half_type` (the copy the GEMMs read).
absl::Status AdamW(const AdamWParams& params, int64_t n, float* master,
                   DType grad_type, const void* grads, float* m, float* v,
                   DType half_type, void* half_copy,
                   const float* device_grad_scale, const int32_t* skip,
                   cudaStream_t stream);

// SGD with momentum; pointer arguments as for AdamW().
absl::Status SgdMomentum(const SgdParams& params, int64_t n, float* master,
                         DType grad_type, const void* grads,
                         float* momentum_buf, DType half_type, void* half_copy,
                         const float* device_grad_scale, const int32_t* skip,
                         cudaStream_t stream);

// grads *= inv_scale in place, and sets *found_inf = 1 if any (scaled or
// unscaled) element is inf or NaN. *found_inf is never cleared here: zero it
// before the first call of a step (cudaMemsetAsync).
absl::Status UnscaleAndCheckFinite(DType type, void* grads, int64_t n,
                                   float inv_scale, int32_t* found_inf,
                                   cudaStream_t stream);

// Number of floats GradNormSquared() needs as scratch.
constexpr int64_t kGradNormScratchFloats = 1024;

// *out = sum(grads^2) in fp32, deterministic (fixed two-level reduction).
absl::Status GradNormSquared(DType type, const void* grads, int64_t n,
                             float* scratch, float* out, cudaStream_t stream);

// *coef = pre_scale * min(1, max_norm / (sqrt(*norm_sq) * pre_scale + 1e-6))
// (torch.nn.utils.clip_grad_norm_); max_norm <= 0 disables clipping, giving
// *coef = pre_scale. Use pre_scale = 1 / loss_scale for scaled gradients.
absl::Status ClipCoefficient(const float* norm_sq, float pre_scale,
                             float max_norm, float* coef, cudaStream_t stream);

// dst = src converted (round to nearest even).
absl::Status Cast(DType from, const void* src, DType to, void* dst, int64_t n,
                  cudaStream_t stream);

// C[i,j] = act(C[i,j] + bias[j]) for C [m,n] of `type`; bias may be null;
// act is ReLU when `relu`. When `aux` is non-null the ReLU mask is written in
// the gemm.h layout (bit set where the result is > 0).
absl::Status BiasActivation(DType type, void* c, const void* bias, int64_t m,
                            int64_t n, bool relu, uint8_t* aux,
                            cudaStream_t stream);

// C[i,j] = mask(aux)[i,j] ? C[i,j] : 0 (gemm.h mask layout).
absl::Status ApplyReluMask(DType type, void* c, const uint8_t* aux, int64_t m,
                           int64_t n, cudaStream_t stream);

// out[j] = sum_i x[i,j] for x [rows, cols] of `x_type`; fp32 accumulation,
// out of `out_type`.
absl::Status ColumnSum(DType x_type, const void* x, int64_t rows, int64_t cols,
                       DType out_type, void* out, cudaStream_t stream);

// out[i] = sum_j x[i,j] for x [rows, cols] of `x_type`; fp32 accumulation,
// out of `out_type`.
absl::Status RowSum(DType x_type, const void* x, int64_t rows, int64_t cols,
                    DType out_type, void* out, cudaStream_t stream);

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_KERNELS_H_

// Readable CPU references for the kernels in kernels.h and the epilogues in
// gemm.h (llm.c style). Same semantics and argument order, fp32 only: tests
// round half-precision inputs to the half grid first and compare the CUDA
// result within a stated tolerance. Pure functions of their arguments; no
// CUDA calls, so they run (and are tested) on machines without a GPU.
#ifndef TUPA_WORKER_TRAINER_CUDA_KERNELS_REFERENCE_H_
#define TUPA_WORKER_TRAINER_CUDA_KERNELS_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "worker/trainer/cuda/kernel_params.h"

namespace tupa::trainer::cuda {

// See SoftmaxCrossEntropy() in kernels.h. `correct` may be null.
void SoftmaxCrossEntropyReference(const float* logits, const int32_t* labels,
                                  int64_t batch, int64_t classes,
                                  float grad_scale, float* dlogits,
                                  float* losses, int32_t* correct);

// Number of rows whose first argmax equals the label.
int64_t CountCorrectReference(const float* logits, const int32_t* labels,
                              int64_t batch, int64_t classes);

// dy[i] = y[i] > 0 ? dy[i] : 0.
void ReluGradFromOutputReference(float* dy, const float* y, int64_t n);

// See AdamW() in kernels.h; `device_grad_scale` is a plain multiplier here.
void AdamWReference(const AdamWParams& params, int64_t n, float* master,
                    const float* grads, float* m, float* v,
                    float device_grad_scale = 1.0f);

// See SgdMomentum() in kernels.h.
void SgdMomentumReference(const SgdParams& params, int64_t n, float* master,
                          const float* grads, float* momentum_buf,
                          float device_grad_scale = 1.0f);

// Unscales in place; returns whether any element is inf or NaN.
bool UnscaleAndCheckFiniteReference(float* grads, int64_t n, float inv_scale);

// Sum of squares, accumulated in double.
double GradNormSquaredReference(const float* grads, int64_t n);

// See ClipCoefficient() in kernels.h.
float ClipCoefficientReference(float norm_sq, float pre_scale, float max_norm);

// See BiasActivation() in kernels.h; `aux` (may be null) has
// ReluMaskBytes(m, n) bytes.
void BiasActivationReference(float* c, const float* bias, int64_t m, int64_t n,
                             bool relu, uint8_t* aux);

// See ApplyReluMask() in kernels.h.
void ApplyReluMaskReference(float* c, const uint8_t* aux, int64_t m, int64_t n);

// Reads bit (i, j) of a gemm.h ReLU mask for an output with n columns.
bool ReluMaskBit(const uint8_t* aux, int64_t n, int64_t i, int64_t j);

// out[j] = sum_i x[i,j].
std::vector<float> ColumnSumReference(const float* x, int64_t rows,
                                      int64_t cols);
// out[i] = sum_j x[i,j].
std::vector<float> RowSumReference(const float* x, int64_t rows, int64_t cols);

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_KERNELS_REFERENCE_H_

// CUDA implementations of kernels.h. Each kernel is written for clarity
// first (llm.c style); the CPU references in kernels_reference.cc mirror the
// arithmetic so tests can compare them tightly.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "worker/trainer/cuda/cuda_status.h"
#include "worker/trainer/cuda/gemm.h"
#include "worker/trainer/cuda/kernels.h"

namespace tupa::trainer::cuda {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kThreads = 256;

__device__ __forceinline__ float ToFloat(float x) { return x; }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float ToFloat(__half x) { return __half2float(x); }

template <typename T>
__device__ __forceinline__ T FromFloat(float x);
template <>
__device__ __forceinline__ float FromFloat<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float x) {
  return __float2half_rn(x);
}

// Calls f(T{}) with T the C++ type of `type`.
template <typename F>
void Dispatch(DType type, F&& f) {
  switch (type) {
    case DType::kF32:
      f(float{});
      break;
    case DType::kBF16:
      f(__nv_bfloat16{});
      break;
    case DType::kF16:
      f(__half{});
      break;
  }
}

unsigned GridFor(int64_t work_items, int64_t per_block,
                 int64_t max_blocks = 65536) {
  int64_t blocks = (work_items + per_block - 1) / per_block;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, max_blocks));
}

__device__ __forceinline__ int64_t GlobalThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// ---------------------------------------------------------------- softmax CE

// One warp per row: an online (max, sum) pass, then a pass writing the
// gradient. All lanes read the label's logit before any lane writes, so
// dlogits may alias logits.
template <typename T>
__global__ void SoftmaxCrossEntropyKernel(const T* logits,
                                          const int32_t* labels, int64_t batch,
                                          int64_t classes, float grad_scale,
                                          T* dlogits, float* losses,
                                          int32_t* correct) {
  const int64_t row =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= batch) return;  // Uniform across the warp.
  const T* x = logits + row * classes;

  float mx = -INFINITY, sum = 0.0f, best = -INFINITY;
  int64_t best_index = classes;
  bool saw_nan = false;
  for (int64_t c = lane; c < classes; c += 32) {
    const float v = ToFloat(x[c]);
    saw_nan |= isnan(v);
    if (v > best) {
      best = v;
      best_index = c;
    }
    const float new_mx = fmaxf(mx, v);
    if (new_mx != -INFINITY) {
      sum = sum * expf(mx - new_mx) + expf(v - new_mx);
      mx = new_mx;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other_mx = __shfl_xor_sync(kFullMask, mx, offset);
    const float other_sum = __shfl_xor_sync(kFullMask, sum, offset);
    const float new_mx = fmaxf(mx, other_mx);
    if (new_mx != -INFINITY) {
      sum = sum * expf(mx - new_mx) + other_sum * expf(other_mx - new_mx);
    }
    mx = new_mx;
    const float other_best = __shfl_xor_sync(kFullMask, best, offset);
    const int64_t other_index = __shfl_xor_sync(kFullMask, best_index, offset);
    if (other_best > best || (other_best == best && other_index < best_index)) {
      best = other_best;
      best_index = other_index;
    }
  }
  if (__any_sync(kFullMask, saw_nan)) mx = NAN;

  const int32_t label = labels[row];
  const bool valid = label >= 0 && label < classes;
  const float target = valid ? ToFloat(x[label]) : 0.0f;
  __syncwarp();
  const float inv_sum = 1.0f / sum;
  T* dx = dlogits + row * classes;
  for (int64_t c = lane; c < classes; c += 32) {
    const float p = expf(ToFloat(x[c]) - mx) * inv_sum;
    const float g =
        valid ? (p - (c == label ? 1.0f : 0.0f)) * grad_scale : 0.0f;
    dx[c] = FromFloat<T>(g);
  }
  if (lane == 0) {
    losses[row] = valid ? logf(sum) + mx - target : NAN;
    if (correct != nullptr) correct[row] = valid && best_index == label;
  }
}

// One warp per row; ties go to the lowest index like torch.argmax.
template <typename T>
__global__ void CountCorrectKernel(const T* logits, const int32_t* labels,
                                   int64_t batch, int64_t classes,
                                   float* correct) {
  const int64_t row =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= batch) return;
  const T* x = logits + row * classes;
  float best = -INFINITY;
  int64_t best_index = classes;
  for (int64_t c = lane; c < classes; c += 32) {
    const float v = ToFloat(x[c]);
    if (v > best || best_index == classes) {
      best = v;
      best_index = c;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other_best = __shfl_xor_sync(kFullMask, best, offset);
    const int64_t other_index = __shfl_xor_sync(kFullMask, best_index, offset);
    if (other_index < classes &&
        (best_index == classes || other_best > best ||
         (other_best == best && other_index < best_index))) {
      best = other_best;
      best_index = other_index;
    }
  }
  if (lane == 0 && best_index == labels[row]) atomicAdd(correct, 1.0f);
}

template <typename T>
__global__ void ReluGradFromOutputKernel(T* dy, const T* y, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    if (!(ToFloat(y[i]) > 0.0f)) dy[i] = FromFloat<T>(0.0f);
  }
}

// ---------------------------------------------------------------- optimizers

template <typename G, typename H>
__global__ void AdamWKernel(int64_t n, float* master, const G* grads, float* m,
                            float* v, H* half_copy, float lr, float beta1,
                            float beta2, float eps, float decay_factor,
                            float step_size, float bias_correction2_sqrt,
                            float grad_scale, const float* device_grad_scale,
                            const int32_t* skip) {
  if (skip != nullptr && *skip != 0) return;
  const float scale =
      grad_scale * (device_grad_scale != nullptr ? *device_grad_scale : 1.0f);
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const float g = ToFloat(grads[i]) * scale;
    float p = master[i] * decay_factor;
    const float mi = m[i] + (1.0f - beta1) * (g - m[i]);
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    const float denom = sqrtf(vi) / bias_correction2_sqrt + eps;
    p -= step_size * (mi / denom);
    m[i] = mi;
    v[i] = vi;
    master[i] = p;
    if (half_copy != nullptr) half_copy[i] = FromFloat<H>(p);
  }
}

template <typename G, typename H>
__global__ void SgdKernel(int64_t n, float* master, const G* grads, float* buf,
                          H* half_copy, float lr, float momentum,
                          float dampening, float weight_decay, bool nesterov,
                          bool first_step, float grad_scale,
                          const float* device_grad_scale, const int32_t* skip) {
  if (skip != nullptr && *skip != 0) return;
  const float scale =
      grad_scale * (device_grad_scale != nullptr ? *device_grad_scale : 1.0f);
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    float p = master[i];
    float g = ToFloat(grads[i]) * scale + weight_decay * p;
    if (momentum != 0.0f) {
      const float b =
          first_step ? g : momentum * buf[i] + (1.0f - dampening) * g;
      buf[i] = b;
      g = nesterov ? g + momentum * b : b;
    }
    p -= lr * g;
    master[i] = p;
    if (half_copy != nullptr) half_copy[i] = FromFloat<H>(p);
  }
}

// ------------------------------------------------- mixed precision and norms

template <typename T>
__global__ void UnscaleKernel(T* grads, int64_t n, float inv_scale,
                              int32_t* found_inf) {
  bool bad = false;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const float g = ToFloat(grads[i]) * inv_scale;
    bad |= !isfinite(g);
    if (inv_scale != 1.0f) grads[i] = FromFloat<T>(g);
  }
  if (bad) *found_inf = 1;
}

__device__ float BlockSum(float value) {
  __shared__ float warp_sums[32];
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(kFullMask, value, offset);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / 32;
  value = (threadIdx.x < warps) ? warp_sums[threadIdx.x] : 0.0f;
  if (warp == 0) {
    for (int offset = 16; offset > 0; offset /= 2) {
      value += __shfl_xor_sync(kFullMask, value, offset);
    }
  }
  return value;  // Valid in thread 0.
}

template <typename T>
__global__ void SquaredSumPartialKernel(const T* x, int64_t n,
                                        float* partials) {
  float sum = 0.0f;
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const float v = ToFloat(x[i]);
    sum += v * v;
  }
  sum = BlockSum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void SumPartialsKernel(const float* partials, int count,
                                  float* out) {
  float sum = 0.0f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  sum = BlockSum(sum);
  if (threadIdx.x == 0) *out = sum;
}

__global__ void ClipCoefficientKernel(const float* norm_sq, float pre_scale,
                                      float max_norm, float* coef) {
  if (max_norm <= 0.0f) {
    *coef = pre_scale;
    return;
  }
  const float norm = sqrtf(*norm_sq) * pre_scale;
  *coef = pre_scale * fminf(1.0f, max_norm / (norm + 1e-6f));
}

template <typename S, typename D>
__global__ void CastKernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    dst[i] = FromFloat<D>(ToFloat(src[i]));
  }
}

// ----------------------------------------------------- epilogue fallbacks

// ReluMaskLd() of gemm.h, callable on the device.
__device__ __forceinline__ int64_t MaskLd(int64_t n) {
  return (n + 127) / 128 * 128;
}

// One warp per 32 consecutive columns of a row; the warp's ballot is exactly
// one 32-bit word of the mask.
template <typename T>
__global__ void BiasActivationKernel(T* c, const T* bias, int64_t m, int64_t n,
                                     bool relu, uint32_t* aux) {
  const int64_t words_per_row = (n + 31) / 32;
  const int64_t ld_words = MaskLd(n) / 32;
  const int64_t total_warps = m * words_per_row;
  const int lane = threadIdx.x % 32;
  const int64_t warps_in_grid = GridStride() / 32;
  for (int64_t w = GlobalThread() / 32; w < total_warps; w += warps_in_grid) {
    const int64_t i = w / words_per_row, word = w % words_per_row;
    const int64_t j = word * 32 + lane;
    float out = 0.0f;
    if (j < n) {
      out = ToFloat(c[i * n + j]);
      if (bias != nullptr) out += ToFloat(bias[j]);
      if (relu) out = fmaxf(out, 0.0f);
      c[i * n + j] = FromFloat<T>(out);
    }
    const unsigned bits = __ballot_sync(kFullMask, j < n && out > 0.0f);
    if (aux != nullptr && lane == 0) aux[i * ld_words + word] = bits;
  }
}

template <typename T>
__global__ void ApplyReluMaskKernel(T* c, const uint32_t* aux, int64_t m,
                                    int64_t n) {
  const int64_t ld = MaskLd(n);
  for (int64_t idx = GlobalThread(); idx < m * n; idx += GridStride()) {
    const int64_t i = idx / n, j = idx % n;
    const int64_t bit = i * ld + j;
    if (((aux[bit / 32] >> (bit % 32)) & 1u) == 0) c[idx] = FromFloat<T>(0.0f);
  }
}

constexpr int kColumnSumRows = 16;

template <typename T, typename O>
__global__ void ColumnSumKernel(const T* x, int64_t rows, int64_t cols,
                                O* out) {
  __shared__ float partial[kColumnSumRows][33];
  const int64_t j = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  float sum = 0.0f;
  if (j < cols) {
    for (int64_t i = threadIdx.y; i < rows; i += kColumnSumRows) {
      sum += ToFloat(x[i * cols + j]);
    }
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols) {
    float total = 0.0f;
    for (int r = 0; r < kColumnSumRows; ++r) total += partial[r][threadIdx.x];
    out[j] = FromFloat<O>(total);
  }
}

template <typename T, typename O>
__global__ void RowSumKernel(const T* x, int64_t rows, int64_t cols, O* out) {
  const int64_t row =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int64_t j = lane; j < cols; j += 32) sum += ToFloat(x[row * cols + j]);
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_xor_sync(kFullMask, sum, offset);
  }
  if (lane == 0) out[row] = FromFloat<O>(sum);
}

absl::Status CheckCount(int64_t n, const char* what) {
  if (n < 0) return absl::InvalidArgumentError(std::string(what) + ": n < 0");
  return absl::OkStatus();
}

}  // namespace

absl::Status SoftmaxCrossEntropy(DType type, const void* logits,
                                 const int32_t* labels, int64_t batch,
                                 int64_t classes, float grad_scale,
                                 void* dlogits, float* losses, int32_t* correct,
                                 cudaStream_t stream) {
  if (batch < 0 || classes <= 0) {
    return absl::InvalidArgumentError("SoftmaxCrossEntropy: bad shape");
  }
  if (batch == 0) return absl::OkStatus();
  if (logits == nullptr || labels == nullptr || dlogits == nullptr ||
      losses == nullptr) {
    return absl::InvalidArgumentError("SoftmaxCrossEntropy: null pointer");
  }
  constexpr int kRowsPerBlock = kThreads / 32;
  const unsigned grid =
      static_cast<unsigned>((batch + kRowsPerBlock - 1) / kRowsPerBlock);
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    SoftmaxCrossEntropyKernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<const T*>(logits), labels, batch, classes, grad_scale,
        static_cast<T*>(dlogits), losses, correct);
  });
  return LaunchStatus("SoftmaxCrossEntropyKernel");
}

absl::Status CountCorrect(DType type, const void* logits, const int32_t* labels,
                          int64_t batch, int64_t classes, float* correct,
                          cudaStream_t stream) {
  if (batch < 0 || classes <= 0) {
    return absl::InvalidArgumentError("CountCorrect: bad shape");
  }
  if (batch == 0) return absl::OkStatus();
  if (logits == nullptr || labels == nullptr || correct == nullptr) {
    return absl::InvalidArgumentError("CountCorrect: null pointer");
  }
  constexpr int kRowsPerBlock = kThreads / 32;
  const unsigned grid =
      static_cast<unsigned>((batch + kRowsPerBlock - 1) / kRowsPerBlock);
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    CountCorrectKernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<const T*>(logits), labels, batch, classes, correct);
  });
  return LaunchStatus("CountCorrectKernel");
}

absl::Status ReluGradFromOutput(DType type, void* dy, const void* y, int64_t n,
                                cudaStream_t stream) {
  if (auto s = CheckCount(n, "ReluGradFromOutput"); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (dy == nullptr || y == nullptr) {
    return absl::InvalidArgumentError("ReluGradFromOutput: null pointer");
  }
  const unsigned grid = GridFor(n, kThreads);
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    ReluGradFromOutputKernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<T*>(dy), static_cast<const T*>(y), n);
  });
  return LaunchStatus("ReluGradFromOutputKernel");
}

absl::Status AdamW(const AdamWParams& params, int64_t n, float* master,
                   DType grad_type, const void* grads, float* m, float* v,
                   DType half_type, void* half_copy,
                   const float* device_grad_scale, const int32_t* skip,
                   cudaStream_t stream) {
  if (auto s = CheckCount(n, "AdamW"); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (master == nullptr || grads == nullptr || m == nullptr || v == nullptr) {
    return absl::InvalidArgumentError("AdamW: null pointer");
  }
  if (params.step < 1) return absl::InvalidArgumentError("AdamW: step < 1");
  const double bc1 = 1.0 - std::pow(double{params.beta1}, params.step);
  const double bc2 = 1.0 - std::pow(double{params.beta2}, params.step);
  const float step_size = static_cast<float>(params.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float decay_factor = 1.0f - params.lr * params.weight_decay;
  const unsigned grid = GridFor(n, kThreads);
  const DType copy_type = half_copy != nullptr ? half_type : DType::kF32;
  Dispatch(grad_type, [&](auto grad_tag) {
    using G = decltype(grad_tag);
    Dispatch(copy_type, [&](auto half_tag) {
      using H = decltype(half_tag);
      AdamWKernel<G, H><<<grid, kThreads, 0, stream>>>(
          n, master, static_cast<const G*>(grads), m, v,
          static_cast<H*>(half_copy), params.lr, params.beta1, params.beta2,
          params.eps, decay_factor, step_size, bc2_sqrt, params.grad_scale,
          device_grad_scale, skip);
    });
  });
  return LaunchStatus("AdamWKernel");
}

absl::Status SgdMomentum(const SgdParams& params, int64_t n, float* master,
                         DType grad_type, const void* grads,
                         float* momentum_buf, DType half_type, void* half_copy,
                         const float* device_grad_scale, const int32_t* skip,
                         cudaStream_t stream) {
  if (auto s = CheckCount(n, "SgdMomentum"); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (master == nullptr || grads == nullptr ||
      (params.momentum != 0.0f && momentum_buf == nullptr)) {
    return absl::InvalidArgumentError("SgdMomentum: null pointer");
  }
  const unsigned grid = GridFor(n, kThreads);
  const DType copy_type = half_copy != nullptr ? half_type : DType::kF32;
  Dispatch(grad_type, [&](auto grad_tag) {
    using G = decltype(grad_tag);
    Dispatch(copy_type, [&](auto half_tag) {
      using H = decltype(half_tag);
      SgdKernel<G, H><<<grid, kThreads, 0, stream>>>(
          n, master, static_cast<const G*>(grads), momentum_buf,
          static_cast<H*>(half_copy), params.lr, params.momentum,
          params.dampening, params.weight_decay, params.nesterov,
          params.first_step, params.grad_scale, device_grad_scale, skip);
    });
  });
  return LaunchStatus("SgdKernel");
}

absl::Status UnscaleAndCheckFinite(DType type, void* grads, int64_t n,
                                   float inv_scale, int32_t* found_inf,
                                   cudaStream_t stream) {
  if (auto s = CheckCount(n, "UnscaleAndCheckFinite"); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (grads == nullptr || found_inf == nullptr) {
    return absl::InvalidArgumentError("UnscaleAndCheckFinite: null pointer");
  }
  const unsigned grid = GridFor(n, kThreads, 4096);
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    UnscaleKernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(grads), n,
                                                    inv_scale, found_inf);
  });
  return LaunchStatus("UnscaleKernel");
}

absl::Status GradNormSquared(DType type, const void* grads, int64_t n,
                             float* scratch, float* out, cudaStream_t stream) {
  if (auto s = CheckCount(n, "GradNormSquared"); !s.ok()) return s;
  if (scratch == nullptr || out == nullptr || (n > 0 && grads == nullptr)) {
    return absl::InvalidArgumentError("GradNormSquared: null pointer");
  }
  // The grid depends only on n, so the summation order (and the result) is
  // the same on every run.
  const unsigned grid = GridFor(n, kThreads, kGradNormScratchFloats);
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    SquaredSumPartialKernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<const T*>(grads), n, scratch);
  });
  if (auto s = LaunchStatus("SquaredSumPartialKernel"); !s.ok()) return s;
  SumPartialsKernel<<<1, 1024, 0, stream>>>(scratch, static_cast<int>(grid),
                                            out);
  return LaunchStatus("SumPartialsKernel");
}

absl::Status ClipCoefficient(const float* norm_sq, float pre_scale,
                             float max_norm, float* coef, cudaStream_t stream) {
  if (norm_sq == nullptr || coef == nullptr) {
    return absl::InvalidArgumentError("ClipCoefficient: null pointer");
  }
  ClipCoefficientKernel<<<1, 1, 0, stream>>>(norm_sq, pre_scale, max_norm,
                                             coef);
  return LaunchStatus("ClipCoefficientKernel");
}

absl::Status Cast(DType from, const void* src, DType to, void* dst, int64_t n,
                  cudaStream_t stream) {
  if (auto s = CheckCount(n, "Cast"); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (src == nullptr || dst == nullptr) {
    return absl::InvalidArgumentError("Cast: null pointer");
  }
  const unsigned grid = GridFor(n, kThreads);
  Dispatch(from, [&](auto src_tag) {
    using S = decltype(src_tag);
    Dispatch(to, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      CastKernel<S, D><<<grid, kThreads, 0, stream>>>(
          static_cast<const S*>(src), static_cast<D*>(dst), n);
    });
  });
  return LaunchStatus("CastKernel");
}

absl::Status BiasActivation(DType type, void* c, const void* bias, int64_t m,
                            int64_t n, bool relu, uint8_t* aux,
                            cudaStream_t stream) {
  if (m < 0 || n < 0) return absl::InvalidArgumentError("BiasActivation");
  if (m == 0 || n == 0) return absl::OkStatus();
  if (c == nullptr) return absl::InvalidArgumentError("BiasActivation: c");
  if (reinterpret_cast<uintptr_t>(aux) % 4 != 0) {
    return absl::InvalidArgumentError("BiasActivation: aux not 4-aligned");
  }
  const unsigned grid = GridFor(m * ((n + 31) / 32) * 32, kThreads);
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    BiasActivationKernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<T*>(c), static_cast<const T*>(bias), m, n, relu,
        reinterpret_cast<uint32_t*>(aux));
  });
  return LaunchStatus("BiasActivationKernel");
}

absl::Status ApplyReluMask(DType type, void* c, const uint8_t* aux, int64_t m,
                           int64_t n, cudaStream_t stream) {
  if (m < 0 || n < 0) return absl::InvalidArgumentError("ApplyReluMask");
  if (m == 0 || n == 0) return absl::OkStatus();
  if (c == nullptr || aux == nullptr ||
      reinterpret_cast<uintptr_t>(aux) % 4 != 0) {
    return absl::InvalidArgumentError("ApplyReluMask: bad pointer");
  }
  const unsigned grid = GridFor(m * n, kThreads);
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    ApplyReluMaskKernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<T*>(c), reinterpret_cast<const uint32_t*>(aux), m, n);
  });
  return LaunchStatus("ApplyReluMaskKernel");
}

absl::Status ColumnSum(DType x_type, const void* x, int64_t rows, int64_t cols,
                       DType out_type, void* out, cudaStream_t stream) {
  if (rows < 0 || cols < 0) return absl::InvalidArgumentError("ColumnSum");
  if (cols == 0) return absl::OkStatus();
  if ((rows > 0 && x == nullptr) || out == nullptr) {
    return absl::InvalidArgumentError("ColumnSum: null pointer");
  }
  const dim3 block(32, kColumnSumRows);
  const unsigned grid = static_cast<unsigned>((cols + 31) / 32);
  Dispatch(x_type, [&](auto x_tag) {
    using T = decltype(x_tag);
    Dispatch(out_type, [&](auto out_tag) {
      using O = decltype(out_tag);
      ColumnSumKernel<T, O><<<grid, block, 0, stream>>>(
          static_cast<const T*>(x), rows, cols, static_cast<O*>(out));
    });
  });
  return LaunchStatus("ColumnSumKernel");
}

absl::Status RowSum(DType x_type, const void* x, int64_t rows, int64_t cols,
                    DType out_type, void* out, cudaStream_t stream) {
  if (rows < 0 || cols < 0) return absl::InvalidArgumentError("RowSum");
  if (rows == 0) return absl::OkStatus();
  if ((cols > 0 && x == nullptr) || out == nullptr) {
    return absl::InvalidArgumentError("RowSum: null pointer");
  }
  constexpr int kRowsPerBlock = kThreads / 32;
  const unsigned grid =
      static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  Dispatch(x_type, [&](auto x_tag) {
    using T = decltype(x_tag);
    Dispatch(out_type, [&](auto out_tag) {
      using O = decltype(out_tag);
      RowSumKernel<T, O><<<grid, kThreads, 0, stream>>>(
          static_cast<const T*>(x), rows, cols, static_cast<O*>(out));
    });
  });
  return LaunchStatus("RowSumKernel");
}

}  // namespace tupa::trainer::cuda

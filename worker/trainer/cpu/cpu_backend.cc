#include "worker/trainer/cpu/cpu_backend.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tupa::trainer {
namespace {

constexpr size_t kAlignment = 64;

// Hot elementwise loops are compiled for the baseline ISA and for AVX2 and
// AVX-512 machines; the loader picks the best at run time (ifunc).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TUPA_MULTIVERSION \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TUPA_MULTIVERSION
#endif

TUPA_MULTIVERSION
void AdamWKernel(float* __restrict params, const float* __restrict grads,
                 float* __restrict m, float* __restrict v, size_t n,
                 float decay, float beta1, float beta2, float one_minus_beta1,
                 float one_minus_beta2, float step_size, float inv_bc2_sqrt,
                 float eps, float scale) {
  for (size_t i = 0; i < n; ++i) {
    const float g = grads[i] * scale;
    const float mi = beta1 * m[i] + one_minus_beta1 * g;
    const float vi = beta2 * v[i] + one_minus_beta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) * inv_bc2_sqrt + eps;
    params[i] = params[i] * decay - step_size * (mi / denom);
  }
}

TUPA_MULTIVERSION
void BiasActivation(float* __restrict y, const float* __restrict b, int rows,
                    int cols, bool relu) {
  for (int r = 0; r < rows; ++r) {
    float* __restrict row = y + static_cast<size_t>(r) * cols;
    if (relu) {
      for (int c = 0; c < cols; ++c) row[c] = std::max(row[c] + b[c], 0.0f);
    } else {
      for (int c = 0; c < cols; ++c) row[c] += b[c];
    }
  }
}

// Masks dy by (y > 0) when relu, and writes db = column sums of dy.
TUPA_MULTIVERSION
void ReluMaskAndBiasGrad(float* __restrict dy, const float* __restrict y,
                         float* __restrict db, int rows, int cols, bool relu) {
  std::fill(db, db + cols, 0.0f);
  for (int r = 0; r < rows; ++r) {
    float* __restrict drow = dy + static_cast<size_t>(r) * cols;
    const float* __restrict yrow = y + static_cast<size_t>(r) * cols;
    if (relu) {
      for (int c = 0; c < cols; ++c) drow[c] = yrow[c] > 0.0f ? drow[c] : 0.0f;
    }
    for (int c = 0; c < cols; ++c) db[c] += drow[c];
  }
}

void* AlignedAlloc(size_t bytes) {
  size_t rounded =
      (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded);
}

}  // namespace

void SetBlasThreads(int n) {
  using SetThreadsFn = void (*)(int);
  auto fn = reinterpret_cast<SetThreadsFn>(
      ::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (fn != nullptr && n >= 1) fn(n);
}

CpuBackend::CpuBackend() = default;

CpuBackend::~CpuBackend() = default;

absl::StatusOr<void*> CpuBackend::Alloc(size_t bytes) {
  void* p = AlignedAlloc(bytes);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes"));
  }
  return p;
}

void CpuBackend::Free(void* p) { std::free(p); }

absl::StatusOr<void*> CpuBackend::AllocHost(size_t bytes) {
  return Alloc(bytes);
}

void CpuBackend::FreeHost(void* p) { std::free(p); }

absl::Status CpuBackend::CopyToDevice(void* dst, const void* src,
                                      size_t bytes) {
  std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

absl::Status CpuBackend::CopyToHost(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

absl::Status CpuBackend::Zero(void* dst, size_t bytes) {
  std::memset(dst, 0, bytes);
  return absl::OkStatus();
}

absl::Status CpuBackend::LoadBatch(const float* host_x,
                                   const int32_t* host_labels, int batch,
                                   int features, void* x, int32_t* labels) {
  if (host_x != x) {
    std::memcpy(x, host_x, sizeof(float) * batch * features);
  }
  if (host_labels != labels) {
    std::memcpy(labels, host_labels, sizeof(int32_t) * batch);
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::LinearForward(const void* x_raw, const float* w,
                                       const float* b, int batch, int in,
                                       int out, bool relu, void* y_raw) {
  const float* x = static_cast<const float*>(x_raw);
  float* y = static_cast<float*>(y_raw);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, out, in, 1.0f, x,
              in, w, in, 0.0f, y, out);
  if (b == nullptr) {
    if (relu) {
      float* end = y + static_cast<size_t>(batch) * out;
      for (float* p = y; p != end; ++p) *p = std::max(*p, 0.0f);
    }
    return absl::OkStatus();
  }
  for (int r = 0; r < batch; ++r) {
    float* __restrict row = y + static_cast<size_t>(r) * out;
    if (relu) {
      for (int c = 0; c < out; ++c) row[c] = std::max(row[c] + b[c], 0.0f);
    } else {
      for (int c = 0; c < out; ++c) row[c] += b[c];
    }
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::BiasActivation(void* y, const float* b, int batch,
                                        int out, bool relu) {
  ::tupa::trainer::BiasActivation(static_cast<float*>(y), b, batch, out, relu);
  return absl::OkStatus();
}

absl::Status CpuBackend::LinearBackward(const void* x_raw, const float* w,
                                        const void* y_raw, void* dy_raw,
                                        int batch, int in, int out, bool relu,
                                        float* dw, float* db, void* dx_raw) {
  const float* x = static_cast<const float*>(x_raw);
  const float* y = static_cast<const float*>(y_raw);
  float* dy = static_cast<float*>(dy_raw);
  ReluMaskAndBiasGrad(dy, y, db, batch, out, relu);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, batch, 1.0f, dy,
              out, x, in, 0.0f, dw, in);
  if (dx_raw != nullptr) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, in, out, 1.0f,
                dy, out, w, in, 0.0f, static_cast<float*>(dx_raw), in);
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::SoftmaxCrossEntropy(const void* logits_raw,
                                             const int32_t* labels, int batch,
                                             int classes, float grad_scale,
                                             void* dlogits_raw,
                                             float* loss_sum) {
  const float* logits = static_cast<const float*>(logits_raw);
  float* dlogits = static_cast<float*>(dlogits_raw);
  double total = 0.0;
  for (int r = 0; r < batch; ++r) {
    const float* row = logits + static_cast<size_t>(r) * classes;
    float* drow = dlogits + static_cast<size_t>(r) * classes;
    const int label = labels[r];
    if (label < 0 || label >= classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", label, " out of range [0, ", classes, ")"));
    }
    float max = row[0];
    for (int c = 1; c < classes; ++c) max = std::max(max, row[c]);
    const float label_logit = row[label];
    float sum = 0.0f;
    for (int c = 0; c < classes; ++c) {
      drow[c] = std::exp(row[c] - max);
      sum += drow[c];
    }
    total += std::log(sum) + max - label_logit;
    const float inv = grad_scale / sum;
    for (int c = 0; c < classes; ++c) drow[c] *= inv;
    drow[label] -= grad_scale;
  }
  *loss_sum = static_cast<float>(total);
  return absl::OkStatus();
}

absl::Status CpuBackend::CountCorrect(const void* logits_raw,
                                      const int32_t* labels, int batch,
                                      int classes, float* correct) {
  const float* logits = static_cast<const float*>(logits_raw);
  int count = 0;
  for (int r = 0; r < batch; ++r) {
    const float* row = logits + static_cast<size_t>(r) * classes;
    int best = 0;
    for (int c = 1; c < classes; ++c) {
      if (row[c] > row[best]) best = c;
    }
    count += best == labels[r] ? 1 : 0;
  }
  *correct += static_cast<float>(count);
  return absl::OkStatus();
}

absl::StatusOr<double> CpuBackend::SumOfSquares(const float* x, size_t n) {
  // Eight independent accumulators so the loop vectorises without
  // reassociation flags.
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) {
      const double v = x[i + k];
      acc[k] += v * v;
    }
  }
  double total = 0.0;
  for (; i < n; ++i) total += static_cast<double>(x[i]) * x[i];
  for (double a : acc) total += a;
  return total;
}

absl::Status CpuBackend::AdamWStep(float* __restrict params,
                                   const float* __restrict grads,
                                   float* __restrict m, float* __restrict v,
                                   size_t n, const AdamWHyper& h) {
  const float decay = 1.0f - h.lr * h.weight_decay;
  const float beta1 = h.beta1;
  const float beta2 = h.beta2;
  const float one_minus_beta1 = 1.0f - h.beta1;
  const float one_minus_beta2 = 1.0f - h.beta2;
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), h.step);
  const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), h.step);
  const float step_size = static_cast<float>(h.lr / bc1);
  const float inv_bc2_sqrt = static_cast<float>(1.0 / std::sqrt(bc2));
  AdamWKernel(params, grads, m, v, n, decay, beta1, beta2, one_minus_beta1,
              one_minus_beta2, step_size, inv_bc2_sqrt, h.eps, h.grad_scale);
  return absl::OkStatus();
}

absl::Status CpuBackend::SgdStep(float* __restrict params,
                                 const float* __restrict grads,
                                 float* __restrict buf, size_t n,
                                 const SgdHyper& h) {
  const float lr = h.lr;
  const float mom = h.momentum;
  const float wd = h.weight_decay;
  const float scale = h.grad_scale;
  if (h.first_step || mom == 0.0f) {
    for (size_t i = 0; i < n; ++i) {
      const float g = grads[i] * scale + wd * params[i];
      buf[i] = g;
      params[i] -= lr * g;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const float g = grads[i] * scale + wd * params[i];
      const float b = mom * buf[i] + g;
      buf[i] = b;
      params[i] -= lr * b;
    }
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::InitCollectives(KvStore& store, int rank,
                                         int world_size,
                                         const CollectiveOptions& options) {
  const int t = options.tensor_parallel;
  if (t < 1 || world_size % t != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor parallel ", t, " does not divide world size ", world_size));
  }
  tensor_size_ = t;
  data_size_ = world_size / t;
  if (t > 1) {
    // Tensor group first on every rank, then data: groups of one kind are
    // disjoint, so no rank waits on a peer that waits on it.
    tensor_comm_ = std::make_unique<GlooComm>();
    RETURN_IF_ERROR(tensor_comm_->Init(store, rank % t, t, options.bind_address,
                                       options.timeout,
                                       absl::StrCat("gloo/tp", rank / t)));
  }
  if (data_size_ > 1) {
    data_comm_ = std::make_unique<GlooComm>();
    // T = 1: the data group is the world, under the world's keys.
    RETURN_IF_ERROR(data_comm_->Init(
        store, rank / t, data_size_, options.bind_address, options.timeout,
        t == 1 ? std::string("gloo") : absl::StrCat("gloo/dp", rank % t)));
  }
  return absl::OkStatus();
}

absl::Status CpuBackend::AllReduceSumAsync(float* data, size_t n) {
  if (data_size_ <= 1) return absl::OkStatus();
  if (data_comm_ == nullptr) {
    return absl::FailedPreconditionError("InitCollectives was not called");
  }
  ++counts_.data_allreduces;
  return data_comm_->AllReduceSumAsync(data, n);
}

absl::Status CpuBackend::WaitAllReduces() {
  if (data_comm_ == nullptr) return absl::OkStatus();
  return data_comm_->Wait();
}

absl::Status CpuBackend::Broadcast(void* data, size_t bytes, int root) {
  if (data_size_ <= 1) return absl::OkStatus();
  if (data_comm_ == nullptr) {
    return absl::FailedPreconditionError("InitCollectives was not called");
  }
  ++counts_.broadcasts;
  return data_comm_->Broadcast(data, bytes, root);
}

absl::Status CpuBackend::TensorAllReduceSum(void* data, size_t n) {
  if (tensor_size_ <= 1) return absl::OkStatus();
  ++counts_.tensor_allreduces;
  return tensor_comm_->AllReduceSumNow(static_cast<float*>(data), n);
}

absl::StatusOr<double> CpuBackend::TensorSumOnHost(double value) {
  if (tensor_size_ <= 1) return value;
  ++counts_.tensor_allreduces;
  RETURN_IF_ERROR(tensor_comm_->AllReduceSumNow(&value, 1));
  return value;
}

}  // namespace tupa::trainer

#include "worker/trainer/cuda/cuda_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/cuda/cuda_status.h"
#include "worker/trainer/cuda/kernels.h"

namespace tupa::trainer {

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(Precision precision,
                                                           int local_rank) {
  ASSIGN_OR_RETURN(auto backend,
                   cuda::CudaBackend::Create(precision, local_rank));
  return std::unique_ptr<Backend>(std::move(backend));
}

namespace cuda {
namespace {

DType ActivationType(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return DType::kBF16;
    case Precision::kFp16:
      return DType::kF16;
    default:
      return DType::kF32;
  }
}

bool Overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a);
  const auto y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    Precision precision, int local_rank) {
  const int devices = CudaDeviceCount();
  // A tupa worker pins each rank to its one device (CUDA_VISIBLE_DEVICES
  // holds one index), so that device is 0 whatever LOCAL_RANK says; run by
  // hand with every device visible, LOCAL_RANK picks one, as under torchrun.
  const int device = devices == 1 ? 0 : local_rank;
  if (device < 0 || device >= devices) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuda backend: no device ", device, " for LOCAL_RANK ",
                     local_rank, " (", devices, " visible)"));
  }
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
  std::unique_ptr<CudaBackend> backend(new CudaBackend(precision, device));
  RETURN_IF_ERROR(backend->Init());
  return backend;
}

CudaBackend::CudaBackend(Precision precision, int device)
    : precision_(precision), act_(ActivationType(precision)), device_(device) {}

absl::Status CudaBackend::Init() {
  ASSIGN_OR_RETURN(compute_, Stream::Create());
  ASSIGN_OR_RETURN(copy_, Stream::Create());
  ASSIGN_OR_RETURN(comm_, Stream::Create());
  ASSIGN_OR_RETURN(compute_ready_, Event::Create());
  ASSIGN_OR_RETURN(comm_done_, Event::Create());
  ASSIGN_OR_RETURN(sync_, Event::Create());
  for (BatchSlot& slot : slots_) {
    ASSIGN_OR_RETURN(slot.copied, Event::Create());
    ASSIGN_OR_RETURN(slot.consumed, Event::Create());
  }
  ASSIGN_OR_RETURN(gemm_, GemmRunner::Create());
  ASSIGN_OR_RETURN(norm_scratch_,
                   DeviceBuffer::Create((kGradNormScratchFloats + 1) * 4));
  ASSIGN_OR_RETURN(host_scalar_, PinnedBuffer::Create(16));
  return absl::OkStatus();
}

CudaBackend::~CudaBackend() {
  // Let queued work finish before buffers it uses are freed.
  if (compute_.get() != nullptr) cudaStreamSynchronize(compute_.get());
  if (copy_.get() != nullptr) cudaStreamSynchronize(copy_.get());
  if (nccl_ == nullptr || nccl_->AsyncError().ok()) {
    if (comm_.get() != nullptr) cudaStreamSynchronize(comm_.get());
  }
  tensor_nccl_.reset();
  nccl_.reset();
}

// ------------------------------------------------------------------ memory

absl::StatusOr<void*> CudaBackend::Alloc(size_t bytes) {
  void* p = nullptr;
  RETURN_IF_ERROR(CudaStatus(cudaMalloc(&p, bytes == 0 ? 1 : bytes),
                             absl::StrCat("cudaMalloc(", bytes, ")")));
  return p;
}

void CudaBackend::Free(void* p) {
  if (p == nullptr) return;
  if (Overlaps(p, 1, params_, params_n_ * 4)) {
    params_ = nullptr;
    params_n_ = 0;
    half_fresh_ = false;
  }
  cudaFree(p);
}

absl::StatusOr<void*> CudaBackend::AllocHost(size_t bytes) {
  void* p = nullptr;
  RETURN_IF_ERROR(CudaStatus(
      cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable),
      "cudaHostAlloc"));
  return p;
}

void CudaBackend::FreeHost(void* p) {
  if (p != nullptr) cudaFreeHost(p);
}

absl::Status CudaBackend::CopyToDevice(void* dst, const void* src,
                                       size_t bytes) {
  Touch(dst, bytes);
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, compute_.get()),
      "cudaMemcpyAsync(H2D)"));
  return WaitCompute();  // `src` may be reused once we return.
}

absl::Status CudaBackend::CopyToHost(void* dst, const void* src, size_t bytes) {
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, compute_.get()),
      "cudaMemcpyAsync(D2H)"));
  return WaitCompute();
}

absl::Status CudaBackend::Zero(void* dst, size_t bytes) {
  Touch(dst, bytes);
  return CudaStatus(cudaMemsetAsync(dst, 0, bytes, compute_.get()),
                    "cudaMemsetAsync");
}

absl::Status CudaBackend::Synchronize() { return WaitCompute(); }

absl::Status CudaBackend::WaitCompute() {
  RETURN_IF_ERROR(CudaStatus(cudaEventRecord(sync_.get(), compute_.get()),
                             "cudaEventRecord"));
  // Polls a communicator whose collectives may sit on the compute stream
  // (tensor ones do, data ones via WaitAllReduces).
  if (tensor_nccl_ != nullptr) {
    return tensor_nccl_->WaitForEvent(sync_.get(), timeout_);
  }
  if (nccl_ != nullptr) return nccl_->WaitForEvent(sync_.get(), timeout_);
  return CudaStatus(cudaEventSynchronize(sync_.get()), "cudaEventSynchronize");
}

void CudaBackend::Touch(const void* p, size_t bytes) {
  if (Overlaps(p, bytes, params_, params_n_ * sizeof(float))) {
    half_fresh_ = false;
  }
}

// -------------------------------------------------------------------- data

absl::Status CudaBackend::LoadBatch(const float* host_x,
                                    const int32_t* host_labels, int batch,
                                    int features, void* x, int32_t* labels) {
  if (batch <= 0 || features <= 0) {
    return absl::InvalidArgumentError("LoadBatch: empty batch");
  }
  const size_t n = static_cast<size_t>(batch) * features;
  Touch(x, n * SizeOf(act_));
  Touch(labels, batch * sizeof(int32_t));
  BatchSlot& slot = slots_[next_slot_];
  next_slot_ ^= 1;
  if (slot.x.bytes() < n * 4 || slot.labels.bytes() < batch * 4u) {
    // Growing: the slot's previous batch must be fully consumed first.
    if (slot.in_use) {
      RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(slot.consumed.get()),
                                 "cudaEventSynchronize"));
    }
    ASSIGN_OR_RETURN(slot.x, DeviceBuffer::Create(n * 4));
    ASSIGN_OR_RETURN(slot.labels, DeviceBuffer::Create(batch * 4u));
    slot.in_use = false;
  }
  // Copy stream: wait until compute has consumed this slot's last batch.
  if (slot.in_use) {
    RETURN_IF_ERROR(
        CudaStatus(cudaStreamWaitEvent(copy_.get(), slot.consumed.get(), 0),
                   "cudaStreamWaitEvent"));
  }
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(slot.x.data(), host_x, n * 4,
                                 cudaMemcpyHostToDevice, copy_.get()),
                 "cudaMemcpyAsync(batch)"));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(slot.labels.data(), host_labels, batch * 4u,
                                 cudaMemcpyHostToDevice, copy_.get()),
                 "cudaMemcpyAsync(labels)"));
  RETURN_IF_ERROR(CudaStatus(cudaEventRecord(slot.copied.get(), copy_.get()),
                             "cudaEventRecord"));
  // Compute stream: wait for the copy, convert, release the slot.
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamWaitEvent(compute_.get(), slot.copied.get(), 0),
                 "cudaStreamWaitEvent"));
  RETURN_IF_ERROR(Cast(DType::kF32, slot.x.data(), act_, x, n, compute_.get()));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(labels, slot.labels.data(), batch * 4u,
                                 cudaMemcpyDeviceToDevice, compute_.get()),
                 "cudaMemcpyAsync(labels D2D)"));
  RETURN_IF_ERROR(CudaStatus(
      cudaEventRecord(slot.consumed.get(), compute_.get()), "cudaEventRecord"));
  slot.in_use = true;
  // The host buffers may be reused once we return: wait for the DMA only
  // (not for the compute queue).
  return CudaStatus(cudaEventSynchronize(slot.copied.get()),
                    "cudaEventSynchronize(batch copy)");
}

// ------------------------------------------------------------------ layers

absl::Status CudaBackend::OnParamsUpdated(const float* params, size_t n) {
  if (act_ == DType::kF32) return absl::OkStatus();
  if (params != params_ || n != params_n_) {
    ASSIGN_OR_RETURN(half_params_, DeviceBuffer::Create(n * SizeOf(act_)));
    params_ = params;
    params_n_ = n;
    half_fresh_ = false;
  }
  if (half_fresh_) return absl::OkStatus();
  RETURN_IF_ERROR(
      Cast(DType::kF32, params, act_, half_params_.data(), n, compute_.get()));
  half_fresh_ = true;
  return absl::OkStatus();
}

absl::StatusOr<const void*> CudaBackend::GemmWeights(const float* p,
                                                     size_t count) const {
  if (act_ == DType::kF32) return p;
  if (params_ == nullptr || p < params_ || p + count > params_ + params_n_) {
    return absl::FailedPreconditionError(
        "cuda backend: weights outside the block passed to OnParamsUpdated");
  }
  return static_cast<const char*>(half_params_.data()) +
         (p - params_) * SizeOf(act_);
}

void* CudaBackend::HalfCopyFor(const float* p, size_t count) const {
  if (act_ == DType::kF32 || params_ == nullptr || p < params_ ||
      p + count > params_ + params_n_) {
    return nullptr;
  }
  return static_cast<char*>(half_params_.data()) + (p - params_) * SizeOf(act_);
}

absl::Status CudaBackend::LinearForward(const void* x, const float* w,
                                        const float* b, int batch, int in,
                                        int out, bool relu, void* y) {
  ASSIGN_OR_RETURN(const void* w_gemm,
                   GemmWeights(w, static_cast<size_t>(out) * in));
  const void* b_gemm = nullptr;
  if (b != nullptr) {
    ASSIGN_OR_RETURN(b_gemm, GemmWeights(b, out));
  }
  Touch(y, static_cast<size_t>(batch) * out * SizeOf(act_));
  GemmArgs args;
  args.m = batch, args.n = out, args.k = in;
  args.trans_b = true;  // w is [out, in].
  args.ab_type = act_, args.c_type = act_;
  args.a = x, args.b = w_gemm, args.c = y;
  if (b == nullptr) {
    args.epilogue = Epilogue::kNone;
    RETURN_IF_ERROR(gemm_->Run(args, compute_.get()));
    if (!relu) return absl::OkStatus();
    return cuda::BiasActivation(act_, y, nullptr, batch, out, true, nullptr,
                                compute_.get());
  }
  args.epilogue = relu ? Epilogue::kReluBias : Epilogue::kBias;
  args.bias = b_gemm;
  return gemm_->Run(args, compute_.get());
}

absl::Status CudaBackend::BiasActivation(void* y, const float* b, int batch,
                                         int out, bool relu) {
  // The GEMM epilogues take the bias in the activation type; so does the
  // kernel (the low-precision copy of the parameters).
  ASSIGN_OR_RETURN(const void* b_act, GemmWeights(b, out));
  Touch(y, static_cast<size_t>(batch) * out * SizeOf(act_));
  return cuda::BiasActivation(act_, y, b_act, batch, out, relu, nullptr,
                              compute_.get());
}

absl::Status CudaBackend::LinearBackward(const void* x, const float* w,
                                         const void* y, void* dy, int batch,
                                         int in, int out, bool relu, float* dw,
                                         float* db, void* dx) {
  const size_t dy_n = static_cast<size_t>(batch) * out;
  if (relu) {
    // The interface masks dy by this layer's own output, so the mask cannot
    // ride on the previous GEMM's DRELU epilogue; one elementwise pass.
    RETURN_IF_ERROR(ReluGradFromOutput(act_, dy, y, dy_n, compute_.get()));
  }
  // dw[out, in] = dyᵀ · x in fp32, and db[out] = Σ_rows dy from the same
  // GEMM (bias gradient of the transposed A operand).
  GemmArgs grad_w;
  grad_w.m = out, grad_w.n = in, grad_w.k = batch;
  grad_w.trans_a = true;
  grad_w.ab_type = act_, grad_w.c_type = DType::kF32;
  grad_w.a = dy, grad_w.b = x, grad_w.c = dw;
  grad_w.epilogue = Epilogue::kBiasGradA;
  grad_w.bias_grad = db;
  Touch(dw, static_cast<size_t>(out) * in * 4);
  Touch(db, static_cast<size_t>(out) * 4);
  RETURN_IF_ERROR(gemm_->Run(grad_w, compute_.get()));
  if (dx == nullptr) return absl::OkStatus();
  ASSIGN_OR_RETURN(const void* w_gemm,
                   GemmWeights(w, static_cast<size_t>(out) * in));
  Touch(dx, static_cast<size_t>(batch) * in * SizeOf(act_));
  GemmArgs grad_x;  // dx[batch, in] = dy[batch, out] · w[out, in]
  grad_x.m = batch, grad_x.n = in, grad_x.k = out;
  grad_x.ab_type = act_, grad_x.c_type = act_;
  grad_x.a = dy, grad_x.b = w_gemm, grad_x.c = dx;
  return gemm_->Run(grad_x, compute_.get());
}

absl::Status CudaBackend::EnsureScratch(size_t loss_floats) {
  if (losses_.bytes() >= loss_floats * 4) return absl::OkStatus();
  RETURN_IF_ERROR(WaitCompute());  // The old buffer may still be in use.
  ASSIGN_OR_RETURN(losses_, DeviceBuffer::Create(loss_floats * 4));
  return absl::OkStatus();
}

absl::Status CudaBackend::SoftmaxCrossEntropy(const void* logits,
                                              const int32_t* labels, int batch,
                                              int classes, float grad_scale,
                                              void* dlogits, float* loss_sum) {
  RETURN_IF_ERROR(EnsureScratch(batch));
  RETURN_IF_ERROR(cuda::SoftmaxCrossEntropy(
      act_, logits, labels, batch, classes, grad_scale, dlogits,
      losses_.as<float>(), nullptr, compute_.get()));
  // Deterministic sum of the per-row losses (no atomics).
  return RowSum(DType::kF32, losses_.data(), 1, batch, DType::kF32, loss_sum,
                compute_.get());
}

absl::Status CudaBackend::CountCorrect(const void* logits,
                                       const int32_t* labels, int batch,
                                       int classes, float* correct) {
  return cuda::CountCorrect(act_, logits, labels, batch, classes, correct,
                            compute_.get());
}

// --------------------------------------------------------------- optimizer

absl::StatusOr<double> CudaBackend::SumOfSquares(const float* x, size_t n) {
  float* scratch = norm_scratch_.as<float>();
  float* result = scratch + kGradNormScratchFloats;
  RETURN_IF_ERROR(
      GradNormSquared(DType::kF32, x, n, scratch, result, compute_.get()));
  RETURN_IF_ERROR(CopyToHost(host_scalar_.data(), result, sizeof(float)));
  return double{*host_scalar_.as<float>()};
}

absl::Status CudaBackend::AdamWStep(float* params, const float* grads, float* m,
                                    float* v, size_t n,
                                    const AdamWHyper& hyper) {
  AdamWParams p;
  p.lr = hyper.lr;
  p.beta1 = hyper.beta1;
  p.beta2 = hyper.beta2;
  p.eps = hyper.eps;
  p.weight_decay = hyper.weight_decay;
  p.step = hyper.step;
  p.grad_scale = hyper.grad_scale;
  // The fused kernel refreshes the half copy of the parameters it updates.
  return AdamW(p, n, params, DType::kF32, grads, m, v, act_,
               HalfCopyFor(params, n), nullptr, nullptr, compute_.get());
}

absl::Status CudaBackend::SgdStep(float* params, const float* grads,
                                  float* momentum_buf, size_t n,
                                  const SgdHyper& hyper) {
  SgdParams p;
  p.lr = hyper.lr;
  p.momentum = hyper.momentum;
  p.weight_decay = hyper.weight_decay;
  p.first_step = hyper.first_step;
  p.grad_scale = hyper.grad_scale;
  return SgdMomentum(p, n, params, DType::kF32, grads, momentum_buf, act_,
                     HalfCopyFor(params, n), nullptr, nullptr, compute_.get());
}

// ------------------------------------------------------------- collectives

absl::Status CudaBackend::InitCollectives(KvStore& store, int rank,
                                          int world_size,
                                          const CollectiveOptions& options) {
  if (nccl_ != nullptr || tensor_nccl_ != nullptr) {
    return absl::FailedPreconditionError("InitCollectives called twice");
  }
  const int t = options.tensor_parallel;
  if (t < 1 || world_size % t != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor parallel ", t, " does not divide world size ", world_size));
  }
  timeout_ = options.timeout;
  tensor_size_ = t;
  data_size_ = world_size / t;
  if (t > 1) {
    // Tensor groups first on every rank, then data groups (see the CPU
    // backend): each group's init waits only for its own members.
    ASSIGN_OR_RETURN(tensor_nccl_,
                     NcclCommunicator::Create(
                         store, rank % t, t, options.timeout,
                         absl::StrCat("tupa/nccl_unique_id/tp", rank / t)));
    ASSIGN_OR_RETURN(tensor_scalar_, DeviceBuffer::Create(2 * sizeof(float)));
  }
  if (data_size_ > 1) {
    ASSIGN_OR_RETURN(
        nccl_, NcclCommunicator::Create(
                   store, rank / t, data_size_, options.timeout,
                   t == 1 ? std::string("tupa/nccl_unique_id")
                          : absl::StrCat("tupa/nccl_unique_id/dp", rank % t)));
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::AllReduceSumAsync(float* data, size_t n) {
  if (data_size_ == 1) return absl::OkStatus();
  if (nccl_ == nullptr) {
    return absl::FailedPreconditionError("AllReduce before InitCollectives");
  }
  Touch(data, n * sizeof(float));
  // Order the side stream after the compute that produced this bucket.
  RETURN_IF_ERROR(
      CudaStatus(cudaEventRecord(compute_ready_.get(), compute_.get()),
                 "cudaEventRecord"));
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamWaitEvent(comm_.get(), compute_ready_.get(), 0),
                 "cudaStreamWaitEvent"));
  reduces_pending_ = true;
  ++counts_.data_allreduces;
  return nccl_->AllReduce(data, n, DType::kF32, ncclSum, comm_.get());
}

absl::Status CudaBackend::WaitAllReduces() {
  if (nccl_ == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(nccl_->AsyncError());
  if (!reduces_pending_) return absl::OkStatus();
  RETURN_IF_ERROR(CudaStatus(cudaEventRecord(comm_done_.get(), comm_.get()),
                             "cudaEventRecord"));
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamWaitEvent(compute_.get(), comm_done_.get(), 0),
                 "cudaStreamWaitEvent"));
  reduces_pending_ = false;
  return absl::OkStatus();
}

absl::Status CudaBackend::Broadcast(void* data, size_t bytes, int root) {
  if (data_size_ == 1) return absl::OkStatus();
  if (nccl_ == nullptr) {
    return absl::FailedPreconditionError("Broadcast before InitCollectives");
  }
  Touch(data, bytes);
  RETURN_IF_ERROR(
      CudaStatus(cudaEventRecord(compute_ready_.get(), compute_.get()),
                 "cudaEventRecord"));
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamWaitEvent(comm_.get(), compute_ready_.get(), 0),
                 "cudaStreamWaitEvent"));
  ++counts_.broadcasts;
  RETURN_IF_ERROR(nccl_->Broadcast(data, bytes, root, comm_.get()));
  reduces_pending_ = true;
  RETURN_IF_ERROR(WaitAllReduces());
  return WaitCompute();
}

absl::Status CudaBackend::TensorAllReduceSum(void* data, size_t n) {
  if (tensor_size_ == 1) return absl::OkStatus();
  Touch(data, n * SizeOf(act_));
  ++counts_.tensor_allreduces;
  // On the compute stream: the next GEMM needs the sum, nothing overlaps.
  return tensor_nccl_->AllReduce(data, n, act_, ncclSum, compute_.get());
}

absl::StatusOr<double> CudaBackend::TensorSumOnHost(double value) {
  if (tensor_size_ == 1) return value;
  // fp32 high and low parts keep ~48 bits of the double through the sum.
  float* host = static_cast<float*>(host_scalar_.data());
  host[0] = static_cast<float>(value);
  host[1] = static_cast<float>(value - static_cast<double>(host[0]));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(tensor_scalar_.data(), host, 2 * sizeof(float),
                                 cudaMemcpyHostToDevice, compute_.get()),
                 "cudaMemcpyAsync(H2D)"));
  ++counts_.tensor_allreduces;
  RETURN_IF_ERROR(tensor_nccl_->AllReduce(tensor_scalar_.data(), 2, DType::kF32,
                                          ncclSum, compute_.get()));
  RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(host, tensor_scalar_.data(), 2 * sizeof(float),
                                 cudaMemcpyDeviceToHost, compute_.get()),
                 "cudaMemcpyAsync(D2H)"));
  RETURN_IF_ERROR(WaitCompute());
  return static_cast<double>(host[0]) + static_cast<double>(host[1]);
}

}  // namespace cuda
}  // namespace tupa::trainer

// CudaBackend: the Backend (worker/trainer/backend.h) on one NVIDIA GPU.
//
// - Compute runs in issue order on one non-blocking compute stream:
//   cuBLASLt GEMMs with fused bias/ReLU epilogues (gemm.h) and the kernels
//   of kernels.h. Parameters, gradients and optimizer state are fp32; for
//   bf16/fp16 the backend keeps a low-precision copy of the flat parameter
//   block (refreshed by OnParamsUpdated, and written directly by the fused
//   optimizer kernels) that the GEMMs read. Weight gradients come out of
//   the GEMMs in fp32 (fp32 accumulation, fp32 output).
// - LoadBatch copies pinned host batches on a copy stream into one of two
//   device staging slots, so the copy of batch i+1 overlaps compute on
//   batch i; the compute stream waits on an event, then casts.
// - All-reduces run on a side stream with NCCL: each AllReduceSumAsync waits
//   (cudaStreamWaitEvent) for the compute issued before it, so buckets
//   launched after each layer's backward overlap the remaining backward;
//   WaitAllReduces makes the compute stream wait for the side stream.
// - Host waits poll so that a dead peer surfaces as Unavailable /
//   DeadlineExceeded (after CollectiveOptions::timeout), not a hang.
// - Tensor parallelism: one NCCL communicator per group, each from its own
//   unique id in the store ("tupa/nccl_unique_id/tp<g>" and ".../dp<t>";
//   the world's key when T = 1). The tensor all-reduces run on the compute
//   stream in the activation type (they sit between two GEMMs); gradient
//   all-reduces on the side stream over the data-parallel communicator.
// Not thread-safe; use from the thread that created it.
#ifndef TUPA_WORKER_TRAINER_CUDA_CUDA_BACKEND_H_
#define TUPA_WORKER_TRAINER_CUDA_CUDA_BACKEND_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "worker/trainer/backend.h"
#include "worker/trainer/cuda/device_memory.h"
#include "worker/trainer/cuda/dtype.h"
#include "worker/trainer/cuda/gemm.h"
#include "worker/trainer/cuda/nccl_comm.h"

namespace tupa::trainer::cuda {

class CudaBackend : public Backend {
 public:
  // Selects device `local_rank` and creates streams, events and cuBLASLt.
  // FailedPrecondition when the device does not exist.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      Precision precision, int local_rank);
  ~CudaBackend() override;

  absl::string_view name() const override { return "cuda"; }
  Precision precision() const override { return precision_; }
  size_t activation_bytes() const override { return SizeOf(act_); }

  absl::StatusOr<void*> Alloc(size_t bytes) override;
  void Free(void* p) override;
  absl::StatusOr<void*> AllocHost(size_t bytes) override;
  void FreeHost(void* p) override;
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override;
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override;
  absl::Status Zero(void* dst, size_t bytes) override;
  absl::Status Synchronize() override;

  absl::Status LoadBatch(const float* host_x, const int32_t* host_labels,
                         int batch, int features, void* x,
                         int32_t* labels) override;

  absl::Status OnParamsUpdated(const float* params, size_t n) override;
  absl::Status LinearForward(const void* x, const float* w, const float* b,
                             int batch, int in, int out, bool relu,
                             void* y) override;
  absl::Status LinearBackward(const void* x, const float* w, const void* y,
                              void* dy, int batch, int in, int out, bool relu,
                              float* dw, float* db, void* dx) override;
  absl::Status BiasActivation(void* y, const float* b, int batch, int out,
                              bool relu) override;
  absl::Status SoftmaxCrossEntropy(const void* logits, const int32_t* labels,
                                   int batch, int classes, float grad_scale,
                                   void* dlogits, float* loss_sum) override;
  absl::Status CountCorrect(const void* logits, const int32_t* labels,
                            int batch, int classes, float* correct) override;

  absl::StatusOr<double> SumOfSquares(const float* x, size_t n) override;
  absl::Status AdamWStep(float* params, const float* grads, float* m, float* v,
                         size_t n, const AdamWHyper& hyper) override;
  absl::Status SgdStep(float* params, const float* grads, float* momentum_buf,
                       size_t n, const SgdHyper& hyper) override;

  absl::Status InitCollectives(KvStore& store, int rank, int world_size,
                               const CollectiveOptions& options) override;
  absl::Status AllReduceSumAsync(float* data, size_t n) override;
  absl::Status WaitAllReduces() override;
  absl::Status Broadcast(void* data, size_t bytes, int root) override;
  absl::Status TensorAllReduceSum(void* data, size_t n) override;
  absl::StatusOr<double> TensorSumOnHost(double value) override;

  cudaStream_t compute_stream() const { return compute_.get(); }

 private:
  // A device staging slot for one batch (see LoadBatch).
  struct BatchSlot {
    DeviceBuffer x;
    DeviceBuffer labels;
    Event copied;    // Recorded on the copy stream after the H2D copies.
    Event consumed;  // Recorded on the compute stream after the cast.
    bool in_use = false;
  };

  CudaBackend(Precision precision, int device);
  absl::Status Init();
  // Blocks until everything issued on the compute stream is done.
  absl::Status WaitCompute();
  // The low-precision copy of fp32 parameters [p, p + count), or p itself
  // for fp32. FailedPrecondition when p is outside the registered block.
  absl::StatusOr<const void*> GemmWeights(const float* p, size_t count) const;
  // Where the optimizer should write the half copy of [p, p + count), or
  // nullptr (fp32, or outside the registered block).
  void* HalfCopyFor(const float* p, size_t count) const;
  // Marks the half copy stale when [p, p + bytes) overlaps the parameters.
  void Touch(const void* p, size_t bytes);
  absl::Status EnsureScratch(size_t loss_floats);

  Precision precision_;
  DType act_;
  int device_;
  Stream compute_;
  Stream copy_;
  Stream comm_;
  Event compute_ready_;  // Compute -> comm ordering for collectives.
  Event comm_done_;      // Comm -> compute ordering (WaitAllReduces).
  Event sync_;           // Host waits.
  std::unique_ptr<GemmRunner> gemm_;
  std::array<BatchSlot, 2> slots_;
  int next_slot_ = 0;

  const float* params_ = nullptr;  // Registered fp32 parameter block.
  size_t params_n_ = 0;
  DeviceBuffer half_params_;
  bool half_fresh_ = false;

  DeviceBuffer losses_;        // Per-row losses for SoftmaxCrossEntropy.
  DeviceBuffer norm_scratch_;  // kGradNormScratchFloats + 1 result float.
  PinnedBuffer host_scalar_;

  int data_size_ = 1;    // Ranks in this rank's data-parallel group.
  int tensor_size_ = 1;  // Ranks in its tensor-parallel group.
  bool reduces_pending_ = false;
  absl::Duration timeout_ = absl::Seconds(300);
  DeviceBuffer tensor_scalar_;              // Two floats for TensorSumOnHost.
  std::unique_ptr<NcclCommunicator> nccl_;  // Data-parallel group.
  std::unique_ptr<NcclCommunicator> tensor_nccl_;  // Destroyed first.
};

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_CUDA_BACKEND_H_

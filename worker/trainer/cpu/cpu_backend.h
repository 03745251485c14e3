// CpuBackend: the reference Backend (see backend.h). fp32 only. GEMMs go to
// OpenBLAS (cblas_sgemm); elementwise loops are written so the compiler
// vectorises them; collectives use Gloo over TCP on a comm thread.
// "Device" memory is ordinary aligned host memory and every compute call is
// synchronous.
#ifndef TUPA_WORKER_TRAINER_CPU_CPU_BACKEND_H_
#define TUPA_WORKER_TRAINER_CPU_CPU_BACKEND_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "worker/trainer/backend.h"
#include "worker/trainer/cpu/gloo_comm.h"

namespace tupa::trainer {

// Sets the GEMM thread count of the process's BLAS when it is OpenBLAS
// (found at run time; a no-op for other BLAS libraries). n >= 1.
void SetBlasThreads(int n);

class CpuBackend : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;

  absl::string_view name() const override { return "cpu"; }
  Precision precision() const override { return Precision::kFp32; }
  size_t activation_bytes() const override { return sizeof(float); }

  absl::StatusOr<void*> Alloc(size_t bytes) override;
  void Free(void* p) override;
  absl::StatusOr<void*> AllocHost(size_t bytes) override;
  void FreeHost(void* p) override;
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override;
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override;
  absl::Status Zero(void* dst, size_t bytes) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::Status LoadBatch(const float* host_x, const int32_t* host_labels,
                         int batch, int features, void* x,
                         int32_t* labels) override;
  absl::Status OnParamsUpdated(const float*, size_t) override {
    return absl::OkStatus();
  }
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

 private:
  int data_size_ = 1;    // ranks in this rank's data-parallel group
  int tensor_size_ = 1;  // ranks in its tensor-parallel group
  std::unique_ptr<GlooComm> data_comm_;
  std::unique_ptr<GlooComm> tensor_comm_;
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_CPU_CPU_BACKEND_H_

// Row-major GEMM with fused epilogues on top of column-major cuBLASLt.
//
//   C[m,n] = alpha * op(A)[m,k] · op(B)[k,n] + beta * C, then the epilogue.
//
// A is stored row-major as [m,k] (or [k,m] when trans_a), B as [k,n] (or
// [n,k] when trans_b), C as [m,n]; all contiguous. A and B share `ab_type`
// (fp32, bf16 or fp16); C is `c_type` (fp32 or ab_type); accumulation and
// alpha/beta are fp32. fp32 inputs use full fp32 compute (no TF32), so fp32
// results match a CPU reference to ~1e-5 relative.
//
// Epilogues (row-major terms; bias vectors have type c_type):
//   kBias          C[i,j] += bias[j]
//   kReluBias      C[i,j] = max(0, C[i,j] + bias[j])
//   kReluAuxBias   as kReluBias, and writes the ReLU mask to `aux`
//                  (bit set where the output is > 0)
//   kDReluBiasGrad C[i,j] *= mask(aux)[i,j]; bias_grad[j] = sum_i C[i,j]
//   kBiasGradA     bias_grad[i] = sum_k op(A)[i,k]   (length m)
// Epilogues other than kNone and kBias require beta == 0.
//
// The mask layout is cuBLASLt's column-major bit matrix for the transposed
// (column-major) output: element (i,j) is bit (i*ld + j) with
// ld = ReluMaskLd(n), least significant bit first; ReluMaskBytes(m,n) bytes.
//
// Algorithms are chosen by cublasLtMatmulAlgoGetHeuristic once per shape,
// types, epilogue and pointer alignment, and cached. When cuBLASLt offers no
// algorithm for a fused epilogue, the runner uses a plain GEMM followed by the
// equivalent elementwise/reduction kernels (same results and mask layout).
//
// Streams: Run() enqueues on `stream` and returns without synchronising;
// all pointers must stay valid until the stream reaches the work. The runner
// owns one workspace, so Run() calls on different streams must be ordered
// by the caller. Not thread-safe.
#ifndef TUPA_WORKER_TRAINER_CUDA_GEMM_H_
#define TUPA_WORKER_TRAINER_CUDA_GEMM_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/trainer/cuda/device_memory.h"
#include "worker/trainer/cuda/dtype.h"

namespace tupa::trainer::cuda {

enum class Epilogue {
  kNone,
  kBias,
  kReluBias,
  kReluAuxBias,
  kDReluBiasGrad,
  kBiasGradA,
};

const char* EpilogueName(Epilogue e);

// Leading dimension (in bits) of the ReLU mask for an [m,n] output.
constexpr int64_t ReluMaskLd(int64_t n) { return (n + 127) / 128 * 128; }
// Bytes of the ReLU mask for an [m,n] output.
constexpr int64_t ReluMaskBytes(int64_t m, int64_t n) {
  return ReluMaskLd(n) * m / 8;
}

struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false;
  bool trans_b = false;
  DType ab_type = DType::kF32;
  DType c_type = DType::kF32;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;
  Epilogue epilogue = Epilogue::kNone;
  const void* bias = nullptr;  // kBias, kReluBias, kReluAuxBias
  void* bias_grad = nullptr;   // kDReluBiasGrad ([n]), kBiasGradA ([m])
  void* aux = nullptr;         // kReluAuxBias (written), kDReluBiasGrad (read)
};

class GemmRunner {
 public:
  // Creates the cuBLASLt handle and a `workspace_bytes` workspace on the
  // current device. FailedPrecondition without a usable device.
  static absl::StatusOr<std::unique_ptr<GemmRunner>> Create(
      size_t workspace_bytes = size_t{32} << 20);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Enqueues the GEMM described by `args` on `stream`. InvalidArgument for
  // inconsistent arguments (missing pointers, unsupported type pairs).
  absl::Status Run(const GemmArgs& args, cudaStream_t stream);

  // Whether the last Run() used a fused cuBLASLt epilogue (false after a
  // fallback or for kNone). For tests and logs.
  bool last_run_fused() const { return last_run_fused_; }

  // Forces the unfused path (plain GEMM + kernels), so tests can check both.
  void set_force_unfused(bool force) { force_unfused_ = force; }

 private:
  struct Plan;
  using PlanKey = std::tuple<int64_t, int64_t, int64_t, bool, bool, int, int,
                             int, bool, int, int>;

  GemmRunner(cublasLtHandle_t handle, DeviceBuffer workspace);
  // Returns the cached plan for `key`, building it on first use; a plan with
  // has_algo == false means cuBLASLt offers nothing for this configuration.
  absl::StatusOr<Plan*> GetPlan(const GemmArgs& args, Epilogue epilogue);
  absl::Status RunPlan(Plan& plan, const GemmArgs& args, Epilogue epilogue,
                       cudaStream_t stream);
  absl::Status RunUnfusedEpilogue(const GemmArgs& args, cudaStream_t stream);

  cublasLtHandle_t handle_;
  DeviceBuffer workspace_;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;
  bool last_run_fused_ = false;
  bool force_unfused_ = false;
};

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_GEMM_H_

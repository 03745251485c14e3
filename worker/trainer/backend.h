// Backend: the compute and communication primitives the training engine
// (trainer.h) is written against. One implementation per device kind: the
// CPU backend (cpu/cpu_backend.h, OpenBLAS + Gloo) is the reference; the
// CUDA backend (cuda/, cuBLASLt + NCCL) is tested against it.
//
// Conventions (every method):
// - Matrices are dense, row-major, with no padding between rows. A batch of
//   activations is [batch, features]. Linear weights use torch's layout:
//   W is [out, in], so y = x · Wᵀ + b.
// - "Device" pointers come from Alloc() (or point inside such a block).
//   Parameters, gradients and optimizer state are always fp32. Activations
//   (x, y, dy, dx, logits) have the backend's activation type:
//   fp32 for Precision::kFp32, bf16 for kBf16, fp16 for kFp16
//   (activation_bytes() tells the size). Labels are int32.
// - Ordering: compute calls are issued from ONE thread (the engine's) and
//   execute in issue order (CUDA: on one compute stream). A call may return
//   before the work is done; CopyToHost, SumOfSquares and Synchronize
//   block until all previously issued work has finished.
// - Collectives run on the backend's own comm context (CPU: a comm thread;
//   CUDA: a side stream). AllReduceSumAsync is ordered after all compute
//   issued before it and the caller must not touch the buffer until
//   WaitAllReduces() returns; compute issued after WaitAllReduces() sees
//   the reduced values.
// - Groups (tensor parallelism, DESIGN §7): with tensor_parallel T, ranks
//   r = g*T + t form tensor-parallel group g (T adjacent ranks, one node)
//   and data-parallel group t (ranks t, t + T, t + 2T, ...). Gradient
//   all-reduces and broadcasts run over the rank's data-parallel group
//   (the world when T = 1); TensorAllReduceSum and TensorSumOnHost over its
//   tensor-parallel group.
// - Errors are returned as absl::Status; no exceptions escape. A failed
//   collective (a peer died) is Unavailable and leaves the backend unusable.
// - Not thread-safe: one Backend per rank, used from one thread.
#ifndef TUPA_WORKER_TRAINER_BACKEND_H_
#define TUPA_WORKER_TRAINER_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "worker/trainer/kv_store.h"

namespace tupa::trainer {

enum class Precision { kFp32, kBf16, kFp16 };

// Parses "fp32" | "bf16" | "fp16" ("" means fp32). InvalidArgument otherwise.
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);
absl::string_view PrecisionName(Precision p);

// One AdamW step (torch.optim.AdamW semantics, decoupled weight decay):
//   g  = grad * grad_scale
//   p -= lr * weight_decay * p
//   m  = beta1 * m + (1 - beta1) * g
//   v  = beta2 * v + (1 - beta2) * g²
//   p -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
struct AdamWHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
  int64_t step = 1;         // 1-based count of steps taken, this one included
  float grad_scale = 1.0f;  // folds loss-scale removal and clipping
};

// One SGD step with momentum (torch.optim.SGD semantics, dampening 0):
//   g   = grad * grad_scale + weight_decay * p
//   buf = first_step ? g : momentum * buf + g
//   p  -= lr * buf
struct SgdHyper {
  float lr = 1e-2f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  bool first_step = true;
  float grad_scale = 1.0f;
};

// How a rank joins the collective group.
struct CollectiveOptions {
  // This host's address that the peers can reach (used by transports that
  // listen, like Gloo's TCP; NCCL finds its own).
  std::string bind_address = "127.0.0.1";
  // How long rendezvous and each collective may take before failing.
  absl::Duration timeout = absl::Seconds(300);
  // Ranks per tensor-parallel group (see "Groups" above); divides the
  // world size.
  int tensor_parallel = 1;
};

// Collectives a backend has issued since it was created, by group (only
// real ones: a group of one rank issues none). The trainer reports them
// and tests assert them (one forward and one backward tensor all-reduce
// per column/row pair per step).
struct CollectiveCounts {
  int64_t tensor_allreduces = 0;  // TensorAllReduceSum + TensorSumOnHost
  int64_t data_allreduces = 0;    // AllReduceSumAsync
  int64_t broadcasts = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual absl::string_view name() const = 0;
  virtual Precision precision() const = 0;
  // Bytes per activation element: 4 (fp32) or 2 (bf16, fp16).
  virtual size_t activation_bytes() const = 0;

  // ---- Memory -----------------------------------------------------------
  // Device memory, at least 64-byte aligned, uninitialised. Caller owns it
  // and releases it with Free(). ResourceExhausted when out of memory.
  virtual absl::StatusOr<void*> Alloc(size_t bytes) = 0;
  virtual void Free(void* p) = 0;
  // Host memory suited to fast host->device copies (CUDA: pinned).
  virtual absl::StatusOr<void*> AllocHost(size_t bytes) = 0;
  virtual void FreeHost(void* p) = 0;
  // Host -> device, raw bytes. `src` may be reused once this returns.
  virtual absl::Status CopyToDevice(void* dst, const void* src,
                                    size_t bytes) = 0;
  // Device -> host, raw bytes; waits for all issued work first.
  virtual absl::Status CopyToHost(void* dst, const void* src, size_t bytes) = 0;
  virtual absl::Status Zero(void* dst, size_t bytes) = 0;
  // Waits for all issued compute (not for pending all-reduces).
  virtual absl::Status Synchronize() = 0;

  // ---- Data ------------------------------------------------------------
  // Uploads one batch: host_x is fp32 [batch, features] (from AllocHost),
  // converted to the activation type into x; host_labels int32 [batch]
  // into labels. The host buffers may be reused once this returns.
  virtual absl::Status LoadBatch(const float* host_x,
                                 const int32_t* host_labels, int batch,
                                 int features, void* x, int32_t* labels) = 0;

  // ---- Layers ----------------------------------------------------------
  // Called with the flat fp32 parameter block after it is initialised or
  // restored and after every optimizer step. Every `w`/`b` passed to the
  // layer calls points inside [params, params + n). A mixed-precision
  // backend refreshes its low-precision weight copy here; CPU: no-op.
  virtual absl::Status OnParamsUpdated(const float* params, size_t n) = 0;

  // y[batch, out] = x[batch, in] · w[out, in]ᵀ + b[out], then ReLU when
  // `relu`. x and y must not alias. b may be nullptr (no bias).
  virtual absl::Status LinearForward(const void* x, const float* w,
                                     const float* b, int batch, int in, int out,
                                     bool relu, void* y) = 0;

  // Backward of LinearForward. dy[batch, out] is dL/d(layer output); when
  // `relu`, it is first masked in place by (y > 0), so dy is clobbered.
  // Overwrites dw[out, in] = dyᵀ · x and db[out] = Σ_rows dy (fp32), and
  // dx[batch, in] = dy · w unless dx is nullptr (first layer).
  virtual absl::Status LinearBackward(const void* x, const float* w,
                                      const void* y, void* dy, int batch,
                                      int in, int out, bool relu, float* dw,
                                      float* db, void* dx) = 0;

  // In place: y[batch, out] += b[out], then ReLU when `relu` (the bias and
  // activation of a row-parallel layer, after its all-reduce).
  virtual absl::Status BiasActivation(void* y, const float* b, int batch,
                                      int out, bool relu) = 0;

  // Softmax cross-entropy over logits[batch, classes] and labels[batch].
  // Writes dlogits = (softmax(logits) - onehot(label)) * grad_scale (may
  // alias logits) and *loss_sum = Σ_rows -log softmax[label] (one fp32 on
  // the device, overwritten, unscaled).
  virtual absl::Status SoftmaxCrossEntropy(const void* logits,
                                           const int32_t* labels, int batch,
                                           int classes, float grad_scale,
                                           void* dlogits, float* loss_sum) = 0;

  // Adds to *correct (one fp32 on the device) how many rows have
  // argmax(logits) == label (ties: the lowest index wins).
  virtual absl::Status CountCorrect(const void* logits, const int32_t* labels,
                                    int batch, int classes, float* correct) = 0;

  // ---- Optimizer -------------------------------------------------------
  // Σ x[i]² in double, returned to the host (blocks). Non-finite when any
  // x[i] is inf/NaN, which is how fp16 overflow is detected.
  virtual absl::StatusOr<double> SumOfSquares(const float* x, size_t n) = 0;
  virtual absl::Status AdamWStep(float* params, const float* grads, float* m,
                                 float* v, size_t n,
                                 const AdamWHyper& hyper) = 0;
  virtual absl::Status SgdStep(float* params, const float* grads,
                               float* momentum_buf, size_t n,
                               const SgdHyper& hyper) = 0;

  // ---- Collectives -----------------------------------------------------
  // Connects this rank to the other world_size - 1 (a no-op for one rank),
  // building its tensor- and data-parallel groups (options.tensor_parallel)
  // from the one store. Every rank calls it once, before any collective,
  // with a store shared by all ranks (`store` must outlive the call only).
  // Unavailable/DeadlineExceeded when peers do not show up;
  // InvalidArgument when tensor_parallel does not divide world_size.
  virtual absl::Status InitCollectives(KvStore& store, int rank, int world_size,
                                       const CollectiveOptions& options) = 0;
  // Starts an in-place sum of data[0, n) (fp32, device) across the ranks of
  // this rank's data-parallel group. Ordered after previously issued
  // compute; reductions complete in issue order. Do not touch `data` until
  // WaitAllReduces() returns.
  virtual absl::Status AllReduceSumAsync(float* data, size_t n) = 0;
  // Waits until every started all-reduce has finished (CUDA: makes the
  // compute stream wait for them). Returns the first error.
  virtual absl::Status WaitAllReduces() = 0;
  // Copies `bytes` of device memory from the rank whose index in this
  // rank's data-parallel group is `root` to the others (synchronous).
  virtual absl::Status Broadcast(void* data, size_t bytes, int root) = 0;
  // In-place sum of data[0, n) of the activation type across this rank's
  // tensor-parallel group, ordered after issued compute and before compute
  // issued later (the Megatron "g"/"f" all-reduces). No-op when T = 1.
  virtual absl::Status TensorAllReduceSum(void* data, size_t n) = 0;
  // The sum of `value` over this rank's tensor-parallel group, on the host
  // (blocks; `value` itself when T = 1). For gradient norms.
  virtual absl::StatusOr<double> TensorSumOnHost(double value) = 0;

  const CollectiveCounts& collective_counts() const { return counts_; }

 protected:
  CollectiveCounts counts_;  // implementations count what they issue
};

enum class BackendKind { kCpu, kCuda };

// Parses "cpu" | "cuda". InvalidArgument otherwise.
absl::StatusOr<BackendKind> ParseBackendKind(absl::string_view name);

// Creates a backend. `local_rank` picks the device (CUDA). Unimplemented
// when the kind was not compiled in or the precision is not supported
// (the CPU backend is fp32 only).
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(BackendKind kind,
                                                       Precision precision,
                                                       int local_rank);

// Defined by the CUDA backend (target tupa_trainer_cuda, worker/trainer/cuda)
// and called by CreateBackend when the build has TUPA_WITH_CUDA. Selects
// device `local_rank`; FailedPrecondition when there is no such device.
absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(Precision precision,
                                                           int local_rank);

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_BACKEND_H_

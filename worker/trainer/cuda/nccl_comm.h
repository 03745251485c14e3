// NcclCommunicator: one NCCL communicator per rank, bootstrapped through the
// trainer's rendezvous store (rank 0 publishes ncclGetUniqueId() under a
// key, the others read it), plus the host-side waits that turn a dead peer
// into an error instead of a hang.
//
// The communicator is created non-blocking (ncclConfig_t.blocking = 0) so
// that initialisation and waits can time out; collectives are enqueued on
// the caller's stream and return once enqueued. A failure (peer died,
// timeout) aborts the communicator: every later call returns Unavailable.
// Requires the rank's device to be current. Not thread-safe.
#ifndef TUPA_WORKER_TRAINER_CUDA_NCCL_COMM_H_
#define TUPA_WORKER_TRAINER_CUDA_NCCL_COMM_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "worker/trainer/cuda/dtype.h"
#include "worker/trainer/kv_store.h"

namespace tupa::trainer::cuda {

class NcclCommunicator {
 public:
  // Joins `world_size` ranks. DeadlineExceeded when the id or the peers do
  // not show up within `timeout`; Unavailable when NCCL reports a failure.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> Create(
      KvStore& store, int rank, int world_size, absl::Duration timeout,
      absl::string_view key = "tupa/nccl_unique_id");
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // Enqueues an in-place all-reduce of `count` elements on `stream`.
  absl::Status AllReduce(void* data, size_t count, DType type, ncclRedOp_t op,
                         cudaStream_t stream);
  // Enqueues a broadcast of `bytes` bytes from `root` on `stream`.
  absl::Status Broadcast(void* data, size_t bytes, int root,
                         cudaStream_t stream);

  // Blocks until `event` has completed, polling NCCL's asynchronous error
  // state; aborts the communicator on an error or after `timeout`.
  absl::Status WaitForEvent(cudaEvent_t event, absl::Duration timeout);

  // OK, or the error that broke the communicator.
  absl::Status AsyncError();

 private:
  NcclCommunicator(ncclComm_t comm, int rank, int world_size,
                   absl::Duration timeout)
      : comm_(comm), rank_(rank), world_size_(world_size), timeout_(timeout) {}
  // Waits until the non-blocking communicator has finished the last call
  // (ncclInProgress -> done).
  absl::Status WaitNotInProgress(absl::string_view what);
  absl::Status Fail(absl::Status status);

  ncclComm_t comm_;
  int rank_;
  int world_size_;
  absl::Duration timeout_;
  absl::Status broken_;
};

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_NCCL_COMM_H_

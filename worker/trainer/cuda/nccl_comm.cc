#include "worker/trainer/cuda/nccl_comm.h"

#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/cuda/cuda_status.h"

namespace tupa::trainer::cuda {
namespace {

constexpr absl::Duration kPollInterval = absl::Microseconds(50);

// Polls the communicator until it leaves ncclInProgress or `deadline`.
absl::Status PollComm(ncclComm_t comm, absl::Time deadline,
                      absl::string_view what) {
  while (true) {
    ncclResult_t state = ncclSuccess;
    RETURN_IF_ERROR(NcclStatus(ncclCommGetAsyncError(comm, &state),
                               "ncclCommGetAsyncError"));
    if (state != ncclInProgress) return NcclStatus(state, what);
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": timed out"));
    }
    std::this_thread::sleep_for(absl::ToChronoMicroseconds(kPollInterval));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    KvStore& store, int rank, int world_size, absl::Duration timeout,
    absl::string_view key) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl: bad rank ", rank, " of ", world_size));
  }
  ncclUniqueId id;
  if (rank == 0) {
    RETURN_IF_ERROR(NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    RETURN_IF_ERROR(store.Set(
        key,
        absl::string_view(reinterpret_cast<const char*>(&id), sizeof(id))));
  } else {
    ASSIGN_OR_RETURN(std::string value, store.Get(key, timeout));
    if (value.size() != sizeof(id)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "nccl: unique id under \"", key, "\" has ", value.size(), " bytes"));
    }
    std::memcpy(&id, value.data(), sizeof(id));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const absl::Time deadline = absl::Now() + timeout;
  ncclResult_t result =
      ncclCommInitRankConfig(&comm, world_size, id, rank, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    if (comm != nullptr) ncclCommAbort(comm);
    return NcclStatus(result, "ncclCommInitRankConfig");
  }
  if (absl::Status s = PollComm(comm, deadline, "ncclCommInitRank"); !s.ok()) {
    ncclCommAbort(comm);
    return s.code() == absl::StatusCode::kDeadlineExceeded
               ? s
               : absl::UnavailableError(s.message());
  }
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(comm, rank, world_size, timeout));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ == nullptr) return;
  if (broken_.ok()) {
    // Finalize is non-blocking on this communicator; let it complete (or
    // time out) before destroying.
    if (ncclCommFinalize(comm_) == ncclSuccess) {
      PollComm(comm_, absl::Now() + timeout_, "ncclCommFinalize").IgnoreError();
    }
    ncclCommDestroy(comm_);
  } else {
    ncclCommAbort(comm_);
  }
}

absl::Status NcclCommunicator::Fail(absl::Status status) {
  if (broken_.ok()) {
    broken_ = absl::UnavailableError(status.message());
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  return broken_;
}

absl::Status NcclCommunicator::AsyncError() { return broken_; }

absl::Status NcclCommunicator::WaitNotInProgress(absl::string_view what) {
  absl::Status s = PollComm(comm_, absl::Now() + timeout_, what);
  if (!s.ok()) return Fail(s);
  return absl::OkStatus();
}

absl::Status NcclCommunicator::AllReduce(void* data, size_t count, DType type,
                                         ncclRedOp_t op, cudaStream_t stream) {
  RETURN_IF_ERROR(broken_);
  const ncclResult_t r =
      ncclAllReduce(data, data, count, ToNcclDataType(type), op, comm_, stream);
  if (r != ncclSuccess && r != ncclInProgress) {
    return Fail(NcclStatus(r, "ncclAllReduce"));
  }
  return WaitNotInProgress("ncclAllReduce");
}

absl::Status NcclCommunicator::Broadcast(void* data, size_t bytes, int root,
                                         cudaStream_t stream) {
  RETURN_IF_ERROR(broken_);
  const ncclResult_t r =
      ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream);
  if (r != ncclSuccess && r != ncclInProgress) {
    return Fail(NcclStatus(r, "ncclBroadcast"));
  }
  return WaitNotInProgress("ncclBroadcast");
}

absl::Status NcclCommunicator::WaitForEvent(cudaEvent_t event,
                                            absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return absl::OkStatus();
    if (e != cudaErrorNotReady) return CudaStatus(e, "cudaEventQuery");
    RETURN_IF_ERROR(broken_);
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm_, &state);
    if (state != ncclSuccess && state != ncclInProgress) {
      return Fail(NcclStatus(state, "nccl async error"));
    }
    if (absl::Now() > deadline) {
      return Fail(absl::DeadlineExceededError(
          "timed out waiting for collectives (a peer may have died)"));
    }
    std::this_thread::sleep_for(absl::ToChronoMicroseconds(kPollInterval));
  }
}

}  // namespace tupa::trainer::cuda

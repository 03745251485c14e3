// Conversion of CUDA runtime, cuBLAS(Lt) and NCCL result codes into
// absl::Status. Every call into those libraries in this backend goes through
// one of these, so no error escapes as an exit() or an exception.
//
// Code mapping (what the caller should do):
//   out of memory                      -> ResourceExhausted (shrink the batch)
//   no device / driver too old         -> FailedPrecondition (fix the machine)
//   invalid value / not supported      -> InvalidArgument / Unimplemented
//   NCCL remote or system error        -> Unavailable (a peer died; retry job)
//   anything else                      -> Internal
#ifndef TUPA_WORKER_TRAINER_CUDA_CUDA_STATUS_H_
#define TUPA_WORKER_TRAINER_CUDA_CUDA_STATUS_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tupa::trainer::cuda {

// Returns OK for cudaSuccess, otherwise an error naming `what` and the CUDA
// error string.
absl::Status CudaStatus(cudaError_t error, absl::string_view what);

// Returns OK for CUBLAS_STATUS_SUCCESS.
absl::Status CublasStatus(cublasStatus_t status, absl::string_view what);

// Returns OK for ncclSuccess.
absl::Status NcclStatus(ncclResult_t result, absl::string_view what);

// Returns the error of the most recent kernel launch on this thread
// (cudaGetLastError), naming `kernel`.
absl::Status LaunchStatus(absl::string_view kernel);

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_CUDA_STATUS_H_

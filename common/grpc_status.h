// The one place that maps absl::Status to and from grpc::Status.
// Codes map one to one (both follow google.rpc.Code).
#ifndef TUPA_COMMON_GRPC_STATUS_H_
#define TUPA_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace tupa {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace tupa

#endif  // TUPA_COMMON_GRPC_STATUS_H_

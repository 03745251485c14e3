#include "client/exit_codes.h"

#include <gtest/gtest.h>

#include "common/grpc_status.h"

namespace tupa::client {
namespace {

struct Case {
  absl::StatusCode code;
  ExitCode exit;
};

TEST(ExitCodesTest, EveryStatusCodeMapsToTheDesignedExitCode) {
  const Case cases[] = {
      {absl::StatusCode::kOk, kExitOk},
      {absl::StatusCode::kInvalidArgument, kExitUsage},
      {absl::StatusCode::kOutOfRange, kExitUsage},
      {absl::StatusCode::kNotFound, kExitNotFound},
      {absl::StatusCode::kPermissionDenied, kExitPermission},
      {absl::StatusCode::kUnauthenticated, kExitPermission},
      {absl::StatusCode::kUnavailable, kExitUnreachable},
      {absl::StatusCode::kDeadlineExceeded, kExitUnreachable},
      {absl::StatusCode::kFailedPrecondition, kExitFailed},
      {absl::StatusCode::kAlreadyExists, kExitFailed},
      {absl::StatusCode::kAborted, kExitFailed},
      {absl::StatusCode::kResourceExhausted, kExitFailed},
      {absl::StatusCode::kInternal, kExitFailed},
      {absl::StatusCode::kUnknown, kExitFailed},
      {absl::StatusCode::kCancelled, kExitFailed},
      {absl::StatusCode::kUnimplemented, kExitFailed},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ExitCodeFor(absl::Status(c.code, "x")), c.exit)
        << absl::StatusCodeToString(c.code);
  }
}

TEST(ExitCodesTest, GrpcCodesSurviveConversion) {
  EXPECT_EQ(ExitCodeFor(FromGrpcStatus(
                grpc::Status(grpc::StatusCode::NOT_FOUND, "no job 7"))),
            kExitNotFound);
  EXPECT_EQ(ExitCodeFor(FromGrpcStatus(
                grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "token"))),
            kExitPermission);
  EXPECT_EQ(ExitCodeFor(FromGrpcStatus(
                grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"))),
            kExitUnreachable);
}

TEST(ExitCodesTest, OperationFailedIsExitOne) {
  EXPECT_EQ(ExitCodeFor(OperationFailedError("job 1 FAILED")), kExitFailed);
}

}  // namespace
}  // namespace tupa::client

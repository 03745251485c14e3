// The CLI's exit codes (DESIGN §3) and the ONE function that maps an
// absl::Status to one of them. Pure; thread-safe.
#ifndef TUPA_CLIENT_EXIT_CODES_H_
#define TUPA_CLIENT_EXIT_CODES_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tupa::client {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,       // the operation failed (job failed, timeout, ...)
  kExitUsage = 2,        // bad usage or input; the message names the field
  kExitNotFound = 3,     // no such job or worker
  kExitPermission = 4,   // PERMISSION_DENIED or UNAUTHENTICATED
  kExitUnreachable = 5,  // UNAVAILABLE after retries, DEADLINE_EXCEEDED
};

// OK -> 0; INVALID_ARGUMENT, OUT_OF_RANGE -> 2; NOT_FOUND -> 3;
// PERMISSION_DENIED, UNAUTHENTICATED -> 4; UNAVAILABLE, DEADLINE_EXCEEDED
// -> 5; everything else -> 1.
ExitCode ExitCodeFor(const absl::Status& status);

// An error that means "the operation ran and failed" (exit 1), e.g. a job
// that ended FAILED or a `wait` that timed out. Its code is UNKNOWN so it
// can never be mistaken for a transport error.
absl::Status OperationFailedError(absl::string_view message);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_EXIT_CODES_H_

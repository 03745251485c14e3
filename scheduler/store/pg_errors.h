// Maps libpqxx exceptions to absl::Status at the store boundary (STYLE.md):
// broken_connection -> Unavailable (retry the call), serialization failure
// or deadlock -> Aborted (retry the transaction), unique_violation ->
// AlreadyExists, check/foreign-key violation -> FailedPrecondition, anything
// else -> Internal.
#ifndef TUPA_SCHEDULER_STORE_PG_ERRORS_H_
#define TUPA_SCHEDULER_STORE_PG_ERRORS_H_

#include <exception>

#include "absl/status/status.h"

namespace tupa::scheduler {

// Call from inside a catch block: converts the current exception.
absl::Status StatusFromCurrentException();

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_PG_ERRORS_H_

// The only two helper macros for absl::Status plumbing (see STYLE.md).
#ifndef TUPA_COMMON_STATUS_MACROS_H_
#define TUPA_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TUPA_CONCAT_INNER_(a, b) a##b
#define TUPA_CONCAT_(a, b) TUPA_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::absl::Status _tupa_status = (expr);        \
    if (!_tupa_status.ok()) return _tupa_status; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F())` assigns the value of a StatusOr or returns
// its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(TUPA_CONCAT_(_tupa_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                           \
  if (!statusor.ok()) return statusor.status();     \
  lhs = std::move(statusor).value()

#endif  // TUPA_COMMON_STATUS_MACROS_H_

// Validation of a tupa.v1.JobSpec (DESIGN §4, §9). Both the CLI (before
// sending) and the scheduler (authoritative, before anything is written)
// call ValidateJobSpec. Every error is InvalidArgument and its message
// starts with the offending field's path, e.g. "resources.gpus: must be
// between 0 and 1024". Thread-safe.
#ifndef TUPA_COMMON_JOB_SPEC_VALIDATE_H_
#define TUPA_COMMON_JOB_SPEC_VALIDATE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tupa/v1/job.pb.h"

namespace tupa {

inline constexpr int kMaxGpusPerNode = 1024;
inline constexpr int kMaxNodes = 4096;
// max_runtime's upper bound (365 days): keeps start + max_runtime in range.
inline constexpr int64_t kMaxRuntimeS = 365LL * 24 * 3600;

// Checks ranges and consistency of a spec with defaults applied.
absl::Status ValidateJobSpec(const v1::JobSpec& spec);

// A job's name or team: 1-63 letters, digits, '.', '_' or '-', starting
// with a letter or digit. InvalidArgument naming `field` otherwise.
absl::Status ValidateJobName(absl::string_view name, absl::string_view field);

// Text that protobuf must serialize and a process or a query will see:
// valid UTF-8 (the check protobuf applies before sending a string field)
// and no NUL byte. InvalidArgument "FIELD: is not valid UTF-8" or "FIELD:
// contains a NUL byte" otherwise; the text itself is not echoed.
absl::Status ValidateText(absl::string_view text, absl::string_view field);

// An idempotency key: 1-200 bytes of printable ASCII without spaces.
// InvalidArgument naming `field` otherwise.
absl::Status ValidateIdempotencyKey(absl::string_view key,
                                    absl::string_view field);

}  // namespace tupa

#endif  // TUPA_COMMON_JOB_SPEC_VALIDATE_H_

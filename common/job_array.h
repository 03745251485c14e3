// Job arrays (DESIGN §4, Slurm's --array): the index expression and the
// per-task specs made from one template.
//
// Expression: comma-separated items, each N, A-B or A-B:STEP, then an
// optional %N that bounds how many tasks run at once ("0-99%10",
// "1,3,8-16:4%2"). Indexes are 0..kMaxArrayIndex, listed in the order
// written, each at most once; an array has at most kMaxArrayTasks tasks.
// Pure functions; thread-safe.
#ifndef TUPA_COMMON_JOB_ARRAY_H_
#define TUPA_COMMON_JOB_ARRAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tupa/v1/job.pb.h"

namespace tupa {

inline constexpr int kMaxArrayTasks = 10000;
inline constexpr int kMaxArrayIndex = 999999;
// What `{{index}}` (spaces inside the braces allowed) is replaced with.
inline constexpr char kArrayIndexPlaceholder[] = "{{index}}";

struct ArrayIndexes {
  std::vector<int32_t> indexes;  // in the order written
  int32_t max_running = 0;       // 0 = no limit
};

// Parses `expression`. InvalidArgument naming `field` ("--array: ...")
// on a malformed item, a reversed or empty range, a repeated index, an
// index past kMaxArrayIndex, more than kMaxArrayTasks tasks or %0.
absl::StatusOr<ArrayIndexes> ParseArrayIndexes(absl::string_view expression,
                                               absl::string_view field);

// `text` with every `{{index}}` (or `{{ index }}`) replaced by `index`.
std::string SubstituteArrayIndex(absl::string_view text, int32_t index);

// True when `text` holds a `{{index}}` placeholder.
bool HasArrayPlaceholder(absl::string_view text);

// The task of `index` made from `spec`: `{{index}}` replaced in the name,
// the command's words and the env values. The `array` field is not set
// here (the scheduler sets it with the array's id).
v1::JobSpec SubstituteArrayIndex(const v1::JobSpec& spec, int32_t index);

// Sets what every task of an array carries: spec.array and the
// environment variables TUPA_ARRAY_JOB_ID and TUPA_ARRAY_INDEX.
void MarkArrayTask(v1::JobSpec& spec, int64_t array_id, int32_t index,
                   const ArrayIndexes& array, absl::string_view expression);

}  // namespace tupa

#endif  // TUPA_COMMON_JOB_ARRAY_H_

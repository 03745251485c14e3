// `tupa submit`: turning a spec file and command-line flags into the
// JobSpec to send. Flags override the file field by field; `-- CMD ARGS`
// makes a command job. Everything here runs before any connection is made,
// so bad input never reaches the scheduler. Errors are InvalidArgument and
// name the flag (`--gpus: ...`) or the spec field (`resources.gpus: ...`).
// Thread-safe.
#ifndef TUPA_CLIENT_SPEC_OVERRIDES_H_
#define TUPA_CLIENT_SPEC_OVERRIDES_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/args.h"
#include "common/job_array.h"
#include "tupa/v1/job.pb.h"

namespace tupa::client {

// Declares the spec flags (--name --team --priority --gpus --nodes
// --gpu-type --cpu --memory --max-runtime --max-cost --retries --env
// --launch --tensor-parallel) and -f/--file on `flags`.
void AddSpecFlags(FlagSet& flags);

// Applies the spec flags given in `args` to `spec`, and the words after
// `--` as its command (which replaces a `train:` section). --gpu-type
// replaces the file's list; --env adds or replaces single variables.
absl::Status ApplySpecFlags(const ParsedArgs& args, v1::JobSpec& spec);

// Reads and parses `-f FILE` when given ("-" is stdin), applies the flags,
// then ApplyJobSpecDefaults and ValidateJobSpec. A validation error about a
// field that a flag set is reported as "--flag (field): ...".
absl::StatusOr<v1::JobSpec> BuildJobSpec(const ParsedArgs& args);

// BuildJobSpec for each task of a job array (`tupa submit --array`), in
// the order of `array.indexes`: `{{index}}` is replaced by the task's
// index in the file's text before it is parsed (so any value may use it,
// e.g. `lr: "1e-{{index}}"`), and in the name, command words and env
// values the flags set. Errors are prefixed "array task INDEX: ".
absl::StatusOr<std::vector<v1::JobSpec>> BuildArrayTasks(
    const ParsedArgs& args, const ArrayIndexes& array);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_SPEC_OVERRIDES_H_

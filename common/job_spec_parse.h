// YAML text -> tupa.v1.JobSpec (DESIGN §4). Parsing only checks shapes:
// unknown fields, wrong types and bad quantities are InvalidArgument errors
// whose message starts with the field's path ("resources.gpus: bad number
// \"x\""). Defaults and ranges are job_spec.h's and job_spec_validate.h's.
// Thread-safe.
#ifndef TUPA_COMMON_JOB_SPEC_PARSE_H_
#define TUPA_COMMON_JOB_SPEC_PARSE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tupa/v1/job.pb.h"

namespace tupa {

// Parses the YAML job spec of DESIGN §4. Text holding more than one YAML
// document is an error naming "spec". Does not apply defaults and does not
// validate ranges (see ValidateJobSpec).
absl::StatusOr<v1::JobSpec> ParseJobSpecYaml(absl::string_view yaml);

}  // namespace tupa

#endif  // TUPA_COMMON_JOB_SPEC_PARSE_H_

// libFuzzer target: the job-spec YAML parser and validator, as a submit
// runs them (parse, defaults, validate). Must never crash, hang or leak;
// errors are fine.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/job_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  auto spec = tupa::ParseJobSpecYaml(yaml);
  if (!spec.ok()) return 0;
  tupa::ApplyJobSpecDefaults(*spec);
  if (tupa::ValidateJobSpec(*spec).ok()) (void)tupa::TotalGpus(*spec);
  return 0;
}

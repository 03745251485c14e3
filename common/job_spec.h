// The job spec (DESIGN §4): YAML text <-> tupa.v1.JobSpec, its defaults
// and its validation. This header gathers the three:
//   job_spec_parse.h     ParseJobSpecYaml (shapes and types only)
//   job_spec_validate.h  ValidateJobSpec and the text/name/key checks
//   here                 ApplyJobSpecDefaults and what the placement and
//                        the worker derive from a spec
// Errors are InvalidArgument naming the field. Thread-safe.
#ifndef TUPA_COMMON_JOB_SPEC_H_
#define TUPA_COMMON_JOB_SPEC_H_

#include "common/job_spec_parse.h"
#include "common/job_spec_validate.h"
#include "tupa/v1/job.pb.h"

namespace tupa {

// Fills defaults: nodes 1, launch per-gpu, 1 CPU per rank for a job asking
// for neither GPUs nor CPU, and the train section's (common/
// train_defaults.h).
void ApplyJobSpecDefaults(v1::JobSpec& spec);

// Total devices a job holds: gpus per node x nodes (shares count as shares).
double TotalGpus(const v1::JobSpec& spec);

// Rank processes each node of the job runs, as the worker plans them
// (worker/agent/rank_plan.cc): one per device (a share counts as one, a
// CPU-only job runs one), or one per node for a per-node launch. The
// built-in trainer always runs per device.
int RanksPerNode(const v1::JobSpec& spec);

}  // namespace tupa

#endif  // TUPA_COMMON_JOB_SPEC_H_

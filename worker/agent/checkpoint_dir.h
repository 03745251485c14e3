// The checkpoint directory of a job on a worker: <root>/job-<id>, claimed
// by the job that owns it.
//
// Job ids restart at 1 when the scheduler's database is reset, while a
// worker's checkpoints stay on its disk; a new job 1 must not resume the
// old job 1's weights. The directory records its owner (job id and submit
// time) in a file named OWNER. A directory owned by another job is moved
// aside to job-<id>.stale-<its owner>, not deleted (it may be someone's
// only copy). A directory without OWNER (written before owners existed)
// is adopted. Not thread-safe for one directory; the agent claims it once
// per assignment, under its lock.
#ifndef TUPA_WORKER_AGENT_CHECKPOINT_DIR_H_
#define TUPA_WORKER_AGENT_CHECKPOINT_DIR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tupa::worker {

// Creates or claims <root>/job-<job_id> for the job submitted at
// `created_at_ms` and returns its path. `created_at_ms` 0 (a scheduler
// that does not send it) claims nothing and just creates the directory.
absl::StatusOr<std::string> ClaimCheckpointDir(const std::string& root,
                                               int64_t job_id,
                                               int64_t created_at_ms);

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_CHECKPOINT_DIR_H_

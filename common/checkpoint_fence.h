// Checkpoint fencing by attempt (DESIGN §4): a stale attempt (one the
// scheduler has replaced) can never overwrite what the current attempt
// resumes from.
//
// A job's checkpoint directory holds FENCE, the newest attempt that has
// started on it, and LOCK, an empty file that every party flocks around
// reading or changing what the current attempt depends on. An attempt
// raises FENCE to itself before it reads its resume point; a writer
// publishes (renames into place, deletes old files) only under LOCK and
// only while FENCE is not above its own attempt. So once attempt N has
// raised the fence, nothing an attempt below N does reaches the directory.
// The same contract is documented for user commands (docs/trainer.md,
// "Checkpoints fenced by attempt"), with flock(1). Thread-compatible; safe
// across processes and hosts that share the directory with working flock
// (local file systems, NFSv4).
#ifndef TUPA_COMMON_CHECKPOINT_FENCE_H_
#define TUPA_COMMON_CHECKPOINT_FENCE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tupa {

inline constexpr char kCheckpointFenceFile[] = "FENCE";
inline constexpr char kCheckpointLockFile[] = "LOCK";

// The attempt FENCE names in `dir`; 0 when there is none.
int32_t ReadCheckpointFence(const std::string& dir);

// Raises FENCE in `dir` (created if missing) to `attempt`, under LOCK.
// FailedPrecondition (naming both attempts) when FENCE is already above
// `attempt`: this attempt is stale and must not run. `attempt` <= 0 (a run
// outside the scheduler) changes nothing.
absl::Status RaiseCheckpointFence(const std::string& dir, int32_t attempt);

// Runs `publish` (e.g. a rename into place) under LOCK if FENCE is not
// above `attempt`; FailedPrecondition, without running it, when it is.
// `attempt` <= 0 runs it unfenced. Returns what `publish` returns.
absl::Status PublishFenced(const std::string& dir, int32_t attempt,
                           const std::function<absl::Status()>& publish);

}  // namespace tupa

#endif  // TUPA_COMMON_CHECKPOINT_FENCE_H_

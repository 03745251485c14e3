// Training checkpoints: everything a run needs to continue bit-identically
// (weights, optimizer state, loss-scaler state, position). The data
// loader's position and all RNG streams are pure functions of (seed, step)
// (see rng.h, loader.h), so the step and seed are their complete state.
//
// File format (docs/trainer.md), little-endian:
//   "TUPACKPT" u32 version=1
//   i64 step  i64 optimizer_steps  u64 seed  i32 world_size
//   i32 n_widths  i32 widths[n_widths]
//   u32 len  optimizer name
//   f32 loss_scale  i64 good_steps  f64 last_loss
//   u64 n  f32 params[n]   u64 n  f32 state0[n]   u64 n  f32 state1[n]
//   u32 crc32 of everything above
// Files are named ckpt-<12-digit step>.bin; a write goes to a temporary
// name, is fsynced and renamed into place, then the directory is fsynced,
// so a crash never leaves a partial checkpoint under the final name.
#ifndef TUPA_WORKER_TRAINER_CHECKPOINT_H_
#define TUPA_WORKER_TRAINER_CHECKPOINT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace tupa::trainer {

struct CheckpointState {
  int64_t step = 0;             // steps completed
  int64_t optimizer_steps = 0;  // updates applied (fp16 may skip some)
  uint64_t seed = 0;
  int32_t world_size = 1;
  std::vector<int32_t> widths;
  std::string optimizer;
  float loss_scale = 1.0f;
  int64_t good_steps = 0;
  double last_loss = 0.0;
  std::vector<float> params;
  std::vector<float> state0;
  std::vector<float> state1;
};

// Writes ckpt-<step>.bin atomically into `dir` (created if missing) and
// deletes all but the newest `keep` checkpoints. Fenced by `attempt`
// (common/checkpoint_fence.h): the rename into place and the deletions
// happen under the directory's LOCK and only while its FENCE is not above
// `attempt`; FailedPrecondition (nothing published, the temporary file
// removed) when a newer attempt has started. `attempt` 0: unfenced.
absl::Status WriteCheckpoint(const std::string& dir,
                             const CheckpointState& state, int keep = 2,
                             int32_t attempt = 0);

// Path of the checkpoint with the highest step in `dir`, or nullopt when
// there is none (or the directory does not exist).
std::optional<std::string> FindLatestCheckpoint(const std::string& dir);

// DataLoss when the file is truncated or fails its checksum.
absl::StatusOr<CheckpointState> ReadCheckpoint(const std::string& path);

// The newest checkpoint in `dir` that reads back whole, and its path: a
// corrupt newest one (say, a disk error after its rename) falls back to the
// one before it (two are kept). nullopt when there is none; DataLoss when
// every one is corrupt.
absl::StatusOr<std::optional<std::pair<std::string, CheckpointState>>>
ReadNewestGoodCheckpoint(const std::string& dir);

// Every checkpoint in `dir` that reads back whole, newest first (corrupt
// ones skipped). Empty when there is none; DataLoss when every one is
// corrupt.
absl::StatusOr<std::vector<std::pair<std::string, CheckpointState>>>
ReadGoodCheckpoints(const std::string& dir);

// Tensor parallelism (DESIGN §7): with train.parallel.tensor T > 1 each
// rank of the first data-parallel group writes its shard, in the standard
// format (params and optimizer state are the shard's), under
// `dir`/tensor-<t>-of-<T>/ (t = tensor-parallel rank). T = 1: `dir` itself.
std::string ShardCheckpointDir(const std::string& dir, int tp_rank, int tensor);

// FailedPrecondition naming train.parallel.tensor when `dir` holds
// checkpoints written under another tensor-parallel degree than `tensor`
// (resharding is not supported); OK when it holds none or only matching
// ones.
absl::Status CheckCheckpointTensorLayout(const std::string& dir, int tensor);

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_CHECKPOINT_H_

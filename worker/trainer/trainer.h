// The training engine behind `tupa-train` (DESIGN §7): one call trains the
// configured MLP on this rank, talking to the other ranks of the run
// through the rendezvous store and the backend's collectives, and writes
// progress lines to `out` (JSON or human-readable; by default only rank 0
// writes).
//
// Every step: the loader thread has prefetched this rank's shard of the
// batch; forward, softmax-CE and backward run on the backend; each layer's
// gradients are all-reduced in buckets as soon as backward produces them
// (GradBuckets), overlapping the remaining backward; the optimizer updates
// the fp32 parameters. Because every rank applies the same reduced
// gradients to the same initial parameters (broadcast from rank 0),
// parameters stay identical on every rank.
//
// Tensor parallelism (config.tensor_parallel = T > 1, tensor_split.h):
// ranks g·T .. g·T + T - 1 hold the shards of one model replica and get the
// same batch; the world / T replicas run data parallel (gradients
// all-reduced within the ranks holding the same shard, the epoch sharded
// over the replicas). Shards of the same position stay identical.
#ifndef TUPA_WORKER_TRAINER_TRAINER_H_
#define TUPA_WORKER_TRAINER_TRAINER_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/train_defaults.h"
#include "tupa/v1/job.pb.h"
#include "worker/trainer/backend.h"
#include "worker/trainer/dataset.h"
#include "worker/trainer/optimizer.h"

namespace tupa::trainer {

// What to train (the `train:` section of a job, with defaults applied).
struct TrainConfig {
  std::vector<int> widths;
  DataConfig data;
  int batch_size = train_defaults::kBatchSize;  // per rank
  int epochs = train_defaults::kEpochs;
  int64_t steps = 0;  // > 0: stop after this many steps (overrides epochs)
  OptimizerConfig optimizer;
  Precision precision = Precision::kFp32;
  int64_t checkpoint_every = 0;  // steps; 0 = off
  uint64_t seed = 0;
  int64_t log_every = train_defaults::kLogEvery;
  int tensor_parallel = 1;  // train.parallel.tensor
};

// Converts a TrainSpec, applying the documented defaults for zero/empty
// fields. InvalidArgument names the offending field.
absl::StatusOr<TrainConfig> TrainConfigFromSpec(const v1::TrainSpec& spec);

// Where and how this process runs (environment and flags).
struct RunOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string checkpoint_dir;  // empty: no checkpoints, no resume
  // The job attempt (TUPA_ATTEMPT; 0 outside the scheduler). Rank 0 raises
  // the checkpoint directory's fence to it before resuming, and its writes
  // are refused once a newer attempt has started (common/checkpoint_fence.h).
  int32_t attempt = 0;
  std::string backend = "auto";  // "auto" | "cpu" | "cuda"
  // CPU backend: GEMM threads per rank; 0 keeps the BLAS default
  // (OPENBLAS_NUM_THREADS or all cores).
  int cpu_threads = 0;
  bool json = false;
  bool log_all_ranks = false;
  // Adds "param_checksum" (FNV-1a of the parameter bytes) to step lines.
  bool param_checksum = false;
  // When set, writes this rank's parameter block (its shard under tensor
  // parallelism) after training as raw little-endian fp32 to
  // "<dump_params>.rank<RANK>".
  std::string dump_params;
  absl::Duration timeout = absl::Seconds(300);
};

struct RunSummary {
  int world_size = 1;
  int64_t steps = 0;
  double step_ms_median = 0;
  double samples_per_s = 0;
  double final_loss = 0;
  std::optional<double> test_accuracy;
  int64_t resumed_from_step = 0;
  double train_seconds = 0;
  int tensor_parallel = 1;
  int data_parallel = 1;
  // Parameters + gradients + optimizer state held by this rank, in bytes.
  int64_t param_bytes = 0;
  // Collectives issued by the steps run (Backend::collective_counts), the
  // tensor all-reduces split into those of the forward and backward passes.
  int64_t steps_run = 0;
  int64_t tp_allreduces = 0;
  int64_t tp_allreduces_forward = 0;
  int64_t tp_allreduces_backward = 0;
  int64_t dp_allreduces = 0;
  int64_t dp_buckets = 0;  // gradient buckets per step
};

// Trains to completion. Errors: InvalidArgument (config), NotFound/DataLoss
// (data, checkpoints), Unavailable (a peer or the store went away).
absl::StatusOr<RunSummary> RunTraining(const TrainConfig& config,
                                       const RunOptions& options,
                                       std::ostream& out);

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_TRAINER_H_

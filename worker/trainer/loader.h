// Sharding and asynchronous batch loading.
//
// ShardSampler has torch DistributedSampler semantics: each epoch the whole
// dataset is shuffled with a permutation that depends only on (seed, epoch)
// -- identical on every rank -- padded by wrapping around to a multiple of
// world_size, and rank r takes positions r, r + world, r + 2·world, ...
// Incomplete batches at an epoch's end are dropped, so every rank runs the
// same number of steps and global step s of a run with world size W and
// per-rank batch B sees exactly the samples step s of a 1-rank run with
// batch W·B sees.
//
// BatchLoader runs a thread that gathers the batches of global steps
// [first_step, last_step) into host buffers (Backend::AllocHost) and hands
// them over through a bounded queue. Next()/Release() are called from one
// consumer thread.
#ifndef TUPA_WORKER_TRAINER_LOADER_H_
#define TUPA_WORKER_TRAINER_LOADER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "worker/trainer/backend.h"
#include "worker/trainer/dataset.h"

namespace tupa::trainer {

class ShardSampler {
 public:
  ShardSampler(int64_t dataset_size, int rank, int world_size, int batch,
               uint64_t seed);

  int64_t per_rank() const { return per_rank_; }
  // Steps per epoch (full batches only); may be 0 for tiny datasets.
  int64_t steps_per_epoch() const { return per_rank_ / batch_; }
  // This rank's sample indices for `epoch`, in order (per_rank() of them).
  std::vector<int64_t> EpochIndices(int64_t epoch) const;

 private:
  int64_t n_;
  int rank_;
  int world_;
  int batch_;
  uint64_t seed_;
  int64_t per_rank_;
};

struct Batch {
  int64_t step = 0;      // global step index, 0-based
  int64_t epoch = 0;     // 0-based
  float* x = nullptr;    // [batch, features], host memory
  int32_t* y = nullptr;  // [batch]
};

class BatchLoader {
 public:
  // `backend`, `data` and `sampler` must outlive the loader.
  BatchLoader(Backend* backend, const Dataset* data,
              const ShardSampler* sampler, int batch, int64_t first_step,
              int64_t last_step, int depth = 4);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Allocates the buffers and starts the thread.
  absl::Status Start();
  // Blocks for the next batch (in step order). OutOfRange after last_step.
  absl::StatusOr<Batch*> Next();
  // Returns a batch's buffers for reuse.
  void Release(Batch* batch);

 private:
  void Run();

  Backend* const backend_;
  const Dataset* const data_;
  const ShardSampler* const sampler_;
  const int batch_;
  const int64_t first_step_;
  const int64_t last_step_;
  const int depth_;
  std::vector<Batch> slots_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch*> free_ ABSL_GUARDED_BY(mu_);
  std::deque<Batch*> ready_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_step_to_hand_out_ = 0;  // consumer only
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_LOADER_H_

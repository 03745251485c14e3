// GradBuckets: backend-neutral gradient bucketing for data parallelism
// (PyTorch DDP's Reducer). Layers' gradients live in one flat buffer in
// forward order; buckets are contiguous ranges grouping adjacent layers,
// filled from the LAST layer backwards (the order backward produces them).
// The first bucket closes once it holds >= first_bucket_bytes, later ones at
// >= bucket_bytes. During backward the engine calls MarkReady(layer) as soon
// as a layer's gradients are written; every bucket whose layers are all
// ready is launched (in bucket order, identical on every rank) through the
// caller's launch function -- typically Backend::AllReduceSumAsync -- so
// communication overlaps the rest of backward. Not thread-safe.
#ifndef TUPA_WORKER_TRAINER_GRAD_BUCKETS_H_
#define TUPA_WORKER_TRAINER_GRAD_BUCKETS_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "absl/status/status.h"

namespace tupa::trainer {

inline constexpr size_t kFirstBucketBytes = size_t{1} << 20;
inline constexpr size_t kBucketBytes = size_t{25} << 20;

class GradBuckets {
 public:
  struct Range {
    size_t offset = 0;  // in floats
    size_t count = 0;
  };
  struct Bucket {
    Range range;
    int first_layer = 0;  // lowest layer index in the bucket
    int last_layer = 0;   // highest
  };
  using LaunchFn = std::function<absl::Status(size_t offset, size_t count)>;

  // `layers` are the layers' gradient ranges in forward order; they must be
  // adjacent (layer i+1 starts where layer i ends). `tail` extra floats
  // after the last layer (e.g. the loss sum) ride in the first bucket.
  GradBuckets(const std::vector<Range>& layers, size_t tail,
              size_t first_bucket_bytes = kFirstBucketBytes,
              size_t bucket_bytes = kBucketBytes);

  const std::vector<Bucket>& buckets() const { return buckets_; }

  // Resets readiness for a new step.
  void BeginStep();
  // Marks `layer` ready and launches every bucket that became complete.
  // Returns the first launch error.
  absl::Status MarkReady(int layer, const LaunchFn& launch);
  // True when every bucket has been launched this step.
  bool AllLaunched() const { return next_bucket_ == buckets_.size(); }

 private:
  std::vector<Bucket> buckets_;
  std::vector<bool> ready_;
  size_t next_bucket_ = 0;
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_GRAD_BUCKETS_H_

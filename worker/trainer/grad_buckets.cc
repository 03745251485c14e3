#include "worker/trainer/grad_buckets.h"

namespace tupa::trainer {

GradBuckets::GradBuckets(const std::vector<Range>& layers, size_t tail,
                         size_t first_bucket_bytes, size_t bucket_bytes)
    : ready_(layers.size(), false) {
  const int n = static_cast<int>(layers.size());
  int hi = n - 1;
  size_t bytes = tail * sizeof(float);
  for (int i = n - 1; i >= 0; --i) {
    bytes += layers[i].count * sizeof(float);
    const size_t cap = buckets_.empty() ? first_bucket_bytes : bucket_bytes;
    if (bytes >= cap || i == 0) {
      Bucket b;
      b.first_layer = i;
      b.last_layer = hi;
      b.range.offset = layers[i].offset;
      b.range.count = layers[hi].offset + layers[hi].count - layers[i].offset;
      if (buckets_.empty()) b.range.count += tail;
      buckets_.push_back(b);
      hi = i - 1;
      bytes = 0;
    }
  }
}

void GradBuckets::BeginStep() {
  ready_.assign(ready_.size(), false);
  next_bucket_ = 0;
}

absl::Status GradBuckets::MarkReady(int layer, const LaunchFn& launch) {
  ready_[layer] = true;
  while (next_bucket_ < buckets_.size()) {
    const Bucket& b = buckets_[next_bucket_];
    for (int i = b.first_layer; i <= b.last_layer; ++i) {
      if (!ready_[i]) return absl::OkStatus();
    }
    absl::Status s = launch(b.range.offset, b.range.count);
    if (!s.ok()) return s;
    ++next_bucket_;
  }
  return absl::OkStatus();
}

}  // namespace tupa::trainer

#include "worker/trainer/loader.h"

#include <algorithm>
#include <numeric>

#include "worker/trainer/rng.h"

namespace tupa::trainer {

ShardSampler::ShardSampler(int64_t dataset_size, int rank, int world_size,
                           int batch, uint64_t seed)
    : n_(dataset_size),
      rank_(rank),
      world_(world_size),
      batch_(batch),
      seed_(seed),
      per_rank_((dataset_size + world_size - 1) / world_size) {}

std::vector<int64_t> ShardSampler::EpochIndices(int64_t epoch) const {
  std::vector<int64_t> perm(n_);
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(seed_, 0x5348554646ULL + static_cast<uint64_t>(epoch));
  for (int64_t i = n_ - 1; i > 0; --i) {
    std::swap(perm[i], perm[rng.Below(static_cast<uint64_t>(i) + 1)]);
  }
  std::vector<int64_t> mine(per_rank_);
  for (int64_t k = 0; k < per_rank_; ++k) {
    mine[k] = perm[(rank_ + k * world_) % n_];  // wrap-around padding
  }
  return mine;
}

BatchLoader::BatchLoader(Backend* backend, const Dataset* data,
                         const ShardSampler* sampler, int batch,
                         int64_t first_step, int64_t last_step, int depth)
    : backend_(backend),
      data_(data),
      sampler_(sampler),
      batch_(batch),
      first_step_(first_step),
      last_step_(last_step),
      depth_(depth),
      next_step_to_hand_out_(first_step) {}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (Batch& b : slots_) {
    backend_->FreeHost(b.x);
    backend_->FreeHost(b.y);
  }
}

absl::Status BatchLoader::Start() {
  slots_.resize(depth_);
  for (Batch& b : slots_) {
    absl::StatusOr<void*> x = backend_->AllocHost(
        sizeof(float) * static_cast<size_t>(batch_) * data_->features());
    if (!x.ok()) return x.status();
    b.x = static_cast<float*>(*x);
    absl::StatusOr<void*> y = backend_->AllocHost(sizeof(int32_t) * batch_);
    if (!y.ok()) return y.status();
    b.y = static_cast<int32_t*>(*y);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Batch& b : slots_) free_.push_back(&b);
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void BatchLoader::Run() {
  const int64_t spe = sampler_->steps_per_epoch();
  int64_t cached_epoch = -1;
  std::vector<int64_t> indices;
  for (int64_t step = first_step_; step < last_step_; ++step) {
    Batch* slot;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !free_.empty(); });
      if (stop_) return;
      slot = free_.front();
      free_.pop_front();
    }
    const int64_t epoch = step / spe;
    if (epoch != cached_epoch) {
      indices = sampler_->EpochIndices(epoch);
      cached_epoch = epoch;
    }
    const int64_t pos = (step % spe) * batch_;
    data_->Gather(indices.data() + pos, batch_, slot->x, slot->y);
    slot->step = step;
    slot->epoch = epoch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(slot);
    }
    cv_.notify_all();
  }
}

absl::StatusOr<Batch*> BatchLoader::Next() {
  if (next_step_to_hand_out_ >= last_step_) {
    return absl::OutOfRangeError("no more batches");
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !ready_.empty(); });
  Batch* b = ready_.front();
  ready_.pop_front();
  ++next_step_to_hand_out_;
  return b;
}

void BatchLoader::Release(Batch* batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(batch);
  }
  cv_.notify_all();
}

}  // namespace tupa::trainer

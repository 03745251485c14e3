#include "scheduler/store/submit_batcher.h"

#include "absl/synchronization/notification.h"

namespace tupa::scheduler {

SubmitBatcher::SubmitBatcher(JobStore* store, int committers, int max_batch)
    : store_(store), max_batch_(max_batch) {
  for (int i = 0; i < std::max(1, committers); ++i)
    committers_.emplace_back([this] { CommitLoop(); });
}

SubmitBatcher::~SubmitBatcher() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : committers_) t.join();
}

void SubmitBatcher::SubmitAsync(v1::JobSpec spec, std::string idempotency_key,
                                Done done) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back(
          {std::move(spec), std::move(idempotency_key), std::move(done)});
      return;
    }
  }
  done(absl::UnavailableError("scheduler is shutting down"));
}

absl::StatusOr<SubmitResult> SubmitBatcher::Submit(
    const v1::JobSpec& spec, const std::string& idempotency_key) {
  absl::StatusOr<SubmitResult> result;
  absl::Notification finished;
  SubmitAsync(spec, idempotency_key, [&](absl::StatusOr<SubmitResult> r) {
    result = std::move(r);
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

void SubmitBatcher::CommitLoop() {
  while (true) {
    std::vector<Request> batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty() && stopping_) return;
      while (!queue_.empty() && static_cast<int>(batch.size()) < max_batch_) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    std::vector<SubmitRequest> requests;
    requests.reserve(batch.size());
    for (const Request& r : batch) requests.push_back({&r.spec, &r.key});
    absl::StatusOr<std::vector<SubmitResult>> results =
        store_->SubmitJobs(requests);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (results.ok()) {
        batch[i].done(std::move((*results)[i]));
      } else {
        batch[i].done(results.status());
      }
    }
  }
}

}  // namespace tupa::scheduler

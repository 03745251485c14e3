#include "scheduler/store/submit_batcher.h"

#include "absl/synchronization/notification.h"

namespace tupa::scheduler {

struct SubmitBatcher::Request {
  const v1::JobSpec* spec;
  const std::string* key;
  absl::StatusOr<SubmitResult> result;
  absl::Notification done;
};

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

absl::StatusOr<SubmitResult> SubmitBatcher::Submit(
    const v1::JobSpec& spec, const std::string& idempotency_key) {
  Request request{&spec, &idempotency_key, absl::UnknownError("not run"), {}};
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("scheduler is shutting down");
    queue_.push_back(&request);
  }
  request.done.WaitForNotification();
  return std::move(request.result);
}

void SubmitBatcher::CommitLoop() {
  while (true) {
    std::vector<Request*> batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty() && stopping_) return;
      while (!queue_.empty() && static_cast<int>(batch.size()) < max_batch_) {
        batch.push_back(queue_.front());
        queue_.pop_front();
      }
    }
    std::vector<SubmitRequest> requests;
    requests.reserve(batch.size());
    for (Request* r : batch) requests.push_back({r->spec, r->key});
    absl::StatusOr<std::vector<SubmitResult>> results =
        store_->SubmitJobs(requests);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (results.ok()) {
        batch[i]->result = std::move((*results)[i]);
      } else {
        batch[i]->result = results.status();
      }
      batch[i]->done.Notify();
    }
  }
}

}  // namespace tupa::scheduler

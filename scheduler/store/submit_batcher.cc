#include "scheduler/store/submit_batcher.h"

#include "absl/synchronization/notification.h"
#include "common/thread_name.h"

namespace tupa::scheduler {

SubmitBatcher::SubmitBatcher(JobStore* store, int committers, int max_batch)
    : store_(store), max_batch_(max_batch) {
  for (int i = 0; i < std::max(1, committers); ++i)
    committers_.emplace_back([this] {
      NameThisThread("tupa-submit");
      CommitLoop();
    });
  completer_ = std::thread([this] {
    NameThisThread("tupa-submit-ack");
    CompleteLoop();
  });
}

SubmitBatcher::~SubmitBatcher() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : committers_) t.join();
  {
    absl::MutexLock lock(&done_mu_);
    committers_done_ = true;
  }
  completer_.join();
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
    absl::MutexLock lock(&done_mu_);
    finished_.push_back({std::move(batch), std::move(results)});
  }
}

void SubmitBatcher::CompleteLoop() {
  while (true) {
    std::deque<Finished> finished;
    {
      absl::MutexLock lock(&done_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(done_mu_) {
        return !finished_.empty() || committers_done_;
      };
      done_mu_.Await(absl::Condition(&ready));
      if (finished_.empty() && committers_done_) return;
      finished.swap(finished_);
    }
    for (Finished& f : finished) {
      for (size_t i = 0; i < f.batch.size(); ++i) {
        if (f.results.ok()) {
          f.batch[i].done(std::move((*f.results)[i]));
        } else {
          f.batch[i].done(f.results.status());
        }
      }
    }
  }
}

}  // namespace tupa::scheduler

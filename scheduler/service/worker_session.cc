#include "scheduler/service/worker_session.h"

namespace tupa::scheduler {

void WorkerSession::Push(v1::SchedulerMessage message) {
  absl::MutexLock lock(&mu_);
  if (!closed_) queue_.push_back(std::move(message));
}

bool WorkerSession::Pop(v1::SchedulerMessage* out, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || !queue_.empty();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (closed_) return false;
  if (queue_.empty()) {
    out->Clear();
    return true;  // timed out: caller loops
  }
  *out = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void WorkerSession::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  queue_.clear();
}

bool WorkerSession::closed() {
  absl::MutexLock lock(&mu_);
  return closed_;
}

}  // namespace tupa::scheduler

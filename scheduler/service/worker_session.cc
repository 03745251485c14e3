#include "scheduler/service/worker_session.h"

namespace tupa::scheduler {

void WorkerSession::Attach(std::weak_ptr<Listener> listener) {
  {
    absl::MutexLock lock(&mu_);
    listener_ = std::move(listener);
  }
  Notify();
}

void WorkerSession::Push(v1::SchedulerMessage message) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    queue_.push_back(std::move(message));
  }
  Notify();
}

bool WorkerSession::TryPop(v1::SchedulerMessage* out) {
  absl::MutexLock lock(&mu_);
  if (closed_ || queue_.empty()) return false;
  *out = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void WorkerSession::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    queue_.clear();
  }
  Notify();
}

bool WorkerSession::closed() {
  absl::MutexLock lock(&mu_);
  return closed_;
}

void WorkerSession::Notify() {
  std::shared_ptr<Listener> listener;
  {
    absl::MutexLock lock(&mu_);
    listener = listener_.lock();
  }
  if (listener) listener->OnSessionReady();
}

}  // namespace tupa::scheduler

#include "bench/fleet_sim/worker_stream.h"

namespace tupa::fleet_sim {

std::shared_ptr<WorkerStream> WorkerStream::Create(OnMessage on_message,
                                                   OnDoneFn on_done) {
  std::shared_ptr<WorkerStream> s(
      new WorkerStream(std::move(on_message), std::move(on_done)));
  s->self_ = s;
  return s;
}

WorkerStream::WorkerStream(OnMessage on_message, OnDoneFn on_done)
    : on_message_(std::move(on_message)), on_done_(std::move(on_done)) {}

void WorkerStream::Start(v1::WorkerService::Stub* stub, v1::WorkerMessage first,
                         std::vector<v1::WorkerMessage> then) {
  stub->async()->Connect(&ctx_, this);
  // Held until Close(): writes may start from any thread until then (a
  // hold must be added before StartCall).
  AddHold();
  {
    absl::MutexLock lock(&mu_);
    out_ = std::move(first);
    writing_ = true;
    for (auto& m : then) queue_.push_back(std::move(m));
  }
  StartWrite(&out_);
  StartRead(&in_);
  StartCall();
}

bool WorkerStream::Send(v1::WorkerMessage message) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    if (writing_) {
      queue_.push_back(std::move(message));
      return true;
    }
    writing_ = true;
    out_ = std::move(message);
  }
  StartWrite(&out_);
  return true;
}

void WorkerStream::Cancel() { ctx_.TryCancel(); }

void WorkerStream::OnReadDone(bool ok) {
  if (!ok) {
    Close();
    return;
  }
  on_message_(*this, in_);
  StartRead(&in_);
}

void WorkerStream::OnWriteDone(bool ok) {
  bool next = false, release = false;
  {
    absl::MutexLock lock(&mu_);
    if (!ok) closed_ = true;
    if (!closed_ && !queue_.empty()) {
      out_ = std::move(queue_.front());
      queue_.pop_front();
      next = true;
    } else {
      writing_ = false;
      if (closed_ && !hold_released_) release = hold_released_ = true;
    }
  }
  if (!ok) ctx_.TryCancel();  // the read ends too
  if (next) StartWrite(&out_);
  if (release) RemoveHold();
}

void WorkerStream::Close() {
  bool release = false;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    queue_.clear();
    if (!writing_ && !hold_released_) release = hold_released_ = true;
  }
  if (release) RemoveHold();
}

void WorkerStream::OnDone(const grpc::Status& status) {
  on_done_(status);
  std::shared_ptr<WorkerStream> last = std::move(self_);  // may free this
}

}  // namespace tupa::fleet_sim

// WorkerSession: the scheduler's side of one worker's Connect stream.
//
// The scheduling core pushes SchedulerMessages; the stream's handler thread
// pops and writes them. Close() ends the session (the handler then cancels
// the stream). Thread-safe.
#ifndef TUPA_SCHEDULER_SERVICE_WORKER_SESSION_H_
#define TUPA_SCHEDULER_SERVICE_WORKER_SESSION_H_

#include <deque>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::scheduler {

class WorkerSession {
 public:
  WorkerSession(std::string worker_id, uint64_t serial)
      : worker_id_(std::move(worker_id)), serial_(serial) {}

  const std::string& worker_id() const { return worker_id_; }
  uint64_t serial() const { return serial_; }

  // Queues a message; dropped when the session is closed.
  void Push(v1::SchedulerMessage message);
  // Waits up to `timeout` for a message. Returns false once closed.
  bool Pop(v1::SchedulerMessage* out, absl::Duration timeout);
  void Close();
  bool closed();

 private:
  const std::string worker_id_;
  const uint64_t serial_;
  absl::Mutex mu_;
  std::deque<v1::SchedulerMessage> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_WORKER_SESSION_H_

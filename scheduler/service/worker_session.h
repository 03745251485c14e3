// WorkerSession: the scheduler's side of one worker's Connect stream.
//
// The scheduling core pushes SchedulerMessages (under its own mutex: Push
// never blocks); the stream (worker_stream.h) takes them with TryPop and
// writes them one at a time. The attached Listener is told, outside the
// session's lock, whenever a message is queued or the session closes.
// Close() ends the session: queued messages are dropped and the stream
// finishes. Thread-safe.
#ifndef TUPA_SCHEDULER_SERVICE_WORKER_SESSION_H_
#define TUPA_SCHEDULER_SERVICE_WORKER_SESSION_H_

#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::scheduler {

class WorkerSession {
 public:
  // Whoever writes the session's messages. OnSessionReady may run on any
  // thread, including one that holds the core's mutex: it must not block
  // or call into the core.
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void OnSessionReady() = 0;
  };

  WorkerSession(std::string worker_id, uint64_t serial)
      : worker_id_(std::move(worker_id)), serial_(serial) {}

  const std::string& worker_id() const { return worker_id_; }
  uint64_t serial() const { return serial_; }

  // Attaches the writer (weakly: a stream that ended is not kept alive)
  // and tells it once, for what was queued before.
  void Attach(std::weak_ptr<Listener> listener);
  // Queues a message; dropped when the session is closed.
  void Push(v1::SchedulerMessage message);
  // Takes the oldest queued message; false when none is queued (or closed).
  bool TryPop(v1::SchedulerMessage* out);
  void Close();
  bool closed();

 private:
  void Notify();

  const std::string worker_id_;
  const uint64_t serial_;
  absl::Mutex mu_;
  std::deque<v1::SchedulerMessage> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::weak_ptr<Listener> listener_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_WORKER_SESSION_H_

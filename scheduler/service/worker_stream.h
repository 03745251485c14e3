// A worker's Connect stream served on gRPC's callback API, and the inbox
// that applies what workers send to the scheduling core.
//
// No thread is held per worker (the sync API held two: 1,000 workers were
// 2,000 threads, and the scheduler spent half its CPU switching between
// them). Each WorkerStream has at most one read and one write in flight:
//  - a message read is handed to the WorkerInbox, and the next read starts
//    only once the inbox has applied it (per-stream order and flow control:
//    a worker that floods the stream waits, the others do not);
//  - messages the core queued on the stream's WorkerSession are written
//    one at a time, as each write completes.
// The WorkerInbox is one thread that applies every message that arrived
// since its last round to the core under ONE lock of the core's mutex
// (SchedulerCore::HandleWorkerMessages), answers heartbeats after their
// lease renewal, connects hellos and disconnects ended streams. Nothing on
// gRPC's threads waits for the core's mutex.
#ifndef TUPA_SCHEDULER_SERVICE_WORKER_STREAM_H_
#define TUPA_SCHEDULER_SERVICE_WORKER_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/service/worker_session.h"
#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::scheduler {

class SchedulerCore;
class WorkerInbox;

class WorkerStream final
    : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::SchedulerMessage>,
      public WorkerSession::Listener,
      public std::enable_shared_from_this<WorkerStream> {
 public:
  // Checks the first message's hello before the core sees it (join token,
  // fields): OK, or the status the stream is finished with.
  using Admit = std::function<absl::Status(const v1::Hello&)>;

  // A new stream that owns itself until gRPC is done with it (OnDone);
  // the pointer is the reactor to return from the service method.
  static WorkerStream* Start(WorkerInbox* inbox, Admit admit);
  // A stream finished at once with `status` (e.g. refused credentials).
  static grpc::ServerBidiReactor<v1::WorkerMessage, v1::SchedulerMessage>*
  Refused(grpc::Status status);

  WorkerStream(WorkerInbox* inbox, Admit admit);

  // For the inbox, between the stream's Arrived() and its ReadNext().
  const v1::WorkerMessage& incoming() const { return in_; }
  std::shared_ptr<WorkerSession> session();
  // Binds the session the core made for this stream's hello and starts
  // writing and reading; false when the stream ended meanwhile (the
  // caller then disconnects the session).
  bool Bind(std::shared_ptr<WorkerSession> session);
  // Reads the next message (after the inbox applied the last one).
  void ReadNext();
  // Ends the stream with `status` (a refused hello, the session closed).
  void End(grpc::Status status);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;
  void OnSessionReady() override;

 private:
  void WriteOrFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  WorkerInbox* const inbox_;
  const Admit admit_;
  v1::WorkerMessage in_;  // the one read in flight or at the inbox
  absl::Mutex mu_;
  std::shared_ptr<WorkerStream> self_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<WorkerSession> session_ ABSL_GUARDED_BY(mu_);
  v1::SchedulerMessage out_ ABSL_GUARDED_BY(mu_);  // the write in flight
  bool admitted_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
};

class WorkerInbox {
 public:
  explicit WorkerInbox(SchedulerCore* core);
  // Applies what is queued, then stops. The core must outlive it; the
  // gRPC server must be shut down first (no stream left to post).
  ~WorkerInbox();

  // `stream->incoming()` waits to be applied (a hello connects).
  void Arrived(std::shared_ptr<WorkerStream> stream);
  // A bound stream ended: its session is disconnected from the core.
  void Ended(std::shared_ptr<WorkerSession> session);

 private:
  void Run();

  SchedulerCore* const core_;
  absl::Mutex mu_;
  std::vector<std::shared_ptr<WorkerStream>> arrived_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<WorkerSession>> ended_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_WORKER_STREAM_H_

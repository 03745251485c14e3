// WorkerStream: one Connect stream of a simulated worker, on the gRPC
// callback API (ClientBidiReactor): no thread of its own. Messages read are
// handed to `on_message` (on a gRPC thread, one at a time); Send() queues a
// message and writes queued ones one after another; `on_done` runs once,
// after the stream ended (any reason) and every operation completed.
//
// Lifetime: Create() returns a shared_ptr; the stream also holds itself
// until on_done ran, so it stays valid while gRPC may call it. Send() on a
// stream that is closing returns false and writes nothing. Thread-safe.
// Callers must not hold a lock that on_message or on_done take while
// calling Send() or Cancel(): gRPC may run reactions inline.
#ifndef TUPA_BENCH_FLEET_SIM_WORKER_STREAM_H_
#define TUPA_BENCH_FLEET_SIM_WORKER_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tupa/v1/worker_protocol.grpc.pb.h"

namespace tupa::fleet_sim {

class WorkerStream
    : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::SchedulerMessage> {
 public:
  using OnMessage =
      std::function<void(WorkerStream&, const v1::SchedulerMessage&)>;
  using OnDoneFn = std::function<void(const grpc::Status&)>;

  static std::shared_ptr<WorkerStream> Create(OnMessage on_message,
                                              OnDoneFn on_done);
  // Starts the call with `first` (the hello) and `then` queued in order.
  void Start(v1::WorkerService::Stub* stub, v1::WorkerMessage first,
             std::vector<v1::WorkerMessage> then);
  bool Send(v1::WorkerMessage message);
  // Ends the stream (on_done follows with CANCELLED).
  void Cancel();

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  WorkerStream(OnMessage on_message, OnDoneFn on_done);
  // Marks the stream closed; releases the hold once no write is in flight.
  void Close();

  const OnMessage on_message_;
  const OnDoneFn on_done_;
  grpc::ClientContext ctx_;
  v1::SchedulerMessage in_;  // owned by the outstanding read
  absl::Mutex mu_;
  std::deque<v1::WorkerMessage> queue_ ABSL_GUARDED_BY(mu_);
  v1::WorkerMessage out_;  // owned by the write in flight
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<WorkerStream> self_;  // until OnDone
};

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_WORKER_STREAM_H_

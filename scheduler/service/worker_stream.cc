#include "scheduler/service/worker_stream.h"

#include <glog/logging.h>

#include "common/grpc_status.h"
#include "common/thread_name.h"
#include "scheduler/service/scheduler_core.h"

namespace tupa::scheduler {
namespace {

// Finishes with its status as soon as it is bound (gRPC's own pattern for
// an unimplemented method).
class RefusedStream final
    : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::SchedulerMessage> {
 public:
  explicit RefusedStream(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

// gRPC never runs a reaction inline from StartRead, StartWrite or Finish
// (their tags are not inlineable), so those are called under mu_: the
// state they depend on cannot change between the check and the call.

WorkerStream* WorkerStream::Start(WorkerInbox* inbox, Admit admit) {
  auto stream = std::make_shared<WorkerStream>(inbox, std::move(admit));
  absl::MutexLock lock(&stream->mu_);
  stream->self_ = stream;
  stream->StartRead(&stream->in_);
  return stream.get();
}

grpc::ServerBidiReactor<v1::WorkerMessage, v1::SchedulerMessage>*
WorkerStream::Refused(grpc::Status status) {
  return new RefusedStream(std::move(status));
}

WorkerStream::WorkerStream(WorkerInbox* inbox, Admit admit)
    : inbox_(inbox), admit_(std::move(admit)) {}

std::shared_ptr<WorkerSession> WorkerStream::session() {
  absl::MutexLock lock(&mu_);
  return session_;
}

void WorkerStream::OnReadDone(bool ok) {
  if (!ok) {  // the worker closed its side, or the call ended
    End(grpc::Status::OK);
    return;
  }
  bool first;
  {
    absl::MutexLock lock(&mu_);
    first = !admitted_;
    admitted_ = true;
  }
  if (first) {
    if (!in_.has_hello()) {
      End(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       "hello: the first message must be a hello"));
      return;
    }
    if (absl::Status s = admit_(in_.hello()); !s.ok()) {
      End(ToGrpcStatus(s));
      return;
    }
  }
  inbox_->Arrived(shared_from_this());
}

bool WorkerStream::Bind(std::shared_ptr<WorkerSession> session) {
  {
    absl::MutexLock lock(&mu_);
    if (ending_ || done_) return false;
    session_ = session;
  }
  // Writes what the core queued (the welcome) and whatever comes next.
  session->Attach(weak_from_this());
  ReadNext();
  return true;
}

void WorkerStream::ReadNext() {
  absl::MutexLock lock(&mu_);
  if (!ending_) StartRead(&in_);
}

void WorkerStream::End(grpc::Status status) {
  std::shared_ptr<WorkerSession> session;
  {
    absl::MutexLock lock(&mu_);
    if (!ending_) {
      ending_ = true;
      status_ = std::move(status);
    }
    session = session_;
    WriteOrFinishLocked();
  }
  // Nothing more is written to a session whose stream ended (outside mu_:
  // Close notifies this stream).
  if (session) session->Close();
}

void WorkerStream::OnSessionReady() {
  bool closed;
  {
    absl::MutexLock lock(&mu_);
    if (ending_ || session_ == nullptr) {
      WriteOrFinishLocked();
      return;
    }
    if (writing_) return;  // OnWriteDone takes the next one
    closed = session_->closed();
    if (!closed) WriteOrFinishLocked();
  }
  // The core closed the session (replaced by a newer stream, the worker
  // lost or stopped, the scheduler shutting down): the stream ends.
  if (closed) End(grpc::Status::OK);
}

void WorkerStream::OnWriteDone(bool ok) {
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
  }
  if (!ok) {
    End(grpc::Status::OK);
    return;
  }
  OnSessionReady();
}

void WorkerStream::WriteOrFinishLocked() {
  if (finished_ || writing_) return;
  if (!ending_) {
    if (session_ != nullptr && session_->TryPop(&out_)) {
      writing_ = true;
      StartWrite(&out_);
    }
    return;
  }
  finished_ = true;
  Finish(status_);
}

void WorkerStream::OnCancel() { End(grpc::Status::CANCELLED); }

void WorkerStream::OnDone() {
  std::shared_ptr<WorkerStream> self;
  std::shared_ptr<WorkerSession> session;
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
    session = session_;
    self.swap(self_);  // freed once the inbox holds it no more
  }
  if (session) inbox_->Ended(std::move(session));
}

WorkerInbox::WorkerInbox(SchedulerCore* core)
    : core_(core), thread_([this] {
        NameThisThread("tupa-inbox");
        Run();
      }) {}

WorkerInbox::~WorkerInbox() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void WorkerInbox::Arrived(std::shared_ptr<WorkerStream> stream) {
  absl::MutexLock lock(&mu_);
  arrived_.push_back(std::move(stream));
}

void WorkerInbox::Ended(std::shared_ptr<WorkerSession> session) {
  absl::MutexLock lock(&mu_);
  ended_.push_back(std::move(session));
}

void WorkerInbox::Run() {
  while (true) {
    std::vector<std::shared_ptr<WorkerStream>> arrived;
    std::vector<std::shared_ptr<WorkerSession>> ended;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || !arrived_.empty() || !ended_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (arrived_.empty() && ended_.empty()) return;  // stopping, drained
      arrived.swap(arrived_);
      ended.swap(ended_);
    }
    std::vector<SchedulerCore::WorkerInput> batch;
    std::vector<WorkerStream*> batched;
    for (const std::shared_ptr<WorkerStream>& stream : arrived) {
      std::shared_ptr<WorkerSession> session = stream->session();
      if (session) {
        batch.push_back({std::move(session), &stream->incoming()});
        batched.push_back(stream.get());
        continue;
      }
      auto connected = core_->ConnectWorker(stream->incoming().hello());
      if (!connected.ok()) {
        stream->End(ToGrpcStatus(connected.status()));
      } else if (!stream->Bind(*connected)) {
        core_->DisconnectWorker(*connected);
      }
    }
    core_->HandleWorkerMessages(batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      // After the core renewed the lease with it (last_seen): the worker's
      // own lease then runs from this heartbeat's send time, never past
      // ours (DESIGN §5 "Fencing across a partition"). A session the core
      // has replaced or closed drops the ack.
      if (batch[i].message->has_heartbeat()) {
        v1::SchedulerMessage ack;
        ack.mutable_heartbeat_ack()->set_seq(
            batch[i].message->heartbeat().seq());
        ack.mutable_heartbeat_ack()->set_heartbeat_interval_ms(
            core_->HeartbeatIntervalMs());
        batch[i].session->Push(std::move(ack));
      }
      batched[i]->ReadNext();
    }
    for (const std::shared_ptr<WorkerSession>& session : ended)
      core_->DisconnectWorker(session);
  }
}

}  // namespace tupa::scheduler

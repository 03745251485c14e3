#include <thread>

#include "common/grpc_status.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {

grpc::Status WorkerServiceImpl::Connect(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::SchedulerMessage, v1::WorkerMessage>* stream) {
  v1::WorkerMessage first;
  if (!stream->Read(&first)) return grpc::Status::OK;
  if (!first.has_hello())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "hello: the first message must be a hello");
  auto session = core_->ConnectWorker(first.hello());
  if (!session.ok()) return ToGrpcStatus(session.status());
  std::shared_ptr<WorkerSession> s = *session;
  // Reads run on their own thread; this one writes what the core queues.
  std::thread reader([&] {
    v1::WorkerMessage m;
    while (stream->Read(&m)) core_->HandleWorkerMessage(s, m);
    s->Close();
  });
  v1::SchedulerMessage out;
  while (s->Pop(&out, absl::Milliseconds(500))) {
    if (out.msg_case() == v1::SchedulerMessage::MSG_NOT_SET) continue;
    if (!stream->Write(out)) break;
  }
  s->Close();
  ctx->TryCancel();
  reader.join();
  core_->DisconnectWorker(s);
  return grpc::Status::OK;
}

}  // namespace tupa::scheduler

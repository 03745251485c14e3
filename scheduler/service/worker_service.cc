#include <glog/logging.h>
#include <openssl/crypto.h>

#include <thread>

#include "absl/strings/escaping.h"
#include "common/grpc_status.h"
#include "scheduler/service/request_validation.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {
namespace {

// Constant-time comparison of the join token (no length-dependent early
// exit on content).
bool TokenMatches(const std::string& expected, const std::string& given) {
  return expected.size() == given.size() &&
         CRYPTO_memcmp(expected.data(), given.data(), expected.size()) == 0;
}

}  // namespace

grpc::Status WorkerServiceImpl::Connect(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::SchedulerMessage, v1::WorkerMessage>* stream) {
  // gRPC verified the certificate against the client CA during the
  // handshake if one was presented; a worker must have presented one.
  if (require_client_cert_ && !ctx->auth_context()->IsPeerAuthenticated()) {
    LOG(WARNING) << "refused a worker from " << ctx->peer()
                 << ": no client certificate";
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "client certificate required: start the worker with "
                        "--tls-cert and --tls-key signed by the scheduler's "
                        "client CA");
  }
  v1::WorkerMessage first;
  if (!stream->Read(&first)) return grpc::Status::OK;
  if (!first.has_hello())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "hello: the first message must be a hello");
  if (!join_token_.empty() &&
      !TokenMatches(join_token_, first.hello().join_token())) {
    // Escaped: an unauthenticated peer must not be able to forge log lines.
    LOG(WARNING) << "refused worker \""
                 << absl::CHexEscape(first.hello().worker_id().substr(0, 256))
                 << "\" from " << ctx->peer() << ": "
                 << (first.hello().join_token().empty() ? "no join token"
                                                        : "wrong join token");
    return grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        first.hello().join_token().empty()
            ? "join token required: start the worker with --join-token-file "
              "or TUPA_JOIN_TOKEN"
            : "join token rejected: the worker's join token does not match "
              "the scheduler's");
  }
  if (auto s = ValidateHello(first.hello()); !s.ok()) return ToGrpcStatus(s);
  auto session = core_->ConnectWorker(first.hello());
  if (!session.ok()) return ToGrpcStatus(session.status());
  std::shared_ptr<WorkerSession> s = *session;
  // Reads run on their own thread; this one writes what the core queues.
  std::thread reader([&] {
    v1::WorkerMessage m;
    while (stream->Read(&m)) {
      core_->HandleWorkerMessage(s, m);
      // After the core renewed the lease with it (last_seen): the worker's
      // own lease then runs from this heartbeat's send time, never past
      // ours (DESIGN §5 "Fencing across a partition"). A session the core
      // has replaced or closed drops the ack.
      if (m.has_heartbeat()) {
        v1::SchedulerMessage ack;
        ack.mutable_heartbeat_ack()->set_seq(m.heartbeat().seq());
        s->Push(std::move(ack));
      }
    }
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

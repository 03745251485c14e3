#include <glog/logging.h>
#include <openssl/crypto.h>

#include "absl/strings/escaping.h"
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

grpc::ServerBidiReactor<v1::WorkerMessage, v1::SchedulerMessage>*
WorkerServiceImpl::Connect(grpc::CallbackServerContext* ctx) {
  // gRPC verified the certificate against the client CA during the
  // handshake if one was presented; a worker must have presented one.
  if (require_client_cert_ && !ctx->auth_context()->IsPeerAuthenticated()) {
    LOG(WARNING) << "refused a worker from " << ctx->peer()
                 << ": no client certificate";
    return WorkerStream::Refused(
        grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                     "client certificate required: start the worker with "
                     "--tls-cert and --tls-key signed by the scheduler's "
                     "client CA"));
  }
  return WorkerStream::Start(
      &inbox_, [this, peer = ctx->peer()](const v1::Hello& hello) {
        return Admit(peer, hello);
      });
}

absl::Status WorkerServiceImpl::Admit(const std::string& peer,
                                      const v1::Hello& hello) const {
  if (!join_token_.empty() && !TokenMatches(join_token_, hello.join_token())) {
    // Escaped: an unauthenticated peer must not be able to forge log lines.
    LOG(WARNING) << "refused worker \""
                 << absl::CHexEscape(hello.worker_id().substr(0, 256))
                 << "\" from " << peer << ": "
                 << (hello.join_token().empty() ? "no join token"
                                                : "wrong join token");
    return absl::UnauthenticatedError(
        hello.join_token().empty()
            ? "join token required: start the worker with --join-token-file "
              "or TUPA_JOIN_TOKEN"
            : "join token rejected: the worker's join token does not match "
              "the scheduler's");
  }
  return ValidateHello(hello);
}

}  // namespace tupa::scheduler

#include "client/connection.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/client_credentials.h"
#include "common/grpc_status.h"

namespace tupa::client {
namespace {

constexpr absl::Duration kFirstBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(2);

bool IsRetryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE ||
         code == grpc::StatusCode::DEADLINE_EXCEEDED;
}

}  // namespace

absl::Duration NextBackoff(absl::Duration current) {
  if (current < kFirstBackoff) return kFirstBackoff;
  return std::min(current * 2, kMaxBackoff);
}

Connection::Connection(ConnectionOptions options)
    : options_(std::move(options)) {
  grpc::ChannelArguments args;
  // Reconnect quickly after a scheduler restart; the defaults back off to
  // two minutes, far longer than a CLI call lives. Not
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC reads it as the connect timeout
  // (until the server's SETTINGS frame), and at 100 ms a busy scheduler's
  // connections failed with "timed out before receiving SETTINGS frame".
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  // The CLI retries on its own, with the same idempotency key (NextBackoff),
  // so gRPC's transparent retries only add a filter to every call; channelz
  // is not served. Both off: bench/submit_load.cc uses the same arguments.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_ENABLE_CHANNELZ, 0);
  // A listing carries every job's spec (up to 96 KiB each, see
  // ValidateJobSpec): 500 of them exceed gRPC's default 4 MiB.
  args.SetMaxReceiveMessageSize(64 << 20);
  channel_ = grpc::CreateCustomChannel(
      options_.target,
      ClientCredentials(options_.tls_ca_pem, options_.tls_cert_pem,
                        options_.tls_key_pem),
      args);
  jobs_ = v1::JobService::NewStub(channel_);
  cluster_ = v1::ClusterService::NewStub(channel_);
  admin_ = v1::AdminService::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> Connection::NewContext(
    absl::Duration timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (timeout != absl::InfiniteDuration())
    context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!options_.token.empty())
    context->AddMetadata("authorization",
                         absl::StrCat("Bearer ", options_.token));
  return context;
}

absl::Status Connection::Call(
    const std::function<grpc::Status(grpc::ClientContext*)>& rpc) {
  const absl::Time give_up = absl::Now() + options_.retry_for;
  absl::Duration backoff = absl::ZeroDuration();
  while (true) {
    std::unique_ptr<grpc::ClientContext> context =
        NewContext(options_.call_timeout);
    const grpc::Status status = rpc(context.get());
    if (!IsRetryable(status.error_code())) return Convert(status);
    backoff = NextBackoff(backoff);
    const absl::Time now = absl::Now();
    if (now + backoff > give_up) return Convert(status);
    absl::SleepFor(backoff);
  }
}

bool Connection::Connected() const {
  return channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
}

absl::Status Connection::Convert(const grpc::Status& status) const {
  const absl::Status converted = FromGrpcStatus(status);
  if (!IsRetryable(status.error_code())) return converted;
  return absl::Status(
      converted.code(),
      absl::StrCat(
          "scheduler at ", options_.target, " unreachable: ",
          converted.message().empty() ? "no response" : converted.message()));
}

}  // namespace tupa::client

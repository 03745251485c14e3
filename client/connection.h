// The CLI's connection to the scheduler: one channel, stubs for the two
// public services, per-call contexts carrying a deadline and the bearer
// token, and the retry loop for UNAVAILABLE / DEADLINE_EXCEEDED.
// Not thread-safe (the CLI is single-threaded).
#ifndef TUPA_CLIENT_CONNECTION_H_
#define TUPA_CLIENT_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tupa/v1/admin.grpc.pb.h"
#include "tupa/v1/cluster.grpc.pb.h"
#include "tupa/v1/job_service.grpc.pb.h"

namespace tupa::client {

inline constexpr char kDefaultScheduler[] = "localhost:50051";
inline constexpr absl::Duration kDefaultCallTimeout = absl::Seconds(30);

struct ConnectionOptions {
  std::string target = kDefaultScheduler;  // host:port
  std::string token;                       // sent as "Bearer <token>" if set
  // TLS, as PEM text: a non-empty CA (or client cert) switches to TLS;
  // cert+key are presented to a scheduler that requires client certs.
  std::string tls_ca_pem;
  std::string tls_cert_pem;
  std::string tls_key_pem;
  absl::Duration call_timeout = kDefaultCallTimeout;  // per attempt
  absl::Duration retry_for = absl::ZeroDuration();    // retry window
};

class Connection {
 public:
  // Creates the channel lazily: nothing is sent until the first call.
  explicit Connection(ConnectionOptions options);

  v1::JobService::Stub& jobs() { return *jobs_; }
  v1::ClusterService::Stub& cluster() { return *cluster_; }
  v1::AdminService::Stub& admin() { return *admin_; }
  const ConnectionOptions& options() const { return options_; }

  // A context with the token metadata and a deadline `timeout` from now
  // (InfiniteDuration: no deadline).
  std::unique_ptr<grpc::ClientContext> NewContext(absl::Duration timeout) const;

  // Runs `rpc` with a fresh context (deadline: call_timeout) until it
  // returns anything but UNAVAILABLE or DEADLINE_EXCEEDED, or until
  // `retry_for` has passed since the first attempt; backs off 100 ms
  // doubling to 2 s. `rpc` must be safe to repeat (reads, or a submit with
  // a fixed idempotency key). Returns the last status, converted, with the
  // target named when the scheduler could not be reached.
  absl::Status Call(
      const std::function<grpc::Status(grpc::ClientContext*)>& rpc);

  // True while the channel is connected to the scheduler: a call that ended
  // DEADLINE_EXCEEDED then ran out of its own time, it was not kept from
  // reaching the scheduler.
  bool Connected() const;

  // Converts a finished call's status, naming the target for transport
  // errors (UNAVAILABLE, DEADLINE_EXCEEDED).
  absl::Status Convert(const grpc::Status& status) const;

 private:
  ConnectionOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
  std::unique_ptr<v1::ClusterService::Stub> cluster_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
};

// The next retry delay after `current` (100 ms doubling to 2 s).
absl::Duration NextBackoff(absl::Duration current);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_CONNECTION_H_

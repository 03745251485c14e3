// SchedulerServer: wires PostgreSQL, the scheduling core and the gRPC
// services (plus the standard health service and server reflection)
// together. main.cc turns flags into SchedulerServerOptions and calls
// BuildAndStart().
#ifndef TUPA_SCHEDULER_SERVICE_SERVER_H_
#define TUPA_SCHEDULER_SERVICE_SERVER_H_

#include <grpcpp/grpcpp.h>
#include <prometheus/exposer.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "scheduler/service/scheduler_core.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {

// Who may call (auth.h). Config: `auth: {enabled, bootstrap_admin_token_file,
// join_token_file}`; flags --auth, --bootstrap-admin-token-file,
// --join-token-file.
struct AuthOptions {
  bool enabled = true;  // scripts/cluster's dev mode turns it off
  // Its (whitespace-trimmed) content is upserted, hashed, as user `admin`.
  std::string bootstrap_admin_token_file;
  // Workers must present this token in their Hello; empty file name: none.
  std::string join_token_file;
};

// TLS on the one gRPC port; all empty: plaintext. With client_ca_file every
// client (workers and the CLI) must present a certificate signed by it.
struct TlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
};

struct SchedulerServerOptions {
  std::string listen = "0.0.0.0:50051";
  std::string database_url;
  int database_pool = 8;
  std::string metrics_listen = ":9464";  // empty: no /metrics
  SchedulerOptions core;
  AuthOptions auth;
  TlsOptions tls;
};

// The placement policy named `value` (firstfit, bestfit, tupa), or
// InvalidArgument naming `field` (the flag or config key).
absl::StatusOr<PlacementOptions::Policy> ParseSchedulerPolicy(
    const std::string& value, const std::string& field);

// A positive duration ("15s", "2m"), or InvalidArgument naming `field`.
absl::StatusOr<absl::Duration> ParseWorkerTimeout(const std::string& value,
                                                  const std::string& field);

// The fleet's heartbeats per second: a number >= 0 (0: no limit), or
// InvalidArgument naming `field`.
absl::StatusOr<double> ParseMaxHeartbeatsPerSecond(const std::string& value,
                                                   const std::string& field);

// A port range "FIRST-LAST" (inclusive, 1024-65535, at least 3 ports) as
// (first, count), or InvalidArgument naming `field`. The `job_ports`
// setting: the ports the scheduler gives jobs' rendezvous, Horovod and
// TensorFlow processes on workers (port_blocks.h); default 29500-31499.
absl::StatusOr<std::pair<int, int>> ParsePortRange(const std::string& value,
                                                   const std::string& field);

// Reads a secret file, trimmed of surrounding whitespace; InvalidArgument
// naming `what` when it cannot be read or is empty.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path,
                                           const std::string& what);

// Reads a price catalog file (`--pricing FILE`) into `options`.
absl::Status LoadPricingFile(const std::string& path,
                             SchedulerServerOptions& options);

// Merges a scheduler config file (YAML: listen, database_url, data_dir,
// worker_timeout, policy, metrics_listen) over `options`. InvalidArgument names
// the key.
absl::Status MergeConfigFile(const std::string& path,
                             SchedulerServerOptions& options);

class SchedulerServer {
 public:
  // Connects to PostgreSQL (retrying for up to `connect_for`), migrates,
  // rebuilds state, and starts serving.
  static absl::StatusOr<std::unique_ptr<SchedulerServer>> BuildAndStart(
      const SchedulerServerOptions& options,
      absl::Duration connect_for = absl::Seconds(30));
  ~SchedulerServer();

  int port() const { return port_; }
  void Shutdown();
  void Wait();

 private:
  SchedulerServer() = default;
  std::unique_ptr<Stores> stores_;
  std::unique_ptr<SchedulerCore> core_;
  std::unique_ptr<JobServiceImpl> jobs_;
  std::unique_ptr<ClusterServiceImpl> cluster_;
  std::unique_ptr<WorkerServiceImpl> workers_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<AdminServiceImpl> admin_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_SERVER_H_

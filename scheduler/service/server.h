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

#include "absl/status/statusor.h"
#include "scheduler/service/scheduler_core.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {

struct SchedulerServerOptions {
  std::string listen = "0.0.0.0:50051";
  std::string database_url;
  int database_pool = 8;
  std::string metrics_listen = ":9464";  // empty: no /metrics
  SchedulerOptions core;
};

// Reads a price catalog file (`--pricing FILE`) into `options`.
absl::Status LoadPricingFile(const std::string& path,
                             SchedulerServerOptions& options);

// Merges a scheduler config file (YAML: listen, database_url, data_dir,
// worker_timeout, policy, metrics_listen) over `options`. InvalidArgument names the key.
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
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<SchedulerCore> core_;
  std::unique_ptr<JobServiceImpl> jobs_;
  std::unique_ptr<ClusterServiceImpl> cluster_;
  std::unique_ptr<WorkerServiceImpl> workers_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_SERVER_H_

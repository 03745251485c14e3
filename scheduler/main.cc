// tupa-scheduler: flags -> SchedulerServerOptions -> BuildAndStart() ->
// wait for SIGTERM/SIGINT.
#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "common/daemon.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "scheduler/service/server.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051", "gRPC listen address");
ABSL_FLAG(
    std::string, database_url, "",
    "PostgreSQL URL (prefer env TUPA_DATABASE_URL: it may hold a password)");
ABSL_FLAG(std::string, data_dir, ".tupa-scheduler", "directory for job logs");
ABSL_FLAG(std::string, worker_timeout, "15s",
          "a worker silent this long is lost and its jobs requeue");
ABSL_FLAG(std::string, max_heartbeats_per_s, "250",
          "the whole fleet's heartbeats per second: past it workers beat less "
          "often than every 1s, up to a third of --worker-timeout (0: no "
          "limit)");
ABSL_FLAG(std::string, metrics_listen, ":9464",
          "Prometheus /metrics address (empty: none)");
ABSL_FLAG(std::string, config, "", "scheduler config YAML merged over flags");
ABSL_FLAG(std::string, pricing, "",
          "price catalog YAML (or `pricing:` in --config); see "
          "deploy/pricing.example.yaml");
ABSL_FLAG(std::string, policy, "tupa",
          "placement policy: firstfit|bestfit|tupa");
ABSL_FLAG(bool, auth, true,
          "require bearer tokens (scripts/cluster's dev mode passes false)");
ABSL_FLAG(
    std::string, bootstrap_admin_token_file, "",
    "file holding the first admin token (upserted, hashed, as user admin)");
ABSL_FLAG(std::string, join_token_file, "",
          "file holding the token workers must present to register");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM server certificate (chain): enables TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA: require client certificates signed by it (mTLS)");

// The server options from the flags, then the pricing and config files;
// an InvalidArgument naming the flag or setting otherwise.
absl::Status OptionsFromFlags(
    tupa::scheduler::SchedulerServerOptions& options) {
  options.listen = absl::GetFlag(FLAGS_listen);
  options.database_url = absl::GetFlag(FLAGS_database_url);
  if (options.database_url.empty())
    if (const char* env = std::getenv("TUPA_DATABASE_URL"))
      options.database_url = env;
  options.core.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  ASSIGN_OR_RETURN(
      options.core.worker_timeout,
      tupa::scheduler::ParseWorkerTimeout(absl::GetFlag(FLAGS_worker_timeout),
                                          "--worker-timeout"));
  ASSIGN_OR_RETURN(
      options.core.max_heartbeats_per_second,
      tupa::scheduler::ParseMaxHeartbeatsPerSecond(
          absl::GetFlag(FLAGS_max_heartbeats_per_s), "--max-heartbeats-per-s"));
  ASSIGN_OR_RETURN(options.core.policy,
                   tupa::scheduler::ParseSchedulerPolicy(
                       absl::GetFlag(FLAGS_policy), "--policy"));
  options.auth.enabled = absl::GetFlag(FLAGS_auth);
  options.auth.bootstrap_admin_token_file =
      absl::GetFlag(FLAGS_bootstrap_admin_token_file);
  options.auth.join_token_file = absl::GetFlag(FLAGS_join_token_file);
  options.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  if (!absl::GetFlag(FLAGS_pricing).empty())
    RETURN_IF_ERROR(tupa::scheduler::LoadPricingFile(
        absl::GetFlag(FLAGS_pricing), options));
  if (!absl::GetFlag(FLAGS_config).empty())
    RETURN_IF_ERROR(
        tupa::scheduler::MergeConfigFile(absl::GetFlag(FLAGS_config), options));
  return absl::OkStatus();
}

int main(int argc, char** argv) {
  sigset_t signals =
      tupa::StartDaemon(argc, argv, "tupa-scheduler: accepts and places jobs");

  tupa::scheduler::SchedulerServerOptions options;
  if (absl::Status s = OptionsFromFlags(options); !s.ok()) {
    std::cerr << "tupa-scheduler: " << s.message() << "\n";
    return 2;
  }
  auto server = tupa::scheduler::SchedulerServer::BuildAndStart(options);
  if (!server.ok()) {
    std::cerr << "tupa-scheduler: " << server.status() << "\n";
    return 1;
  }
  int signal = 0;
  sigwait(&signals, &signal);
  (*server)->Shutdown();
  return 0;
}

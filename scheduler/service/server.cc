#include "scheduler/service/server.h"

#include <glog/logging.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/files.h"
#include "common/metrics.h"
#include "common/quantity.h"
#include "common/status_macros.h"
#include "common/yaml_fields.h"

namespace tupa::scheduler {

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     const std::string& what) {
  std::optional<std::string> text = ReadWholeFile(path);
  if (!text)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot read ", path));
  return *std::move(text);
}

absl::Status LoadPricingFile(const std::string& path,
                             SchedulerServerOptions& options) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path, "--pricing"));
  auto catalog = pricing::PriceCatalog::Parse(text, "pricing");
  if (!catalog.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", catalog.status().message()));
  options.core.pricing =
      std::make_shared<const pricing::PriceCatalog>(std::move(*catalog));
  return absl::OkStatus();
}

namespace {

// An error about a setting, prefixed with the config file it is in.
absl::Status InFile(const std::string& file, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::InvalidArgumentError(
      absl::StrCat("config ", file, ": ", s.message()));
}

// The `auth:` mapping of a config file.
absl::Status MergeAuthConfig(const YAML::Node& node,
                             SchedulerServerOptions& options) {
  RETURN_IF_ERROR(yaml::CheckKeys(
      node, "auth",
      {"enabled", "bootstrap_admin_token_file", "join_token_file"}));
  if (node["enabled"]) {
    ASSIGN_OR_RETURN(const std::string v,
                     yaml::Scalar(node["enabled"], "auth.enabled"));
    if (v != "true" && v != "false")
      return yaml::FieldError("auth.enabled", "must be true or false");
    options.auth.enabled = v == "true";
  }
  if (node["bootstrap_admin_token_file"]) {
    ASSIGN_OR_RETURN(options.auth.bootstrap_admin_token_file,
                     yaml::Scalar(node["bootstrap_admin_token_file"],
                                  "auth.bootstrap_admin_token_file"));
  }
  if (node["join_token_file"]) {
    ASSIGN_OR_RETURN(
        options.auth.join_token_file,
        yaml::Scalar(node["join_token_file"], "auth.join_token_file"));
  }
  return absl::OkStatus();
}

// The `tls:` mapping of a config file: cert, key, client_ca (file paths).
absl::Status MergeTlsConfig(const YAML::Node& node,
                            SchedulerServerOptions& options) {
  RETURN_IF_ERROR(yaml::CheckKeys(node, "tls", {"cert", "key", "client_ca"}));
  struct {
    const char* key;
    std::string* file;
  } files[] = {{"cert", &options.tls.cert_file},
               {"key", &options.tls.key_file},
               {"client_ca", &options.tls.client_ca_file}};
  for (const auto& f : files) {
    if (!node[f.key]) continue;
    ASSIGN_OR_RETURN(*f.file,
                     yaml::Scalar(node[f.key], yaml::Join("tls", f.key)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PlacementOptions::Policy> ParseSchedulerPolicy(
    const std::string& value, const std::string& field) {
  if (value == "firstfit") return PlacementOptions::Policy::kFirstFit;
  if (value == "bestfit") return PlacementOptions::Policy::kBestFit;
  if (value == "tupa") return PlacementOptions::Policy::kTupa;
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": must be firstfit, bestfit or tupa, not \"", value, "\""));
}

absl::StatusOr<absl::Duration> ParseWorkerTimeout(const std::string& value,
                                                  const std::string& field) {
  ASSIGN_OR_RETURN(absl::Duration timeout, ParseDuration(value, field));
  if (timeout <= absl::ZeroDuration())
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be positive, not ", value));
  return timeout;
}

absl::StatusOr<double> ParseMaxHeartbeatsPerSecond(const std::string& value,
                                                   const std::string& field) {
  double rate = 0;
  if (!absl::SimpleAtod(value, &rate) || !std::isfinite(rate) || rate < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": must be a number >= 0 (0: no limit), not \"", value, "\""));
  return rate;
}

absl::StatusOr<std::pair<int, int>> ParsePortRange(const std::string& value,
                                                   const std::string& field) {
  const std::vector<std::string> ends = absl::StrSplit(value, '-');
  int first = 0, last = 0;
  if (ends.size() != 2 || !absl::SimpleAtoi(ends[0], &first) ||
      !absl::SimpleAtoi(ends[1], &last))
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": must be a port range FIRST-LAST, not \"", value, "\""));
  if (first < 1024 || last > 65535 || last - first + 1 < 3)
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     ": must lie in 1024-65535 and hold at least 3 "
                     "ports, not ",
                     value));
  return std::make_pair(first, last - first + 1);
}

absl::StatusOr<std::string> ReadSecretFile(const std::string& path,
                                           const std::string& what) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path, what));
  std::string secret(absl::StripAsciiWhitespace(text));
  if (secret.empty())
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", path, " is empty"));
  return secret;
}

absl::Status MergeConfigFile(const std::string& path,
                             SchedulerServerOptions& options) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("config ", path, ": ", e.what()));
  }
  if (!root || root.IsNull()) return absl::OkStatus();
  if (!root.IsMap())
    return absl::InvalidArgumentError(
        absl::StrCat("config ", path, ": must be a mapping"));
  for (const auto& kv : root) {
    auto parsed_key = yaml::Key(kv.first, "", "settings");
    if (!parsed_key.ok()) return InFile(path, parsed_key.status());
    const std::string& key = *parsed_key;
    if (key == "idle_shutdown" || key == "scale_up" || key == "zombie_jobs") {
      if (!options.core.idle) {
        auto policy = idle::ParseIdlePolicy(root);  // reads all three sections
        if (!policy.ok())
          return absl::InvalidArgumentError(
              absl::StrCat("config ", path, ": ", policy.status().message()));
        options.core.idle = *policy;
      }
      continue;
    }
    if (key == "auth") {
      RETURN_IF_ERROR(InFile(path, MergeAuthConfig(kv.second, options)));
      continue;
    }
    if (key == "tls") {
      RETURN_IF_ERROR(InFile(path, MergeTlsConfig(kv.second, options)));
      continue;
    }
    if (key == "pricing") {
      auto catalog = pricing::PriceCatalog::FromNode(kv.second, "pricing");
      if (!catalog.ok())
        return absl::InvalidArgumentError(
            absl::StrCat("config ", path, ": ", catalog.status().message()));
      options.core.pricing =
          std::make_shared<const pricing::PriceCatalog>(std::move(*catalog));
      continue;
    }
    if (!kv.second.IsScalar())
      return absl::InvalidArgumentError(
          absl::StrCat("config ", path, ": ", key,
                       ": not supported by this scheduler "
                       "version (expected a scalar setting)"));
    const std::string value = kv.second.Scalar();
    if (key == "listen") {
      options.listen = value;
    } else if (key == "database_url") {
      options.database_url = value;
    } else if (key == "metrics_listen") {
      options.metrics_listen = value;
    } else if (key == "data_dir") {
      options.core.data_dir = value;
    } else if (key == "worker_timeout") {
      ASSIGN_OR_RETURN(options.core.worker_timeout,
                       ParseWorkerTimeout(value, "worker_timeout"));
    } else if (key == "max_heartbeats_per_s") {
      ASSIGN_OR_RETURN(options.core.max_heartbeats_per_second,
                       ParseMaxHeartbeatsPerSecond(value, key));
    } else if (key == "policy") {
      ASSIGN_OR_RETURN(options.core.policy,
                       ParseSchedulerPolicy(value, "policy"));
    } else if (key == "job_ports") {
      auto range = ParsePortRange(value, "job_ports");
      if (!range.ok()) return InFile(path, range.status());
      options.core.master_port_base = range->first;
      options.core.master_port_count = range->second;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("config ", path, ": ", key, ": unknown setting"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SchedulerServer>> SchedulerServer::BuildAndStart(
    const SchedulerServerOptions& options, absl::Duration connect_for) {
  if (options.database_url.empty())
    return absl::InvalidArgumentError(
        "database_url: required (--database-url or TUPA_DATABASE_URL)");
  // Without a join token any host that reaches the port could register as
  // a worker and be handed jobs (their specs, env and data) to run.
  if (options.auth.enabled && options.auth.join_token_file.empty())
    return absl::InvalidArgumentError(
        "join_token_file: required when auth is on (--join-token-file or "
        "auth.join_token_file in the config); --auth=false runs an open dev "
        "cluster");
  auto server = std::unique_ptr<SchedulerServer>(new SchedulerServer());
  const absl::Time deadline = absl::Now() + connect_for;
  absl::Duration backoff = absl::Milliseconds(200);
  while (true) {
    // Connects and applies the migrations.
    auto stores = Stores::Open(options.database_url, options.database_pool);
    if (stores.ok()) {
      server->stores_ = std::move(*stores);
      break;
    }
    if (stores.status().code() != absl::StatusCode::kUnavailable ||
        absl::Now() + backoff > deadline)
      return stores.status();
    LOG(WARNING) << stores.status() << "; retrying";
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
  std::error_code ec;
  std::filesystem::create_directories(options.core.data_dir, ec);
  server->core_ =
      std::make_unique<SchedulerCore>(server->stores_.get(), options.core);
  RETURN_IF_ERROR(server->core_->Start());
  ASSIGN_OR_RETURN(server->exposer_,
                   StartExposer(options.metrics_listen,
                                server->core_->metrics().collectables()));

  server->auth_ = std::make_unique<Authenticator>(&server->stores_->tokens(),
                                                  options.auth.enabled);
  if (!options.auth.enabled)
    LOG(WARNING) << "auth disabled: every caller acts as an admin (dev mode)";
  if (options.auth.enabled &&
      !options.auth.bootstrap_admin_token_file.empty()) {
    ASSIGN_OR_RETURN(std::string token,
                     ReadSecretFile(options.auth.bootstrap_admin_token_file,
                                    "bootstrap_admin_token_file"));
    RETURN_IF_ERROR(server->stores_->tokens()
                        .UpsertToken(HashToken(token), "admin", "", true)
                        .status());
    LOG(INFO) << "bootstrap admin token loaded (user admin)";
  }
  std::string join_token;
  if (!options.auth.join_token_file.empty()) {
    ASSIGN_OR_RETURN(join_token, ReadSecretFile(options.auth.join_token_file,
                                                "join_token_file"));
  }
  server->jobs_ = std::make_unique<JobServiceImpl>(server->core_.get(),
                                                   server->auth_.get());
  server->cluster_ = std::make_unique<ClusterServiceImpl>(server->core_.get(),
                                                          server->auth_.get());
  server->workers_ = std::make_unique<WorkerServiceImpl>(
      server->core_.get(), std::move(join_token),
      /*require_client_cert=*/!options.tls.client_ca_file.empty());
  server->admin_ = std::make_unique<AdminServiceImpl>(
      &server->stores_->tokens(), server->auth_.get());
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::InsecureServerCredentials();
  if (!options.tls.cert_file.empty() || !options.tls.key_file.empty()) {
    if (options.tls.cert_file.empty() || options.tls.key_file.empty())
      return absl::InvalidArgumentError(
          "--tls-cert and --tls-key: give both or neither");
    // With a client CA, a certificate is asked for and verified when
    // presented; WorkerService requires one (mTLS for workers), the CLI's
    // services authenticate people by token instead.
    grpc::SslServerCredentialsOptions ssl(
        options.tls.client_ca_file.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    ASSIGN_OR_RETURN(pair.cert_chain,
                     ReadFile(options.tls.cert_file, "--tls-cert"));
    ASSIGN_OR_RETURN(pair.private_key,
                     ReadFile(options.tls.key_file, "--tls-key"));
    ssl.pem_key_cert_pairs.push_back(std::move(pair));
    if (!options.tls.client_ca_file.empty()) {
      ASSIGN_OR_RETURN(ssl.pem_root_certs,
                       ReadFile(options.tls.client_ca_file, "--tls-client-ca"));
    }
    credentials = grpc::SslServerCredentials(ssl);
    LOG(INFO) << "TLS on"
              << (options.tls.client_ca_file.empty()
                      ? ""
                      : " (client certificates required of workers)");
  } else if (!options.tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-ca needs --tls-cert and --tls-key");
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // channelz is not served; its per-call counters cost every RPC.
  builder.AddChannelArgument(GRPC_ARG_ENABLE_CHANNELZ, 0);
  // Keepalive both ways on worker streams (DESIGN §5): the server pings an
  // idle connection every 10 s and drops it 5 s after an unanswered ping,
  // and permits the workers' pings (every 5 s, worker/agent/agent.cc)
  // instead of answering them with GOAWAY too_many_pings.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 4000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddListeningPort(options.listen, credentials, &server->port_);
  builder.RegisterService(server->jobs_.get());
  builder.RegisterService(server->cluster_.get());
  builder.RegisterService(server->workers_.get());
  builder.RegisterService(server->admin_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0)
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen));
  LOG(INFO) << "tupa-scheduler listening on " << options.listen << " (port "
            << server->port_ << ")";
  return server;
}

SchedulerServer::~SchedulerServer() { Shutdown(); }

void SchedulerServer::Shutdown() {
  if (core_) core_->Shutdown();  // closes worker streams first
  if (server_)
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
}

void SchedulerServer::Wait() {
  if (server_) server_->Wait();
}

}  // namespace tupa::scheduler

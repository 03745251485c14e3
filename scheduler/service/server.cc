#include "scheduler/service/server.h"

#include <glog/logging.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/quantity.h"
#include "common/status_macros.h"

namespace tupa::scheduler {

absl::Status LoadPricingFile(const std::string& path,
                             SchedulerServerOptions& options) {
  std::ifstream in(path);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("--pricing: cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  auto catalog = pricing::PriceCatalog::Parse(text.str(), "pricing");
  if (!catalog.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", catalog.status().message()));
  options.core.pricing =
      std::make_shared<const pricing::PriceCatalog>(std::move(*catalog));
  return absl::OkStatus();
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
    const std::string key = kv.first.as<std::string>();
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
      return absl::InvalidArgumentError(absl::StrCat(
          "config ", path, ": ", key, ": not supported by this scheduler "
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
                       ParseDuration(value, "worker_timeout"));
    } else if (key == "policy") {
      if (value == "firstfit") {
        options.core.policy = PlacementOptions::Policy::kFirstFit;
      } else if (value == "bestfit") {
        options.core.policy = PlacementOptions::Policy::kBestFit;
      } else if (value == "tupa") {
        options.core.policy = PlacementOptions::Policy::kTupa;
      } else {
        return absl::InvalidArgumentError(
            "policy: must be firstfit, bestfit or tupa");
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "config ", path, ": ", key, ": unknown setting"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SchedulerServer>> SchedulerServer::BuildAndStart(
    const SchedulerServerOptions& options, absl::Duration connect_for) {
  if (options.database_url.empty())
    return absl::InvalidArgumentError(
        "database_url: required (--database-url or TUPA_DATABASE_URL)");
  auto server = std::unique_ptr<SchedulerServer>(new SchedulerServer());
  const absl::Time deadline = absl::Now() + connect_for;
  absl::Duration backoff = absl::Milliseconds(200);
  while (true) {
    auto store = JobStore::Connect(options.database_url, options.database_pool);
    if (store.ok()) {
      server->store_ = std::move(*store);
      break;
    }
    if (store.status().code() != absl::StatusCode::kUnavailable ||
        absl::Now() + backoff > deadline)
      return store.status();
    LOG(WARNING) << store.status() << "; retrying";
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
  RETURN_IF_ERROR(server->store_->Migrate());
  std::error_code ec;
  std::filesystem::create_directories(options.core.data_dir, ec);
  server->core_ =
      std::make_unique<SchedulerCore>(server->store_.get(), options.core);
  RETURN_IF_ERROR(server->core_->Start());
  ASSIGN_OR_RETURN(server->exposer_,
                   StartExposer(options.metrics_listen,
                                server->core_->metrics().collectables()));

  server->jobs_ = std::make_unique<JobServiceImpl>(server->core_.get());
  server->cluster_ = std::make_unique<ClusterServiceImpl>(server->core_.get());
  server->workers_ = std::make_unique<WorkerServiceImpl>(server->core_.get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(),
                           &server->port_);
  builder.RegisterService(server->jobs_.get());
  builder.RegisterService(server->cluster_.get());
  builder.RegisterService(server->workers_.get());
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
  if (server_) server_->Shutdown(std::chrono::system_clock::now() +
                                 std::chrono::seconds(2));
}

void SchedulerServer::Wait() {
  if (server_) server_->Wait();
}

}  // namespace tupa::scheduler

#include "worker/agent/worker_daemon.h"

#include <utility>

#include "common/metrics.h"
#include "common/status_macros.h"

namespace tupa::worker {

WorkerDaemon::WorkerDaemon(AgentOptions options)
    : agent_(std::make_unique<Agent>(std::move(options))) {}

absl::StatusOr<std::unique_ptr<WorkerDaemon>> WorkerDaemon::BuildAndStart(
    WorkerOptions options) {
  ASSIGN_OR_RETURN(options.agent.devices, DiscoverDevices(options.devices));
  std::unique_ptr<WorkerDaemon> daemon(
      new WorkerDaemon(std::move(options.agent)));
  ASSIGN_OR_RETURN(daemon->exposer_,
                   StartExposer(options.metrics_listen,
                                daemon->agent_->metrics().collectables()));
  daemon->runner_ =
      std::thread([agent = daemon->agent_.get()] { agent->Run(); });
  return daemon;
}

WorkerDaemon::~WorkerDaemon() {
  Stop();
  Wait();
}

void WorkerDaemon::Stop() { agent_->Stop(); }

void WorkerDaemon::Wait() {
  if (runner_.joinable()) runner_.join();
}

}  // namespace tupa::worker

// WorkerDaemon: tupa-worker's parts wired together: device discovery, the
// Agent (its session with the scheduler) on a thread of its own, and the
// Prometheus /metrics endpoint. main.cc turns flags into WorkerOptions and
// calls BuildAndStart(), then waits. Stop() may be called from any
// thread; Wait() from one at a time.
#ifndef TUPA_WORKER_AGENT_WORKER_DAEMON_H_
#define TUPA_WORKER_AGENT_WORKER_DAEMON_H_

#include <prometheus/exposer.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "worker/agent/agent.h"
#include "worker/devices/devices.h"

namespace tupa::worker {

struct WorkerOptions {
  DeviceOptions devices;  // what to advertise: found at BuildAndStart()
  AgentOptions agent;     // agent.devices is set from the devices found
  std::string metrics_listen = ":9465";  // empty: no /metrics endpoint
};

class WorkerDaemon {
 public:
  // Discovers the devices, then starts /metrics and the Agent. Errors:
  // device discovery's, or Unavailable when /metrics cannot listen.
  static absl::StatusOr<std::unique_ptr<WorkerDaemon>> BuildAndStart(
      WorkerOptions options);
  // Stops the Agent and waits for it.
  ~WorkerDaemon();

  // Asks the Agent to stop (e.g. on SIGTERM); Wait() then returns.
  void Stop();
  // Returns once the Agent has stopped: after Stop(), or after the
  // scheduler ordered a shutdown (see shutdown_reason()).
  void Wait();
  // Why the scheduler shut this worker down; empty when it did not.
  std::string shutdown_reason() { return agent_->shutdown_reason(); }

 private:
  explicit WorkerDaemon(AgentOptions options);

  const std::unique_ptr<Agent> agent_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::thread runner_;
};

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_WORKER_DAEMON_H_

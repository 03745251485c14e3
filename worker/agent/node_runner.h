// NodeRunner: runs the rank processes of one node of one job attempt and
// reports what they do.
//
// Each rank runs in its own process group with PR_SET_PDEATHSIG, so no rank
// outlives a killed worker; stdout+stderr go through a pipe to a per-rank
// log file and to the `on_output` callback. When a rank fails the others are
// killed; Cancel() and max_runtime kill every group (SIGTERM, then SIGKILL
// after the grace period). `on_exit` is called once, after every rank is
// gone, from the runner's own thread. Thread-safe.
#ifndef TUPA_WORKER_AGENT_NODE_RUNNER_H_
#define TUPA_WORKER_AGENT_NODE_RUNNER_H_

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "worker/agent/rank_plan.h"

namespace tupa::worker {

struct NodeRunnerOptions {
  std::vector<RankProcess> ranks;
  std::string log_dir;   // rank-<global>.log files
  std::string work_dir;  // the ranks' working directory
  // The tupa-rank-shim program each rank starts through (posix_spawn);
  // empty: a fork of this process runs the shim (rank_shim.h), slower.
  std::string rank_shim;
  absl::Duration max_runtime = absl::ZeroDuration();  // zero: unlimited
  absl::Duration kill_grace = absl::Seconds(5);
  std::function<void(int rank, const std::string& data)> on_output;
  std::function<void()> on_started;
  std::function<void(int exit_code, const std::string& message)> on_exit;
};

// tupa-rank-shim in the folder of this process's executable; empty, with
// a warning logged, when it is not there.
std::string RankShimBesideThisProgram();

class NodeRunner {
 public:
  explicit NodeRunner(NodeRunnerOptions options);
  ~NodeRunner();  // kills what still runs and waits for it

  void Start();
  void Cancel(const std::string& reason);
  std::vector<int> pids();

 private:
  void Supervise();
  void KillAll(int signal);

  NodeRunnerOptions options_;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<int> pids_ ABSL_GUARDED_BY(mu_);
  std::string cancel_reason_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_NODE_RUNNER_H_

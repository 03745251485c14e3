// Agent: tupa-worker's session with the scheduler.
//
// Keeps one Connect stream open (reconnecting with backoff), says hello
// with its devices and the node attempts it still runs, sends heartbeats,
// node status, progress and logs, and runs what it is assigned through
// NodeRunner. Fencing: it refuses an Assign older than an attempt it has
// already seen for that job, and a Cancel names the attempt it cancels.
// A node is forgotten only once its EXITED status was written to a stream,
// so a reconnecting worker still reports a node that ended while it was
// disconnected. Thread-safe; Run() blocks until Stop().
#ifndef TUPA_WORKER_AGENT_AGENT_H_
#define TUPA_WORKER_AGENT_AGENT_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tupa/v1/worker_protocol.pb.h"
#include "worker/agent/node_runner.h"
#include "worker/agent/worker_metrics.h"

namespace tupa::worker {

struct AgentOptions {
  std::string scheduler = "localhost:50051";
  std::string worker_id;
  std::string join_token;
  // TLS to the scheduler, as PEM text; all empty: plaintext. cert+key are
  // the worker's client certificate (mTLS).
  std::string tls_ca_pem;
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::string region;
  std::string instance_id;
  std::string offering;  // price catalog offering: on-demand, spot, ...
  std::map<std::string, std::string> labels;
  std::string advertise_addr = "127.0.0.1";
  std::string work_dir = ".tupa-worker";
  std::string checkpoint_root;  // shared by workers so attempts can resume
  std::string trainer_path;     // tupa-train
  std::vector<v1::Device> devices;
  std::vector<std::string>
      visible_devices;  // the worker's CUDA_VISIBLE_DEVICES
  double cpu = 0;
  int64_t memory_bytes = 0;
  absl::Duration kill_grace = absl::Seconds(5);
  // Run (via /bin/sh -c) when the scheduler orders a shutdown, before the
  // worker exits 0; e.g. a cloud CLI call that stops this instance.
  std::string on_shutdown;
};

class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();

  // Serves until Stop(); reconnects whenever the stream breaks.
  void Run();
  void Stop();
  // Why the scheduler shut this worker down; empty when it did not.
  std::string shutdown_reason();
  WorkerMetrics& metrics() { return *metrics_; }

 private:
  using NodeKey = std::tuple<int64_t, int32_t, int32_t>;  // job, attempt, node

  struct Node {
    std::unique_ptr<NodeRunner> runner;
    bool train = false;
    std::string line_buffer;  // rank 0 output, for progress lines
    bool exited = false;
    std::vector<int32_t> devices;  // assigned device indexes
    // Its EXITED status, once written to a stream: kept (and resent on the
    // next stream) until the scheduler acks it (NodeExitAck).
    std::optional<v1::WorkerMessage> exit_unacked;
    bool exit_acked = false;  // the ack overtook the bookkeeping of the write
    // Per rank: bytes of output so far, and the last kResendBytes of it
    // written to a stream (ending at byte `sent`), resent on every new
    // stream ahead of the chunks still queued (LogData.offset): the last
    // writes to a stream that broke may never have arrived.
    struct OutputTail {
      int64_t produced = 0;
      int64_t sent = 0;
      std::string tail;
    };
    std::map<int, OutputTail> output;
  };

  // One stream's life; returns when it breaks or on Stop().
  void Session();
  void OnMessage(const v1::SchedulerMessage& message);
  void OnAssign(const v1::Assign& assign);
  void OnCancel(const v1::Cancel& cancel);
  // Stops taking work, runs the --on-shutdown hook, reports, then Stop().
  void OnShutdown(const std::string& reason);
  void OnRankOutput(const NodeKey& key, int rank, const std::string& data);
  // A LogData message was written to the stream: it joins its rank's tail.
  void NoteLogSent(const v1::LogData& log) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Enqueue(v1::WorkerMessage message);
  v1::WorkerMessage MakeHello();
  // agent_metrics.cc: which rank process groups hold which device.
  std::vector<DeviceUse> DeviceUses();
  std::unique_ptr<WorkerMetrics> MakeMetrics();

  const AgentOptions options_;
  absl::Mutex mu_;
  std::map<NodeKey, Node> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, int32_t> newest_attempt_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::WorkerMessage> outbox_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_ ABSL_GUARDED_BY(mu_) = absl::Seconds(1);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string shutdown_reason_ ABSL_GUARDED_BY(mu_);
  std::thread shutdown_thread_;
  const std::unique_ptr<WorkerMetrics> metrics_ = MakeMetrics();  // last
};

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_AGENT_H_

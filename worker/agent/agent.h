// Agent: tupa-worker's session with the scheduler.
//
// Keeps one Connect stream open (reconnecting with backoff), says hello
// with its devices and the node attempts it still runs, sends heartbeats,
// node status, progress and logs, and runs what it is assigned through
// NodeRunner. Fencing: it refuses an Assign older than an attempt it has
// already seen for that job (checked again, atomically, with the node's
// start; the node is prepared outside the lock), and a Cancel names the
// attempt it cancels. What it owes the scheduler across streams (log tails
// to resend, EXITED statuses until acked, fenced nodes' EXITED held for a
// hello that reports them) is kept by a ReliableOutbox it drives; a node
// is forgotten once its EXITED was written to a stream and acked, so a
// reconnecting worker still reports a node that ended while it was
// disconnected.
//
// Lease and self-fencing (DESIGN §5 "Fencing across a partition"): the
// scheduler's Welcome acks the hello and gives the lease; each heartbeat
// is acked (HeartbeatAck) once the scheduler's lease covers it. The
// worker's lease runs from the send time of the newest acked message, so
// it always ends no later than the scheduler's view of it. When it runs
// out, every node is fenced: its ranks are stopped (SIGTERM, kill grace,
// SIGKILL). A fenced node's EXITED goes only to a stream whose hello
// reported it fenced (after its ranks are gone), so the scheduler requeues
// it rather than failing the job. Thread-safe; Run() blocks until Stop().
#ifndef TUPA_WORKER_AGENT_AGENT_H_
#define TUPA_WORKER_AGENT_AGENT_H_

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tupa/v1/worker_protocol.pb.h"
#include "worker/agent/node_runner.h"
#include "worker/agent/reliable_outbox.h"
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
  // The IP other nodes reach this one at (MASTER_ADDR); empty: the local
  // address of each connection to the scheduler (advertise_addr.h).
  std::string advertise_addr;
  std::string work_dir = ".tupa-worker";
  std::string checkpoint_root;  // shared by workers so attempts can resume
  std::string trainer_path;     // tupa-train
  std::string rank_shim_path;   // tupa-rank-shim; empty: fork (node_runner.h)
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
  using NodeKey = ReliableOutbox::NodeKey;  // job, attempt, node

  // What runs a node; its delivery bookkeeping is in outbox_.
  struct Node {
    std::unique_ptr<NodeRunner> runner;
    bool train = false;
    std::string line_buffer;       // rank 0 output, for progress lines
    std::vector<int32_t> devices;  // assigned device indexes
  };

  // One stream's life; returns when it breaks or on Stop().
  void Session();
  void OnMessage(const v1::SchedulerMessage& message);
  void OnAssign(const v1::Assign& assign);
  // Whether `assign` may start now: FailedPrecondition while shutting
  // down or for an attempt older than one seen for the job, AlreadyExists
  // for a node already here (a repeated delivery).
  absl::Status CheckAssign(const v1::Assign& assign)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The node's work directory, checkpoint directory (claimed and fenced),
  // spec file and rank plan; file system work, done without mu_. The
  // callbacks are left to the caller.
  NodeRunnerOptions PrepareNode(const v1::Assign& assign);
  void OnCancel(const v1::Cancel& cancel);
  // Stops taking work, runs the --on-shutdown hook, reports, then Stop().
  void OnShutdown(const std::string& reason);
  void OnRankOutput(const NodeKey& key, int rank, const std::string& data);
  void Enqueue(v1::WorkerMessage message);
  // The hello for a new stream, advertising `address`; records what it
  // reports fenced and when it was made (the lease's start if acked).
  v1::WorkerMessage MakeHello(const std::string& address);
  // Fences every running node once the lease has run out; until Stop().
  void FenceWatch();
  void FenceIfLeaseExpired(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Renews the lease from the acked heartbeat and adopts the interval the
  // scheduler asks for.
  void OnHeartbeatAck(const v1::HeartbeatAck& ack);
  // agent_metrics.cc: which rank process groups hold which device.
  std::vector<DeviceUse> DeviceUses();
  std::unique_ptr<WorkerMetrics> MakeMetrics();

  const AgentOptions options_;
  absl::Mutex mu_;
  std::map<NodeKey, Node> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, int32_t> newest_attempt_ ABSL_GUARDED_BY(mu_);
  ReliableOutbox outbox_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_ ABSL_GUARDED_BY(mu_) = absl::Seconds(1);
  // The lease from the Welcome (zero: none yet, no fencing) and when it
  // started: the send time of the newest message the scheduler acked.
  absl::Duration lease_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Time lease_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time hello_made_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t next_heartbeat_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<std::pair<uint64_t, absl::Time>> unacked_heartbeats_
      ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string shutdown_reason_ ABSL_GUARDED_BY(mu_);
  std::thread shutdown_thread_;
  const std::unique_ptr<WorkerMetrics> metrics_ = MakeMetrics();  // last
};

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_AGENT_H_

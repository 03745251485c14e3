// SimWorker: one simulated tupa worker speaking the real worker protocol
// (proto/tupa/v1/worker_protocol.proto) as worker/agent/agent.cc does, on
// its own channel (its own TCP connection) and Connect stream:
//  - Hello with devices, cpu, memory, join token, and every node it still
//    holds (running, or exited and not yet acked); then the EXITED status
//    of every unacked node again.
//  - Heartbeats at Welcome's interval.
//  - Assign: refuses stale attempts and duplicates, fences older attempts
//    of the job, sends RUNNING at once; the node "runs" for the job's env
//    TUPA_SIM_RUNTIME_MS (default 1000), sending progress and log lines at
//    the configured rates, then EXITED with TUPA_SIM_EXIT_CODE (default 0),
//    kept and resent on every new stream until NodeExitAck.
//  - Cancel: EXITED 143 at once.
//  - A broken stream reconnects with backoff (100 ms doubling to 2 s, reset
//    after a stream that lived 10 s), like the real worker.
// Timed work runs on a shared TimerQueue; reactions on gRPC threads; no
// thread per worker. Thread-safe. Must outlive its timers and streams: the
// owner calls Stop() and keeps it alive until the process exits.
#ifndef TUPA_BENCH_FLEET_SIM_SIM_WORKER_H_
#define TUPA_BENCH_FLEET_SIM_SIM_WORKER_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/fleet_sim/job_tracker.h"
#include "bench/fleet_sim/latency.h"
#include "bench/fleet_sim/run_record.h"
#include "bench/fleet_sim/timer_queue.h"
#include "bench/fleet_sim/worker_stream.h"
#include "tupa/v1/worker_protocol.grpc.pb.h"

namespace tupa::fleet_sim {

struct SimWorkerConfig {
  std::string scheduler;
  std::string join_token;
  std::string id;
  std::string region;
  std::string gpu_type;
  int gpus = 8;
  double cpu = 64;
  int64_t memory_bytes = 0;
  double progress_hz = 0;
  double log_hz = 0;
};

// What all simulated workers share: the clock-driven pool, the job tracker
// and record, and fleet-wide counters.
struct FleetContext {
  TimerQueue* timers = nullptr;
  JobTracker* tracker = nullptr;
  RunRecord* record = nullptr;
  ErrorCounts stream_ends;                // by status code, after a Welcome
  std::atomic<long> reconnects{0};        // streams lost after a Welcome
  std::atomic<long> welcomed{0};          // workers with a live session
  std::atomic<long> connect_failures{0};  // streams that ended unwelcomed
  std::atomic<long> assigns{0};
  std::atomic<long> heartbeats{0};            // sent, by every worker
  std::atomic<int> heartbeat_interval_ms{0};  // the last one the scheduler set
  std::atomic<int> max_running_nodes{0};      // on any one worker, at once
};

class SimWorker {
 public:
  SimWorker(SimWorkerConfig config, FleetContext* fleet);
  SimWorker(const SimWorker&) = delete;
  SimWorker& operator=(const SimWorker&) = delete;

  // Opens the first stream; heartbeats start with the Welcome.
  void Start();
  // Ends the stream; nothing is sent or reconnected afterwards.
  void Stop();
  // Writes every node still held to the record (end_ms -1 if running).
  void RecordUnfinished();

 private:
  using NodeKey = std::tuple<int64_t, int32_t, int32_t>;
  struct Node {
    int nnodes = 1;
    int first_rank = 0;
    int gpus = 0;
    absl::Time started;
    absl::Duration runtime;
    int exit_code = 0;
    bool exited = false;
    v1::WorkerMessage exit_status;  // valid once exited
    int64_t step = 0;
    int64_t log_offset = 0;
  };

  void Connect();
  void OnMessage(uint64_t session, WorkerStream& from,
                 const v1::SchedulerMessage& m);
  void OnStreamDone(uint64_t session, const grpc::Status& status);
  void OnAssign(WorkerStream& from, const v1::Assign& a);
  // Ends a node: EXITED with `code`, recorded; false if already ended.
  bool EndNode(const NodeKey& key, Node& node, int code,
               const std::string& message, std::vector<v1::WorkerMessage>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NodeTimerFired(NodeKey key);
  void Tick(NodeKey key, bool progress);
  void Heartbeat(uint64_t session);
  // Sends on the current stream, if any (never under mu_).
  void SendCurrent(std::vector<v1::WorkerMessage> messages);
  v1::WorkerMessage MakeHello() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SimWorkerConfig config_;
  FleetContext* const fleet_;
  std::vector<v1::Device> devices_;

  absl::Mutex mu_;
  // A new channel per stream, as the real worker makes: a reconnect never
  // waits out the old channel's reconnect backoff.
  std::unique_ptr<v1::WorkerService::Stub> stub_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t session_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<WorkerStream> stream_ ABSL_GUARDED_BY(mu_);
  bool welcomed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time session_began_ ABSL_GUARDED_BY(mu_);
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_) = absl::Milliseconds(100);
  absl::Duration heartbeat_ ABSL_GUARDED_BY(mu_) = absl::Seconds(1);
  std::map<NodeKey, Node> nodes_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<int64_t, int32_t> newest_attempt_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;  // nodes not yet exited
};

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_SIM_WORKER_H_

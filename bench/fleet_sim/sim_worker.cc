#include "bench/fleet_sim/sim_worker.h"

#include <algorithm>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tupa::fleet_sim {
namespace {

constexpr int kCancelledExitCode = 143;  // 128 + SIGTERM, as a killed rank

int EnvInt(const v1::JobSpec& spec, const std::string& key, int fallback) {
  auto it = spec.env().find(key);
  int v = 0;
  if (it == spec.env().end() || !absl::SimpleAtoi(it->second, &v))
    return fallback;
  return v;
}

v1::WorkerMessage Status(int64_t job, int32_t attempt, int32_t node,
                         v1::NodeState state, int code,
                         const std::string& message) {
  v1::WorkerMessage m;
  v1::NodeStatus* s = m.mutable_node_status();
  s->set_job_id(job);
  s->set_attempt(attempt);
  s->set_node_rank(node);
  s->set_state(state);
  s->set_exit_code(code);
  s->set_message(message);
  return m;
}

void NoteMax(std::atomic<int>& max, int value) {
  int seen = max.load();
  while (value > seen && !max.compare_exchange_weak(seen, value)) {
  }
}

}  // namespace

SimWorker::SimWorker(SimWorkerConfig config, FleetContext* fleet)
    : config_(std::move(config)), fleet_(fleet) {
  for (int i = 0; i < config_.gpus; ++i) {
    v1::Device d;
    d.set_index(i);
    d.set_name("Simulated GPU");
    d.set_gpu_type(config_.gpu_type);
    d.set_memory_bytes(int64_t{80} << 30);
    d.set_compute_capability("9.0");
    d.set_emulated(true);
    devices_.push_back(std::move(d));
  }
}

void SimWorker::Start() { Connect(); }

void SimWorker::Stop() {
  std::shared_ptr<WorkerStream> s;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    s = stream_;
  }
  if (s) s->Cancel();
}

void SimWorker::RecordUnfinished() {
  absl::MutexLock lock(&mu_);
  for (const auto& [key, node] : nodes_) {
    if (node.exited) continue;
    fleet_->record->Write(NodeRun{std::get<0>(key), std::get<1>(key),
                                  std::get<2>(key), config_.id,
                                  absl::ToUnixMillis(node.started), -1, 0});
  }
}

v1::WorkerMessage SimWorker::MakeHello() {
  v1::WorkerMessage m;
  v1::Hello* h = m.mutable_hello();
  h->set_worker_id(config_.id);
  h->set_join_token(config_.join_token);
  h->set_region(config_.region);
  h->set_instance_id(config_.id);
  for (const v1::Device& d : devices_) *h->add_devices() = d;
  h->set_cpu(config_.cpu);
  h->set_memory_bytes(config_.memory_bytes);
  h->set_address("127.0.0.1");
  h->set_version("0.1.0-sim");
  h->set_offering("on-demand");
  for (const auto& [key, node] : nodes_) {
    v1::RunningAttempt* r = h->add_running();
    r->set_job_id(std::get<0>(key));
    r->set_attempt(std::get<1>(key));
    r->set_node_rank(std::get<2>(key));
  }
  return m;
}

void SimWorker::Connect() {
  v1::WorkerMessage hello;
  std::vector<v1::WorkerMessage> resend;
  std::shared_ptr<WorkerStream> s;
  v1::WorkerService::Stub* stub;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    const uint64_t session = ++session_;
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // own TCP connection
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    stub_ = v1::WorkerService::NewStub(grpc::CreateCustomChannel(
        config_.scheduler, grpc::InsecureChannelCredentials(), args));
    stub = stub_.get();
    hello = MakeHello();
    // EXITED statuses sent to an earlier stream and never acked: that
    // scheduler may have died before reading them.
    for (const auto& [key, node] : nodes_)
      if (node.exited) resend.push_back(node.exit_status);
    s = WorkerStream::Create(
        [this, session](WorkerStream& from, const v1::SchedulerMessage& m) {
          OnMessage(session, from, m);
        },
        [this, session](const grpc::Status& st) { OnStreamDone(session, st); });
    stream_ = s;
    welcomed_ = false;
    session_began_ = absl::Now();
  }
  s->Start(stub, std::move(hello), std::move(resend));
}

void SimWorker::OnStreamDone(uint64_t session, const grpc::Status& status) {
  absl::Duration delay;
  {
    absl::MutexLock lock(&mu_);
    if (session != session_) return;
    stream_.reset();
    if (welcomed_) {
      fleet_->welcomed.fetch_sub(1);
      if (!stopping_) {
        fleet_->reconnects.fetch_add(1);
        fleet_->stream_ends.Add(status.error_code());
      }
    } else {
      fleet_->connect_failures.fetch_add(1);
    }
    welcomed_ = false;
    if (stopping_) return;
    if (absl::Now() - session_began_ > absl::Seconds(10))
      backoff_ = absl::Milliseconds(100);
    delay = backoff_;
    backoff_ = std::min(backoff_ * 2, absl::Seconds(2));
  }
  fleet_->timers->After(delay, [this] { Connect(); });
}

void SimWorker::OnMessage(uint64_t session, WorkerStream& from,
                          const v1::SchedulerMessage& m) {
  switch (m.msg_case()) {
    case v1::SchedulerMessage::kWelcome: {
      absl::Duration first;
      {
        absl::MutexLock lock(&mu_);
        if (session != session_ || welcomed_) return;
        welcomed_ = true;
        if (m.welcome().heartbeat_interval_ms() > 0)
          heartbeat_ = absl::Milliseconds(m.welcome().heartbeat_interval_ms());
        // Spread the fleet's heartbeats over the interval.
        std::mt19937_64 rng(std::hash<std::string>()(config_.id) + session);
        first = heartbeat_ * std::uniform_real_distribution<double>(0, 1)(rng);
      }
      fleet_->welcomed.fetch_add(1);
      fleet_->timers->After(first, [this, session] { Heartbeat(session); });
      return;
    }
    case v1::SchedulerMessage::kAssign:
      OnAssign(from, m.assign());
      return;
    case v1::SchedulerMessage::kHeartbeatAck:
      // The scheduler slows a large fleet's heartbeats (heartbeat_rate.h).
      if (m.heartbeat_ack().heartbeat_interval_ms() > 0) {
        absl::MutexLock lock(&mu_);
        heartbeat_ =
            absl::Milliseconds(m.heartbeat_ack().heartbeat_interval_ms());
        fleet_->heartbeat_interval_ms.store(
            m.heartbeat_ack().heartbeat_interval_ms());
      }
      return;
    case v1::SchedulerMessage::kCancel: {
      std::vector<v1::WorkerMessage> out;
      {
        absl::MutexLock lock(&mu_);
        for (auto& [key, node] : nodes_)
          if (std::get<0>(key) == m.cancel().job_id() &&
              std::get<1>(key) == m.cancel().attempt())
            EndNode(key, node, kCancelledExitCode,
                    absl::StrCat("cancelled: ", m.cancel().reason()), &out);
      }
      for (auto& msg : out) from.Send(std::move(msg));
      return;
    }
    case v1::SchedulerMessage::kExitAck: {
      const v1::NodeExitAck& ack = m.exit_ack();
      int nnodes = 0;
      {
        absl::MutexLock lock(&mu_);
        auto it =
            nodes_.find(NodeKey{ack.job_id(), ack.attempt(), ack.node_rank()});
        if (it == nodes_.end() || !it->second.exited) return;
        nnodes = it->second.nnodes;
        nodes_.erase(it);
      }
      fleet_->tracker->NodeAcked(ack.job_id(), ack.attempt(), nnodes,
                                 absl::Now());
      return;
    }
    case v1::SchedulerMessage::kShutdown: {
      // Simulated workers never stop: the hook "ran", nothing else.
      v1::WorkerMessage done;
      done.mutable_shutdown_ack()->set_hook_ok(true);
      from.Send(std::move(done));
      return;
    }
    default:
      return;
  }
}

void SimWorker::OnAssign(WorkerStream& from, const v1::Assign& a) {
  const NodeKey key{a.job_id(), a.attempt(), a.node_rank()};
  const absl::Time now = absl::Now();
  std::vector<v1::WorkerMessage> out;
  absl::Duration runtime;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || nodes_.count(key)) return;  // duplicate delivery
    int32_t& newest = newest_attempt_[a.job_id()];
    if (a.attempt() < newest) return;  // stale attempt
    newest = a.attempt();
    // Older attempts of this job still running here are fenced off.
    for (auto& [k, node] : nodes_)
      if (std::get<0>(k) == a.job_id() && std::get<1>(k) < a.attempt())
        EndNode(k, node, kCancelledExitCode, "superseded by a newer attempt",
                &out);
    Node node;
    node.nnodes = std::max(1, a.nnodes());
    node.first_rank = a.first_rank();
    node.gpus = a.device_indexes_size();
    node.started = now;
    node.runtime =
        absl::Milliseconds(EnvInt(a.spec(), "TUPA_SIM_RUNTIME_MS", 1000));
    node.exit_code = EnvInt(a.spec(), "TUPA_SIM_EXIT_CODE", 0);
    runtime = node.runtime;
    nodes_.emplace(key, std::move(node));
    NoteMax(fleet_->max_running_nodes, ++running_);
    out.push_back(Status(a.job_id(), a.attempt(), a.node_rank(),
                         v1::NODE_STATE_RUNNING, 0, ""));
  }
  fleet_->tracker->Assigned(a.job_id(), now);
  fleet_->assigns.fetch_add(1);
  for (auto& msg : out) from.Send(std::move(msg));
  fleet_->timers->After(runtime, [this, key] { NodeTimerFired(key); });
  if (config_.progress_hz > 0)
    fleet_->timers->After(absl::Seconds(1 / config_.progress_hz),
                          [this, key] { Tick(key, true); });
  if (config_.log_hz > 0)
    fleet_->timers->After(absl::Seconds(1 / config_.log_hz),
                          [this, key] { Tick(key, false); });
}

bool SimWorker::EndNode(const NodeKey& key, Node& node, int code,
                        const std::string& message,
                        std::vector<v1::WorkerMessage>* out) {
  if (node.exited) return false;
  node.exited = true;
  --running_;
  node.exit_status =
      Status(std::get<0>(key), std::get<1>(key), std::get<2>(key),
             v1::NODE_STATE_EXITED, code, message);
  fleet_->record->Write(NodeRun{
      std::get<0>(key), std::get<1>(key), std::get<2>(key), config_.id,
      absl::ToUnixMillis(node.started), absl::ToUnixMillis(absl::Now()), code});
  out->push_back(node.exit_status);
  return true;
}

void SimWorker::NodeTimerFired(NodeKey key) {
  std::vector<v1::WorkerMessage> out;
  {
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(key);
    if (it == nodes_.end()) return;
    EndNode(key, it->second, it->second.exit_code, "", &out);
  }
  SendCurrent(std::move(out));
}

void SimWorker::Tick(NodeKey key, bool progress) {
  std::vector<v1::WorkerMessage> out;
  {
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(key);
    if (stopping_ || it == nodes_.end() || it->second.exited) return;
    Node& node = it->second;
    v1::WorkerMessage m;
    if (progress) {
      v1::ProgressReport* p = m.mutable_progress();
      p->set_job_id(std::get<0>(key));
      p->set_attempt(std::get<1>(key));
      p->mutable_progress()->set_step(++node.step);
      p->mutable_progress()->set_loss(1.0 / static_cast<double>(node.step));
    } else {
      v1::LogData* log = m.mutable_log();
      log->set_job_id(std::get<0>(key));
      log->set_attempt(std::get<1>(key));
      log->set_rank(node.first_rank);
      const std::string line =
          absl::StrCat("sim ", config_.id, " job ", std::get<0>(key), " line ",
                       node.log_offset, "\n");
      log->set_data(line);
      log->set_offset(node.log_offset);
      node.log_offset += static_cast<int64_t>(line.size());
    }
    out.push_back(std::move(m));
  }
  SendCurrent(std::move(out));
  const double hz = progress ? config_.progress_hz : config_.log_hz;
  fleet_->timers->After(absl::Seconds(1 / hz),
                        [this, key, progress] { Tick(key, progress); });
}

void SimWorker::Heartbeat(uint64_t session) {
  v1::WorkerMessage beat;
  std::shared_ptr<WorkerStream> s;
  absl::Duration next;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || session != session_ || !welcomed_) return;
    for (const v1::Device& d : devices_) {
      v1::Device* sample = beat.mutable_heartbeat()->add_devices();
      sample->set_index(d.index());
      sample->set_utilization(running_ > 0 ? 0.9 : 0.0);
    }
    s = stream_;
    next = heartbeat_;
  }
  if (s) {
    s->Send(std::move(beat));
    fleet_->heartbeats.fetch_add(1);
  }
  fleet_->timers->After(next, [this, session] { Heartbeat(session); });
}

void SimWorker::SendCurrent(std::vector<v1::WorkerMessage> messages) {
  std::shared_ptr<WorkerStream> s;
  {
    absl::MutexLock lock(&mu_);
    s = stream_;  // none: the next hello lists the node (and resends)
  }
  if (!s) return;
  for (auto& m : messages) s->Send(std::move(m));
}

}  // namespace tupa::fleet_sim

#include "worker/agent/agent.h"

#include <glog/logging.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/checkpoint_fence.h"
#include "common/client_credentials.h"
#include "common/hook_runner.h"
#include "tupa/v1/worker_protocol.grpc.pb.h"
#include "worker/agent/advertise_addr.h"
#include "worker/agent/checkpoint_dir.h"
#include "worker/agent/progress_parser.h"

namespace tupa::worker {
namespace {

// The pipe directory of a running CUDA MPS control daemon, or "" when none
// runs: the daemon's control FIFO exists only while it is up. The worker's
// own CUDA_MPS_PIPE_DIRECTORY wins over the default. Never starts one.
std::string RunningMpsPipeDirectory() {
  const char* env = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string dir = env != nullptr && *env ? env : "/tmp/nvidia-mps";
  std::error_code ec;
  return std::filesystem::is_fifo(dir + "/control", ec) ? dir : "";
}

// Heartbeats sent and not yet acked that are remembered; older ones can no
// longer extend the lease anyway.
constexpr size_t kMaxUnackedHeartbeats = 4096;
// gRPC keepalive on the stream: a dead peer (a partition, a host that is
// gone) breaks the stream within kKeepaliveTime + kKeepaliveTimeout even
// while nothing is written; the scheduler permits pings this often.
constexpr int kKeepaliveTimeMs = 5000;
constexpr int kKeepaliveTimeoutMs = 5000;
// How long a stream waits to connect before the session gives up and
// retries with a fresh hello (so a hello is never stale by much).
constexpr absl::Duration kConnectTimeout = absl::Seconds(5);
}  // namespace

Agent::Agent(AgentOptions options) : options_(std::move(options)) {}

Agent::~Agent() {
  Stop();
  if (shutdown_thread_.joinable()) shutdown_thread_.join();
  std::map<NodeKey, Node> nodes;
  {
    absl::MutexLock lock(&mu_);
    nodes.swap(nodes_);
  }
  // Every node gets SIGTERM at once, so shutting down takes one kill grace
  // period, not one per node; the destructors then reap the ranks.
  for (auto& [key, node] : nodes)
    if (node.runner) node.runner->Cancel("worker shutting down");
  nodes.clear();
}

void Agent::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

void Agent::Enqueue(v1::WorkerMessage message) {
  absl::MutexLock lock(&mu_);
  outbox_.Push(std::move(message));
}

v1::WorkerMessage Agent::MakeHello(const std::string& address) {
  v1::WorkerMessage m;
  v1::Hello* h = m.mutable_hello();
  h->set_worker_id(options_.worker_id);
  h->set_join_token(options_.join_token);
  h->set_region(options_.region);
  h->set_instance_id(options_.instance_id);
  h->mutable_labels()->insert(options_.labels.begin(), options_.labels.end());
  for (const auto& d : options_.devices) *h->add_devices() = d;
  h->set_cpu(options_.cpu);
  h->set_memory_bytes(options_.memory_bytes);
  h->set_address(address);
  h->set_kill_grace_ms(absl::ToInt64Milliseconds(options_.kill_grace));
  h->set_version("0.1.0");
  h->set_offering(options_.offering);
  absl::MutexLock lock(&mu_);
  h->set_shutting_down(shutdown_reason_);
  hello_made_at_ = absl::Now();
  for (v1::RunningAttempt& r : outbox_.HelloRunning())
    *h->add_running() = std::move(r);
  return m;
}

void Agent::Run() {
  std::thread fence_watch([this] { FenceWatch(); });
  absl::Duration backoff = absl::Milliseconds(100);
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      // Fenced nodes whose ranks are still stopping are reported once they
      // are gone (at most one kill grace), so their hello can say so.
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !outbox_.FencedNodesStopping();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) break;
    }
    const absl::Time began = absl::Now();
    Session();
    if (absl::Now() - began > absl::Seconds(10))
      backoff = absl::Milliseconds(100);
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
  fence_watch.join();
}

void Agent::FenceWatch() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::Milliseconds(100));
    if (!stopping_) FenceIfLeaseExpired(absl::Now());
  }
}

void Agent::FenceIfLeaseExpired(absl::Time now) {
  if (lease_ <= absl::ZeroDuration() || now - lease_start_ <= lease_) return;
  for (auto& [key, node] : nodes_) {
    if (!node.runner || !outbox_.OnFenced(key, now)) continue;
    const std::string reason = absl::StrCat(
        "fenced at ",
        absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", now, absl::UTCTimeZone()),
        ": no word from the scheduler for ",
        absl::FormatDuration(now - lease_start_), " (lease ",
        absl::FormatDuration(lease_),
        "); stopped so that no other attempt overlaps it");
    LOG(WARNING) << "job " << std::get<0>(key) << " attempt "
                 << std::get<1>(key) << " node " << std::get<2>(key) << " "
                 << reason;
    node.runner->Cancel(reason);
  }
}

void Agent::OnHeartbeatAck(const v1::HeartbeatAck& ack) {
  const uint64_t seq = ack.seq();
  absl::MutexLock lock(&mu_);
  // A large fleet beats less often (the scheduler's --max-heartbeats-per-s).
  if (ack.heartbeat_interval_ms() > 0)
    heartbeat_ = absl::Milliseconds(ack.heartbeat_interval_ms());
  while (!unacked_heartbeats_.empty() &&
         unacked_heartbeats_.front().first <= seq) {
    if (unacked_heartbeats_.front().first == seq)
      lease_start_ = std::max(lease_start_, unacked_heartbeats_.front().second);
    unacked_heartbeats_.pop_front();
  }
}

void Agent::Session() {
  std::string address = options_.advertise_addr;
  if (address.empty()) {
    absl::StatusOr<std::string> local = LocalAddressTowards(options_.scheduler);
    if (!local.ok()) {
      LOG_EVERY_N(WARNING, 20) << "scheduler " << options_.scheduler
                               << " unreachable: " << local.status().message();
      return;
    }
    address = *local;
  }
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  auto channel = grpc::CreateCustomChannel(
      options_.scheduler,
      ClientCredentials(options_.tls_ca_pem, options_.tls_cert_pem,
                        options_.tls_key_pem),
      args);
  // Connected first, so that the hello is made just before it is sent.
  if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                 absl::ToChronoSeconds(kConnectTimeout))) {
    LOG_EVERY_N(WARNING, 20) << "scheduler " << options_.scheduler
                             << " unreachable (no connection within "
                             << absl::FormatDuration(kConnectTimeout) << ")";
    return;
  }
  auto stub = v1::WorkerService::NewStub(channel);
  grpc::ClientContext ctx;
  auto stream = stub->Connect(&ctx);
  if (!stream->Write(MakeHello(address))) {
    stream->WritesDone();
    grpc::Status s = stream->Finish();
    LOG_EVERY_N(WARNING, 20) << "scheduler " << options_.scheduler
                             << " unreachable: " << s.error_message();
    return;
  }
  {
    // EXITED statuses written to an earlier stream but never acked: that
    // scheduler may have died before reading them. The hello listed their
    // nodes; send them again, after the output the old stream may have
    // lost (reliable_outbox.h).
    absl::MutexLock lock(&mu_);
    outbox_.OnHelloWritten();
  }
  std::atomic<bool> broken{false};
  std::thread reader([&] {
    v1::SchedulerMessage m;
    while (stream->Read(&m)) OnMessage(m);
    broken = true;
  });
  absl::Time next_heartbeat = absl::Now();
  while (!broken) {
    v1::WorkerMessage out;
    bool have = false;
    absl::Duration heartbeat;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
      if (outbox_.FencedSinceHello()) {
        LOG(WARNING) << "nodes were fenced since this stream's hello; "
                        "reconnecting to report them";
        break;
      }
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !outbox_.empty() || stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(200));
      if (!outbox_.empty()) {
        out = outbox_.front();
        have = true;
      }
      heartbeat = heartbeat_;
    }
    // Heartbeats carry device samples: due ones go even while a chatty job
    // keeps the outbox full (the queued message is sent next).
    if (absl::Now() >= next_heartbeat) {
      v1::WorkerMessage beat;
      metrics_->FillHeartbeat(beat.mutable_heartbeat());
      {
        absl::MutexLock lock(&mu_);
        beat.mutable_heartbeat()->set_seq(next_heartbeat_seq_++);
        unacked_heartbeats_.emplace_back(beat.heartbeat().seq(), absl::Now());
        if (unacked_heartbeats_.size() > kMaxUnackedHeartbeats)
          unacked_heartbeats_.pop_front();
      }
      next_heartbeat = absl::Now() + heartbeat;
      if (!stream->Write(beat)) break;
      continue;
    }
    if (!have) continue;
    if (out.has_node_status() &&
        out.node_status().state() == v1::NODE_STATE_EXITED) {
      // The EXITED of a node fenced after the hello waits for the next
      // stream (checked here too: the outbox was read before the fence).
      absl::MutexLock lock(&mu_);
      if (outbox_.FencedSinceHello()) break;
    }
    if (!stream->Write(out)) break;  // kept in the outbox for the next stream
    absl::MutexLock lock(&mu_);
    // Only this thread takes from the front: `out` is still there.
    if (std::optional<NodeKey> done = outbox_.OnFrontWritten())
      nodes_.erase(*done);
  }
  // A stream the scheduler ended carries its reason (e.g. a refused
  // registration); one we end ourselves is cancelled first.
  if (!broken) ctx.TryCancel();
  reader.join();
  const grpc::Status status = stream->Finish();
  if (status.ok() || status.error_code() == grpc::StatusCode::CANCELLED) {
    LOG(WARNING) << "stream to scheduler " << options_.scheduler
                 << " ended; reconnecting";
  } else {
    LOG(ERROR) << "scheduler " << options_.scheduler
               << " ended the stream: " << status.error_message()
               << "; retrying";
  }
}

void Agent::OnMessage(const v1::SchedulerMessage& message) {
  switch (message.msg_case()) {
    case v1::SchedulerMessage::kWelcome: {
      absl::MutexLock lock(&mu_);
      if (message.welcome().heartbeat_interval_ms() > 0)
        heartbeat_ =
            absl::Milliseconds(message.welcome().heartbeat_interval_ms());
      // The scheduler counts this worker alive from when the hello arrived;
      // the hello was made earlier, so this lease ends no later than its.
      lease_ = absl::Milliseconds(message.welcome().lease_ms());
      lease_start_ = std::max(lease_start_, hello_made_at_);
      LOG(INFO) << "connected to scheduler " << options_.scheduler << " as "
                << options_.worker_id;
      break;
    }
    case v1::SchedulerMessage::kAssign:
      OnAssign(message.assign());
      break;
    case v1::SchedulerMessage::kCancel:
      OnCancel(message.cancel());
      break;
    case v1::SchedulerMessage::kShutdown:
      OnShutdown(message.shutdown().reason());
      break;
    case v1::SchedulerMessage::kHeartbeatAck:
      OnHeartbeatAck(message.heartbeat_ack());
      break;
    case v1::SchedulerMessage::kExitAck: {
      const v1::NodeExitAck& ack = message.exit_ack();
      absl::MutexLock lock(&mu_);
      if (std::optional<NodeKey> done = outbox_.OnExitAck(
              NodeKey{ack.job_id(), ack.attempt(), ack.node_rank()}))
        nodes_.erase(*done);
      break;
    }
    default:
      break;
  }
}

std::string Agent::shutdown_reason() {
  absl::MutexLock lock(&mu_);
  return shutdown_reason_;
}

void Agent::OnShutdown(const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!shutdown_reason_.empty()) return;
    shutdown_reason_ = reason.empty() ? "shutdown" : reason;
  }
  LOG(INFO) << "scheduler ordered a shutdown: " << reason;
  shutdown_thread_ = std::thread([this, reason] {
    v1::WorkerMessage ack;
    ack.mutable_shutdown_ack()->set_hook_ok(true);
    if (!options_.on_shutdown.empty()) {
      const std::string code = reason.substr(0, reason.find(':'));
      absl::Status s = RunHook(
          options_.on_shutdown,
          {{"TUPA_WORKER_ID", options_.worker_id},
           {"TUPA_INSTANCE_ID", options_.instance_id},
           {"TUPA_REGION", options_.region},
           {"TUPA_GPU_TYPE",
            options_.devices.empty() ? "" : options_.devices[0].gpu_type()},
           {"TUPA_REASON", code},
           {"TUPA_REASON_TEXT", reason}});
      if (s.ok()) {
        LOG(INFO) << "--on-shutdown hook ran";
      } else {
        LOG(ERROR) << s.message();
        ack.mutable_shutdown_ack()->set_hook_ok(false);
        ack.mutable_shutdown_ack()->set_message(std::string(s.message()));
      }
    }
    Enqueue(std::move(ack));
    // Let the ack (and any last status) reach the scheduler, then stop.
    absl::MutexLock lock(&mu_);
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return outbox_.empty();
    };
    mu_.AwaitWithTimeout(absl::Condition(&drained), absl::Seconds(10));
    stopping_ = true;
  });
}

absl::Status Agent::CheckAssign(const v1::Assign& assign) {
  if (!shutdown_reason_.empty())
    return absl::FailedPreconditionError(
        absl::StrCat("shutting down: refusing job ", assign.job_id()));
  if (nodes_.count({assign.job_id(), assign.attempt(), assign.node_rank()}))
    return absl::AlreadyExistsError("duplicate delivery");
  auto newest = newest_attempt_.find(assign.job_id());
  if (newest != newest_attempt_.end() && assign.attempt() < newest->second)
    return absl::FailedPreconditionError(
        absl::StrCat("refusing stale attempt ", assign.attempt(), " of job ",
                     assign.job_id(), " (seen ", newest->second, ")"));
  return absl::OkStatus();
}

void Agent::OnAssign(const v1::Assign& assign) {
  const NodeKey key{assign.job_id(), assign.attempt(), assign.node_rank()};
  const absl::Status devices = CheckAssignedDevices(assign, options_.devices);
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = CheckAssign(assign); !s.ok()) {
      if (!absl::IsAlreadyExists(s)) LOG(WARNING) << s.message();
      return;
    }
    newest_attempt_[assign.job_id()] = assign.attempt();
    // Older attempts of this job that still run here are fenced off.
    for (auto& [k, node] : nodes_)
      if (std::get<0>(k) == assign.job_id() &&
          std::get<1>(k) < assign.attempt())
        node.runner->Cancel("superseded by a newer attempt");
    if (!devices.ok()) {
      LOG(ERROR) << "job " << assign.job_id() << " attempt " << assign.attempt()
                 << " node " << assign.node_rank()
                 << " not started: " << devices.message();
      v1::WorkerMessage m;
      v1::NodeStatus* s = m.mutable_node_status();
      s->set_job_id(assign.job_id());
      s->set_attempt(assign.attempt());
      s->set_node_rank(assign.node_rank());
      s->set_state(v1::NODE_STATE_EXITED);
      s->set_exit_code(127);  // as for a rank that could not start
      s->set_message(absl::StrCat("not started: ", devices.message()));
      outbox_.Push(std::move(m));
      return;
    }
  }
  // Directories, checkpoint claim and fence, spec file: file system work
  // (a shared checkpoint root may be NFS) that must not stall the session.
  NodeRunnerOptions run = PrepareNode(assign);
  run.on_output = [this, key](int rank, const std::string& data) {
    OnRankOutput(key, rank, data);
  };
  run.on_started = [this, key] {
    v1::WorkerMessage m;
    v1::NodeStatus* s = m.mutable_node_status();
    s->set_job_id(std::get<0>(key));
    s->set_attempt(std::get<1>(key));
    s->set_node_rank(std::get<2>(key));
    s->set_state(v1::NODE_STATE_RUNNING);
    Enqueue(std::move(m));
  };
  run.on_exit = [this, key](int code, const std::string& message) {
    LOG(INFO) << "job " << std::get<0>(key) << " attempt " << std::get<1>(key)
              << " node " << std::get<2>(key) << " exited " << code
              << (message.empty() ? "" : ": ") << message;
    v1::WorkerMessage m;
    v1::NodeStatus* s = m.mutable_node_status();
    s->set_job_id(std::get<0>(key));
    s->set_attempt(std::get<1>(key));
    s->set_node_rank(std::get<2>(key));
    s->set_state(v1::NODE_STATE_EXITED);
    s->set_exit_code(code);
    s->set_message(message);
    absl::MutexLock lock(&mu_);
    outbox_.OnExited(key, std::move(m));
  };
  absl::MutexLock lock(&mu_);
  // Checked again with the start, as one step: a shutdown or a newer
  // attempt may have come while the node was prepared.
  if (absl::Status s = CheckAssign(assign); !s.ok()) {
    if (!absl::IsAlreadyExists(s)) LOG(WARNING) << s.message();
    return;
  }
  LOG(INFO) << "starting job " << assign.job_id() << " attempt "
            << assign.attempt() << " node " << assign.node_rank() << " ("
            << run.ranks.size() << " rank(s))";
  Node& node = nodes_[key];
  outbox_.AddNode(key);
  node.train = assign.spec().has_train();
  node.devices.assign(assign.device_indexes().begin(),
                      assign.device_indexes().end());
  node.runner = std::make_unique<NodeRunner>(std::move(run));
  node.runner->Start();
}

NodeRunnerOptions Agent::PrepareNode(const v1::Assign& assign) {
  const std::string dir = absl::StrCat(options_.work_dir, "/jobs/",
                                       assign.job_id(), "-", assign.attempt());
  const std::string checkpoint_root =
      options_.checkpoint_root.empty()
          ? absl::StrCat(options_.work_dir, "/checkpoints")
          : options_.checkpoint_root;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // Claimed once per node: the ranks of this node share it.
  absl::StatusOr<std::string> claimed = ClaimCheckpointDir(
      checkpoint_root, assign.job_id(), assign.job_created_at_ms());
  // Without a claimed directory the job runs without checkpoints rather
  // than risk resuming another job's.
  if (!claimed.ok())
    LOG(WARNING) << "job " << assign.job_id()
                 << " runs without checkpoints: " << claimed.status();
  // The fence goes up before any rank of this attempt starts: from now on
  // no older attempt (say, one still running behind a partition) can
  // publish a checkpoint there (common/checkpoint_fence.h).
  if (claimed.ok()) {
    if (absl::Status fenced = RaiseCheckpointFence(*claimed, assign.attempt());
        !fenced.ok())
      LOG(WARNING) << "job " << assign.job_id() << ": " << fenced;
  }
  const std::string checkpoint_dir = claimed.ok() ? *claimed : "";
  RankPlanOptions plan;
  plan.trainer_path = options_.trainer_path;
  plan.spec_file = absl::StrCat(dir, "/job.json");
  plan.checkpoint_dir = checkpoint_dir;
  plan.emulated_devices =
      !options_.devices.empty() && options_.devices[0].emulated();
  plan.host_cpus = std::max(1u, std::thread::hardware_concurrency());
  plan.visible_devices = options_.visible_devices;
  for (const v1::Device& d : options_.devices)
    plan.device_memory_bytes[d.index()] = d.memory_bytes();
  if (!plan.emulated_devices)
    plan.mps_pipe_directory = RunningMpsPipeDirectory();
  if (assign.spec().has_train()) {
    google::protobuf::util::JsonPrintOptions json;
    json.preserve_proto_field_names = true;
    std::string text;
    const auto converted =
        google::protobuf::util::MessageToJsonString(assign.spec(), &text, json);
    std::ofstream out(plan.spec_file);
    out << text << "\n";
    out.close();
    if (!converted.ok() || !out) {
      // tupa-train then fails on the file, with the job's log saying so.
      LOG(ERROR) << "job " << assign.job_id() << ": cannot write "
                 << plan.spec_file << " for tupa-train"
                 << (converted.ok() ? "" : ": ") << converted.message();
    }
  }
  NodeRunnerOptions run;
  run.ranks = PlanRanks(assign, plan);
  run.log_dir = dir;
  run.work_dir = dir;
  run.rank_shim = options_.rank_shim_path;
  run.kill_grace = options_.kill_grace;
  if (assign.spec().max_runtime().seconds() > 0)
    run.max_runtime = absl::Seconds(assign.spec().max_runtime().seconds());
  return run;
}

void Agent::OnCancel(const v1::Cancel& cancel) {
  absl::MutexLock lock(&mu_);
  for (auto& [key, node] : nodes_)
    if (std::get<0>(key) == cancel.job_id() &&
        std::get<1>(key) == cancel.attempt())
      node.runner->Cancel(cancel.reason());
}

void Agent::OnRankOutput(const NodeKey& key, int rank,
                         const std::string& data) {
  std::vector<v1::Progress> updates;
  {
    absl::MutexLock lock(&mu_);
    outbox_.OnOutput(key, rank, data);
    if (rank != 0) return;
    auto it = nodes_.find(key);
    if (it == nodes_.end() || !it->second.train) return;
    updates = ExtractProgress(it->second.line_buffer, data);
  }
  for (const v1::Progress& p : updates) {
    v1::WorkerMessage m;
    m.mutable_progress()->set_job_id(std::get<0>(key));
    m.mutable_progress()->set_attempt(std::get<1>(key));
    *m.mutable_progress()->mutable_progress() = p;
    Enqueue(std::move(m));
  }
}

}  // namespace tupa::worker

// SchedulerCore: worker sessions, leases, node status and fencing.
#include <glog/logging.h>
#include <google/protobuf/util/time_util.h>

#include <climits>
#include <set>

#include "absl/strings/str_cat.h"
#include "scheduler/service/scheduler_core.h"

namespace tupa::scheduler {

using google::protobuf::util::TimeUtil;

namespace {

// A worker's kill grace, from its hello; workers that do not send it (or
// a view rebuilt after a restart) get tupa-worker's default.
constexpr absl::Duration kDefaultKillGrace = absl::Seconds(5);
absl::Duration KillGraceOf(const v1::Worker& info) {
  return info.kill_grace_ms() > 0 ? absl::Milliseconds(info.kill_grace_ms())
                                  : kDefaultKillGrace;
}

}  // namespace

absl::StatusOr<std::shared_ptr<WorkerSession>> SchedulerCore::ConnectWorker(
    const v1::Hello& hello) {
  if (hello.worker_id().empty())
    return absl::InvalidArgumentError("hello.worker_id: must not be empty");
  for (const v1::Device& d : hello.devices())
    if (d.gpu_type().empty())
      return absl::InvalidArgumentError(
          absl::StrCat("hello.devices[", d.index(), "].gpu_type: empty"));
  const std::string gpu_type =
      hello.devices_size() > 0 ? hello.devices(0).gpu_type() : "";
  absl::MutexLock lock(&mu_);
  AwaitNoCommit();
  if (stopping_) return absl::UnavailableError("scheduler is shutting down");
  std::optional<pricing::PriceEntry> price;
  if (options_.pricing) {
    auto entry =
        options_.pricing->Lookup(hello.region(), gpu_type, hello.offering());
    if (!entry.ok())
      return absl::FailedPreconditionError(absl::StrCat(
          "worker ", hello.worker_id(), ": no price for region \"",
          hello.region(), "\", GPU type \"", gpu_type, "\", offering \"",
          hello.offering(),
          "\" in the price catalog; add an entry or a \"*\" wildcard"));
    price = *entry;
  }
  WorkerEntry& entry = workers_[hello.worker_id()];
  if (entry.session) entry.session->Close();  // a newer stream replaces it
  v1::Worker info;
  info.set_id(hello.worker_id());
  info.set_region(hello.region());
  info.set_instance_id(hello.instance_id());
  *info.mutable_labels() = hello.labels();
  *info.mutable_devices() = hello.devices();
  info.set_cpu(hello.cpu());
  info.set_memory_bytes(hello.memory_bytes());
  info.set_address(hello.address());
  info.set_offering(hello.offering());
  info.set_kill_grace_ms(hello.kill_grace_ms());
  // A drain is stored with the worker (drain_requested), whatever state a
  // loss or a stop left it in.
  info.set_state(entry.drain_requested ? v1::WORKER_STATE_DRAINING
                                       : v1::WORKER_STATE_UP);
  *info.mutable_connected_at() = TimeUtil::GetCurrentTime();
  absl::Status stored = worker_store_->UpsertWorker(info);
  if (!stored.ok()) return stored;
  SetWorkerInfo(entry, std::move(info));
  entry.last_seen = absl::Now();
  entry.gpu_type = gpu_type;
  entry.price = price;
  metrics_->KnownPool(hello.region(), gpu_type,
                      options_.pricing ? options_.pricing->currency() : "");
  // A worker that is still stopping stays unschedulable across the new
  // stream; any other hello is a worker ready for work.
  entry.stop_reason = hello.shutting_down();
  stopped_reasons_.erase(hello.worker_id());
  OpenUptime(entry, entry.last_seen);
  entry.session =
      std::make_shared<WorkerSession>(hello.worker_id(), next_session_++);

  v1::SchedulerMessage welcome;
  welcome.mutable_welcome()->set_heartbeat_interval_ms(HeartbeatIntervalMs());
  // The worker fences itself when it has no ack for this long (DESIGN §5).
  welcome.mutable_welcome()->set_lease_ms(
      absl::ToInt64Milliseconds(options_.worker_timeout));
  entry.session->Push(std::move(welcome));

  // Reconcile: the worker keeps only nodes of current attempts placed on
  // it; nodes we placed there that it does not run are gone.
  std::set<AllocKey> reported;
  for (const v1::RunningAttempt& r : hello.running()) {
    AllocKey key{r.job_id(), r.attempt(), r.node_rank()};
    auto a = allocs_.find(key);
    auto j = jobs_.find(r.job_id());
    const bool current = a != allocs_.end() &&
                         a->second.worker_id == hello.worker_id() &&
                         j != jobs_.end() && !j->second.terminal &&
                         j->second.job.attempt() == r.attempt();
    if (current && r.fenced_at_ms() > 0) {
      // The worker stopped this node when its lease ran out (a partition),
      // and its ranks are gone: the attempt ends at its fence, not now,
      // and the job goes back to the queue. Its EXITED follows and finds
      // no allocation (acked as a resend).
      const absl::Time fenced_at =
          std::min(absl::FromUnixMillis(r.fenced_at_ms()), absl::Now());
      CloseAlloc(key, a->second, fenced_at);
      EraseAlloc(key);
      RequeueOrFail(
          j->second,
          absl::StrCat("worker ", hello.worker_id(), " fenced node ",
                       r.node_rank(), " at ",
                       absl::FormatTime(absl::RFC3339_sec, fenced_at,
                                        absl::UTCTimeZone()),
                       " (no word from the scheduler for the lease, ",
                       absl::FormatDuration(options_.worker_timeout), ")"));
      ForgetIfDone(r.job_id());
      continue;
    }
    if (current) {
      reported.insert(key);
      a->second.running = true;
      MaybeMarkRunning(j->second);
      continue;
    }
    v1::SchedulerMessage cancel;
    cancel.mutable_cancel()->set_job_id(r.job_id());
    cancel.mutable_cancel()->set_attempt(r.attempt());
    cancel.mutable_cancel()->set_reason("stale attempt");
    entry.session->Push(std::move(cancel));
    if (a != allocs_.end() && a->second.worker_id == hello.worker_id())
      reported.insert(key);  // keep holding its devices until it exits
  }
  std::vector<AllocKey> gone;
  if (auto placed = worker_allocs_.find(hello.worker_id());
      placed != worker_allocs_.end())
    for (const AllocKey& key : placed->second)
      if (!reported.count(key)) gone.push_back(key);
  for (const AllocKey& key : gone) {
    CloseAlloc(key, allocs_[key], absl::Now());
    EraseAlloc(key);
    const auto [job_id, attempt, node] = key;
    auto j = jobs_.find(job_id);
    if (j != jobs_.end() && !j->second.terminal &&
        j->second.job.attempt() == attempt)
      RequeueOrFail(j->second, absl::StrCat("worker ", hello.worker_id(),
                                            " restarted without node ", node));
    ForgetIfDone(job_id);
  }
  LOG(INFO) << "worker " << hello.worker_id() << " connected ("
            << hello.devices_size() << " devices, " << hello.running_size()
            << " running)";
  WakePlacement();
  Changed();
  return entry.session;
}

void SchedulerCore::DisconnectWorker(
    const std::shared_ptr<WorkerSession>& session) {
  absl::MutexLock lock(&mu_);
  AwaitNoCommit();
  auto it = workers_.find(session->worker_id());
  if (it == workers_.end() || it->second.session != session) return;
  // The lease (last_seen) keeps running: a worker that reconnects in time
  // keeps its jobs.
  it->second.session = nullptr;
  // Told to shut down, and did: stopped, not lost.
  if (!it->second.stop_reason.empty()) MarkStopped(it->second, absl::Now());
  LOG(INFO) << "worker " << session->worker_id() << " disconnected";
  placement_dirty_ = true;  // no longer schedulable
  Changed();
}

void SchedulerCore::MarkStopped(WorkerEntry& w, absl::Time at) {
  if (w.session) {
    w.session->Close();
    w.session = nullptr;
  }
  w.info.set_state(v1::WORKER_STATE_OFFLINE);
  worker_store_->SetWorkerState(w.info.id(), v1::WORKER_STATE_OFFLINE)
      .IgnoreError();
  CloseUptime(w, at);
  stopped_reasons_[w.info.id()] = w.stop_reason;
  w.stop_reason.clear();
  LOG(INFO) << "worker " << w.info.id() << " stopped ("
            << stopped_reasons_[w.info.id()] << ")";
}

void SchedulerCore::WorkerLost(const std::string& id,
                               const std::string& reason) {
  WorkerEntry& w = workers_[id];
  // Already LOST: a restart found its allocations still open (the requeue
  // never reached PostgreSQL); counted when it was first lost.
  const bool first = w.info.state() != v1::WORKER_STATE_LOST;
  if (first) {
    metrics_->WorkerLost();
    w.info.set_state(v1::WORKER_STATE_LOST);
    worker_store_->SetWorkerState(id, v1::WORKER_STATE_LOST).IgnoreError();
  }
  if (w.session) {
    w.session->Close();
    w.session = nullptr;
  }
  // Billing of the worker stops when it was last heard from.
  CloseUptime(w, w.last_seen);
  // Its jobs are re-placed only once it has surely fenced them: it stops
  // its ranks when its lease (which never ends after ours) runs out, and
  // they are gone one kill grace later (DESIGN §5). Until then its
  // allocations stay, the job stays where it is, and CheckLeases calls
  // this again each cycle (a LOST worker holding allocations).
  const absl::Time fence = w.last_seen + options_.worker_timeout;
  const absl::Time now = absl::Now();
  if (now < fence + KillGraceOf(w.info)) {
    if (first)
      LOG(WARNING) << reason << "; its jobs are re-placed after its kill "
                   << "grace (" << absl::FormatDuration(KillGraceOf(w.info))
                   << "), once it has fenced them";
    if (first) Changed();
    return;
  }
  LOG(WARNING) << reason;
  std::vector<AllocKey> lost;
  if (auto placed = worker_allocs_.find(id); placed != worker_allocs_.end())
    lost.assign(placed->second.begin(), placed->second.end());
  for (const AllocKey& key : lost) {
    // Its attempts ran until the fence at the latest: billed to there.
    CloseAlloc(key, allocs_[key], std::min(fence, now));
    EraseAlloc(key);
    const auto [job_id, attempt, node] = key;
    auto j = jobs_.find(job_id);
    if (j != jobs_.end() && !j->second.terminal &&
        j->second.job.attempt() == attempt)
      RequeueOrFail(j->second, reason);
    ForgetIfDone(job_id);
  }
  Changed();
}

void SchedulerCore::HandleWorkerMessages(
    const std::vector<WorkerInput>& inputs) {
  if (inputs.empty()) return;
  absl::MutexLock lock(&mu_);
  for (const WorkerInput& input : inputs)
    HandleWorkerMessageLocked(input.session, *input.message);
}

void SchedulerCore::HandleWorkerMessageLocked(
    const std::shared_ptr<WorkerSession>& session,
    const v1::WorkerMessage& message) {
  auto it = workers_.find(session->worker_id());
  if (it == workers_.end() || it->second.session != session) return;
  WorkerEntry& worker = it->second;
  worker.last_seen = absl::Now();
  // A worker speaks only for attempts with an allocation on it: its stream
  // cannot write another worker's jobs' logs or progress.
  auto placed_here = [&](int64_t job_id,
                         int32_t attempt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto a = allocs_.lower_bound(AllocKey{job_id, attempt, INT32_MIN});
         a != allocs_.end() && std::get<0>(a->first) == job_id &&
         std::get<1>(a->first) == attempt;
         ++a)
      if (a->second.worker_id == worker.info.id()) return true;
    return false;
  };
  switch (message.msg_case()) {
    case v1::WorkerMessage::kHeartbeat:
      metrics_->HeartbeatReceived();
      for (const v1::Device& sample : message.heartbeat().devices())
        for (v1::Device& d : *worker.info.mutable_devices())
          if (d.index() == sample.index()) {
            d.set_utilization(sample.utilization());
            d.set_memory_used_bytes(sample.memory_used_bytes());
          }
      break;
    case v1::WorkerMessage::kNodeStatus:
      OnNodeStatus(worker, message.node_status());
      break;
    case v1::WorkerMessage::kShutdownAck:
      RecordEvent(message.shutdown_ack().hook_ok() ? "HOOK_OK" : "HOOK_FAILED",
                  worker.info.id(), 0,
                  message.shutdown_ack().hook_ok()
                      ? "worker --on-shutdown hook ran"
                      : message.shutdown_ack().message());
      break;
    case v1::WorkerMessage::kProgress:
      if (!placed_here(message.progress().job_id(),
                       message.progress().attempt()))
        break;
      OnProgress(message.progress());
      break;
    case v1::WorkerMessage::kLog: {
      const v1::LogData& log = message.log();
      if (!placed_here(log.job_id(), log.attempt())) break;
      absl::Status s =
          logs_.Append(log.job_id(), log.attempt(), log.rank(), log.data(),
                       log.has_offset() ? std::optional<int64_t>(log.offset())
                                        : std::nullopt);
      if (!s.ok()) LOG(WARNING) << s;
      Changed();
      break;
    }
    default:
      break;
  }
}

void SchedulerCore::OnNodeStatus(WorkerEntry& worker,
                                 const v1::NodeStatus& status) {
  const AllocKey key{status.job_id(), status.attempt(), status.node_rank()};
  // The worker forgets a node once its EXITED is acked (until then it
  // resends it to every new stream): ack only what PostgreSQL holds.
  auto ack_exit = [key](WorkerSession& session) {
    v1::SchedulerMessage ack;
    ack.mutable_exit_ack()->set_job_id(std::get<0>(key));
    ack.mutable_exit_ack()->set_attempt(std::get<1>(key));
    ack.mutable_exit_ack()->set_node_rank(std::get<2>(key));
    session.Push(std::move(ack));
  };
  auto a = allocs_.find(key);
  if (a == allocs_.end() || a->second.worker_id != worker.info.id()) {
    // Already recorded (a resend), or never ours; unless its record is
    // still waiting for the database.
    if (status.state() == v1::NODE_STATE_EXITED &&
        !exit_ack_pending_.count(key))
      ack_exit(*worker.session);
    // Not ours (any more): make sure it stops.
    if (status.state() == v1::NODE_STATE_RUNNING) {
      v1::SchedulerMessage cancel;
      cancel.mutable_cancel()->set_job_id(status.job_id());
      cancel.mutable_cancel()->set_attempt(status.attempt());
      cancel.mutable_cancel()->set_reason("stale attempt");
      worker.session->Push(std::move(cancel));
    }
    return;
  }
  auto j = jobs_.find(status.job_id());
  const bool current = j != jobs_.end() && !j->second.terminal &&
                       !j->second.requeue_deferred &&
                       j->second.job.attempt() == status.attempt();
  if (status.state() == v1::NODE_STATE_RUNNING) {
    a->second.running = true;
    if (current) MaybeMarkRunning(j->second);
    return;
  }
  if (status.state() != v1::NODE_STATE_EXITED) return;
  exit_ack_pending_.insert(key);
  CloseAlloc(key, a->second, absl::Now(), status.exit_code(),
             [this, key, ack_exit, worker_id = worker.info.id()]()
                 ABSL_NO_THREAD_SAFETY_ANALYSIS {
                   // Under mu_: at once, or from RetryDeferred.
                   exit_ack_pending_.erase(key);
                   auto w = workers_.find(worker_id);
                   if (w != workers_.end() && w->second.session)
                     ack_exit(*w->second.session);
                 });
  EraseAlloc(key);
  Changed();
  if (current) {
    ActiveJob& job = j->second;
    if (status.exit_code() != 0) {
      const std::string message =
          status.message().empty()
              ? absl::StrCat("node ", status.node_rank(), " exited with ",
                             status.exit_code())
              : status.message();
      if (job.job.spec().resources().nodes() > 1) {
        OnGangNodeFailed(job, status.exit_code(), message);
      } else {
        FinishJob(job, v1::JOB_STATE_FAILED, status.exit_code(), message);
      }
    } else if (++job.nodes_succeeded >=
               std::max(1, job.job.spec().resources().nodes())) {
      FinishJob(job, v1::JOB_STATE_SUCCEEDED, 0, "");
    }
  }
  ForgetIfDone(status.job_id());
  WakePlacement();
}

void SchedulerCore::MaybeMarkRunning(ActiveJob& job) {
  const int64_t id = job.job.id();
  const int32_t attempt = job.job.attempt();
  if (job.terminal || job.job.state() != v1::JOB_STATE_ASSIGNED) return;
  for (auto it = allocs_.lower_bound({id, attempt, INT32_MIN});
       it != allocs_.end() && std::get<0>(it->first) == id &&
       std::get<1>(it->first) == attempt;
       ++it)
    if (!it->second.running) return;  // the gang is not complete yet
  auto write = [store = job_store_, id, attempt] {
    absl::Status s = store->MarkRunning(id, attempt);
    // Refused: no longer ASSIGNED at this attempt (requeued or ended).
    return absl::IsFailedPrecondition(s) ? absl::OkStatus() : s;
  };
  Write(
      absl::StrCat("job ", id, " attempt ", attempt, " running"),
      [&](WriteBatch& b) { return b.MarkRunning(id, attempt); }, write,
      [id](const absl::Status& s) {
        // Refused: no longer ASSIGNED at this attempt (requeued or ended).
        if (!s.ok() && !absl::IsFailedPrecondition(s))
          LOG(WARNING) << "marking job " << id << " running: " << s;
      });
  job.job.set_state(v1::JOB_STATE_RUNNING);
  *job.job.mutable_started_at() =
      TimeUtil::MillisecondsToTimestamp(absl::ToUnixMillis(absl::Now()));
  Touch(id);
  Changed();
}

void SchedulerCore::OnGangNodeFailed(ActiveJob& job, int32_t exit_code,
                                     const std::string& message) {
  if (job.gang_failure && job.gang_failure->attempt == job.job.attempt())
    return;  // the first failed node's exit is the job's
  job.gang_failure = ActiveJob::NodeFailure{
      job.job.attempt(), exit_code, message,
      absl::Now() + kGangFailureGrace * HeartbeatInterval()};
  gang_failures_.insert(job.job.id());
  LOG(INFO) << "job " << job.job.id() << " attempt " << job.job.attempt()
            << ": " << message << "; failing it unless a peer's worker is lost";
}

void SchedulerCore::ReconcileEndedNodes(const std::vector<EndedNode>& ended) {
  std::map<int64_t, std::vector<const EndedNode*>> by_job;
  for (const EndedNode& n : ended) by_job[n.job_id].push_back(&n);
  for (const auto& [id, nodes] : by_job) {
    auto j = jobs_.find(id);
    if (j == jobs_.end() || j->second.terminal) continue;
    ActiveJob& job = j->second;
    const EndedNode* failed = nullptr;
    const EndedNode* unreported = nullptr;
    for (const EndedNode* n : nodes) {
      if (!n->exit_code.has_value()) {
        if (unreported == nullptr) unreported = n;
      } else if (*n->exit_code == 0) {
        ++job.nodes_succeeded;
      } else if (failed == nullptr) {
        failed = n;
      }
    }
    if (failed != nullptr) {
      const std::string message =
          absl::StrCat("node ", failed->node_rank, " exited with ",
                       *failed->exit_code, " (before a scheduler restart)");
      if (job.job.spec().resources().nodes() > 1) {
        OnGangNodeFailed(job, *failed->exit_code, message);
      } else {
        FinishJob(job, v1::JOB_STATE_FAILED, *failed->exit_code, message);
      }
    } else if (unreported != nullptr) {
      // Its worker was lost and the requeue did not reach PostgreSQL.
      RequeueOrFail(job, absl::StrCat("node ", unreported->node_rank,
                                      " ended without an exit status before "
                                      "a scheduler restart"));
    } else if (job.nodes_succeeded >=
               std::max(1, job.job.spec().resources().nodes())) {
      FinishJob(job, v1::JOB_STATE_SUCCEEDED, 0, "");
    }
  }
}

bool SchedulerCore::PeerUnreachable(int64_t job_id, int32_t attempt,
                                    absl::Time now) {
  for (auto a = allocs_.lower_bound(AllocKey{job_id, attempt, INT32_MIN});
       a != allocs_.end() && std::get<0>(a->first) == job_id &&
       std::get<1>(a->first) == attempt;
       ++a) {
    auto w = workers_.find(a->second.worker_id);
    if (w == workers_.end()) continue;
    if (w->second.session == nullptr ||
        now - w->second.last_seen > kGangFailureGrace * HeartbeatInterval())
      return true;
  }
  return false;
}

void SchedulerCore::CheckGangFailures(absl::Time now) {
  const std::set<int64_t> ids = gang_failures_;
  for (int64_t id : ids) {
    auto j = jobs_.find(id);
    if (j == jobs_.end() || j->second.terminal || !j->second.gang_failure ||
        j->second.gang_failure->attempt != j->second.job.attempt()) {
      // Ended or requeued meanwhile.
      if (j != jobs_.end()) j->second.gang_failure.reset();
      gang_failures_.erase(id);
      continue;
    }
    const ActiveJob::NodeFailure failure = *j->second.gang_failure;
    // A deferred requeue already ended this attempt; a peer's worker that
    // is unreachable may yet be lost, which requeues instead.
    if (j->second.requeue_deferred || now < failure.decide_at ||
        PeerUnreachable(id, failure.attempt, now))
      continue;
    j->second.gang_failure.reset();
    gang_failures_.erase(id);
    FinishJob(j->second, v1::JOB_STATE_FAILED, failure.exit_code,
              failure.message);
  }
}

void SchedulerCore::OnProgress(const v1::ProgressReport& report) {
  auto j = jobs_.find(report.job_id());
  if (j == jobs_.end() || j->second.job.attempt() != report.attempt()) return;
  ActiveJob& job = j->second;
  v1::Progress progress = report.progress();
  *progress.mutable_updated_at() = TimeUtil::GetCurrentTime();
  // The final summary line does not repeat the run's length.
  if (progress.total_steps() == 0)
    progress.set_total_steps(job.job.progress().total_steps());
  if (progress.total_epochs() == 0)
    progress.set_total_epochs(job.job.progress().total_epochs());
  *job.job.mutable_progress() = progress;
  const absl::Time now = absl::Now();
  // Bounded write rate; a final accuracy is always written.
  if (now - job.progress_written > absl::Seconds(2) ||
      progress.test_accuracy() > 0) {
    job.progress_written = now;
    Write(
        "progress",
        [&](WriteBatch& b) {
          return b.UpdateProgress(report.job_id(), report.attempt(), progress);
        },
        nullptr, nullptr);
  }
  Touch(report.job_id());
  Changed();
}

v1::Worker SchedulerCore::WorkerView(const WorkerEntry& entry) {
  v1::Worker w = entry.info;
  *w.mutable_last_seen() =
      TimeUtil::MillisecondsToTimestamp(absl::ToUnixMillis(entry.last_seen));
  double allocated = 0;
  std::set<int64_t> jobs;
  if (auto placed = worker_allocs_.find(entry.info.id());
      placed != worker_allocs_.end()) {
    for (const AllocKey& key : placed->second) {
      const Alloc& a = allocs_[key];
      allocated += a.share * static_cast<double>(a.devices.size());
      jobs.insert(std::get<0>(key));
    }
  }
  w.set_gpus_allocated(allocated);
  if (entry.price) {
    w.set_price_per_gpu_hour(
        pricing::PriceAt(*entry.price, absl::Now()).ToString());
    w.set_currency(options_.pricing->currency());
  }
  for (int64_t id : jobs) w.add_running_jobs(id);
  if (auto v = verdicts_.find(entry.info.id()); v != verdicts_.end()) {
    w.set_verdict(idle::VerdictName(v->second.verdict));
    w.set_verdict_reason(v->second.reason);
    w.set_idle_seconds(absl::ToDoubleSeconds(v->second.idle));
  }
  if (w.state() == v1::WORKER_STATE_OFFLINE) {
    if (auto r = stopped_reasons_.find(entry.info.id());
        r != stopped_reasons_.end())
      w.set_stopped_reason(r->second);
  }
  return w;
}

std::vector<v1::Worker> SchedulerCore::BuildWorkerViews() {
  std::vector<v1::Worker> out;
  out.reserve(workers_.size());
  for (const auto& [id, entry] : workers_) out.push_back(WorkerView(entry));
  return out;
}

absl::StatusOr<v1::Worker> SchedulerCore::DrainWorker(const std::string& id,
                                                      bool undo) {
  absl::MutexLock lock(&mu_);
  AwaitNoCommit();
  auto it = workers_.find(id);
  if (it == workers_.end())
    return absl::NotFoundError(absl::StrCat("worker ", id, " not found"));
  WorkerEntry& w = it->second;
  const auto state = w.info.state();
  if (!undo && state != v1::WORKER_STATE_UP &&
      state != v1::WORKER_STATE_DRAINING)
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", id, " is not up"));
  absl::Status s = worker_store_->SetWorkerDrain(id, !undo);
  if (!s.ok()) return s;
  w.drain_requested = !undo;
  if (!undo && state == v1::WORKER_STATE_UP)
    w.info.set_state(v1::WORKER_STATE_DRAINING);
  if (undo && state == v1::WORKER_STATE_DRAINING) {
    w.info.set_state(v1::WORKER_STATE_UP);
    WakePlacement();  // its free devices are open to the queue again
  }
  Changed();
  return WorkerView(w);
}

}  // namespace tupa::scheduler

// SchedulerCore: the idle policy (issue 6). Once a second the core hands a
// snapshot of its view to the pure idle::Decide() and acts on the result:
// Shutdown to idle workers (and the scheduler-side hook), scale-up hooks
// for pending jobs that fit no live worker, and zombie jobs flagged or
// cancelled. Every decision is recorded in cluster_events.
#include <glog/logging.h>
#include <google/protobuf/util/time_util.h>

#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/hook_runner.h"
#include "scheduler/service/scheduler_core.h"

namespace tupa::scheduler {

void SchedulerCore::RecordEvent(const std::string& kind,
                                const std::string& worker_id, int64_t job_id,
                                const std::string& reason, double idle_seconds,
                                std::optional<pricing::Money> saved) {
  absl::Status s = worker_store_->RecordClusterEvent(
      kind, worker_id, job_id, reason, idle_seconds, saved);
  if (!s.ok()) LOG(WARNING) << "recording " << kind << " event: " << s;
}

void SchedulerCore::RunHookAsync(const std::string& command,
                                 std::map<std::string, std::string> env,
                                 std::string worker_id) {
  absl::MutexLock lock(&hooks_mu_);
  for (auto it = hook_threads_.begin(); it != hook_threads_.end();) {
    if (!it->done->load()) {
      ++it;
      continue;
    }
    it->thread.join();
    it = hook_threads_.erase(it);
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread thread([this, done, command, env = std::move(env),
                      worker_id = std::move(worker_id)] {
    absl::Status s = RunHook(command, env);
    if (s.ok()) {
      LOG(INFO) << "hook ran: " << command;
      RecordEvent("HOOK_OK", worker_id, 0, command);
    } else {
      LOG(ERROR) << s.message();
      RecordEvent("HOOK_FAILED", worker_id, 0, std::string(s.message()));
    }
    *done = true;
  });
  hook_threads_.push_back({std::move(thread), std::move(done)});
}

idle::Snapshot SchedulerCore::IdleSnapshot(absl::Time now) {
  idle::Snapshot snap;
  std::map<std::string, NodeView> views;
  for (NodeView& v : NodeViews()) views[v.worker_id] = std::move(v);
  std::map<std::string, std::vector<int64_t>> jobs_on;
  for (const auto& [key, a] : allocs_)
    jobs_on[a.worker_id].push_back(std::get<0>(key));
  const bool cost_rule = options_.idle->idle_shutdown.kind ==
                         idle::IdleShutdownPolicy::Kind::kCost;
  // What each allocation of a job with a max_runtime gives back at its end
  // (the cost rule's scale-up waits for it rather than boot a worker).
  std::map<std::string, std::vector<idle::WorkerInfo::Release>> releases_on;
  if (cost_rule && options_.idle->scale_up.enabled) {
    for (const auto& [key, a] : allocs_) {
      auto j = jobs_.find(std::get<0>(key));
      if (j == jobs_.end()) continue;
      const int64_t max_runtime_s =
          j->second.job.spec().max_runtime().seconds();
      if (max_runtime_s <= 0) continue;
      idle::WorkerInfo::Release r;
      r.at = j->second.assigned_at + absl::Seconds(max_runtime_s);
      r.gpus = a.share >= 1.0 ? static_cast<int>(a.devices.size()) : 0;
      r.cpu = a.cpu;
      r.memory = a.memory;
      releases_on[a.worker_id].push_back(r);
    }
  }
  for (const auto& [id, w] : workers_) {
    const auto state = w.info.state();
    if ((state != v1::WORKER_STATE_UP && state != v1::WORKER_STATE_DRAINING) ||
        w.session == nullptr)
      continue;
    idle::WorkerInfo info;
    info.id = id;
    info.region = w.info.region();
    info.gpu_type = w.gpu_type;
    info.instance_id = w.info.instance_id();
    info.labels.insert(w.info.labels().begin(), w.info.labels().end());
    info.state = state == v1::WORKER_STATE_DRAINING
                     ? idle::WorkerInfo::State::kDraining
                     : idle::WorkerInfo::State::kUp;
    info.joined_at = w.up_since == absl::Time() ? now : w.up_since;
    info.gpus_total = w.info.devices_size();
    const NodeView& v = views[id];
    for (const DeviceSlot& d : v.devices) info.gpus_free += d.free_share >= 1.0;
    info.cpu_free = v.cpu_free;
    info.memory_free = v.memory_free;
    auto& ids = jobs_on[id];
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    info.job_ids = ids;
    for (const v1::Device& d : w.info.devices())
      info.device_activity.push_back(d.utilization());
    if (w.price) {
      info.price_per_gpu_hour = pricing::PriceAt(*w.price, now).ToDouble();
      if (cost_rule)
        info.price_steps = pricing::PriceSteps(*w.price, now, absl::Hours(24));
    }
    if (auto r = releases_on.find(id); r != releases_on.end())
      info.releases = std::move(r->second);
    snap.workers.push_back(std::move(info));
  }
  for (const auto& [id, j] : jobs_) {
    if (j.terminal) continue;
    const v1::JobSpec& spec = j.job.spec();
    if (j.job.state() == v1::JOB_STATE_PENDING) {
      if (!j.pending_reason.empty()) continue;  // held for budget
      idle::PendingJob p;
      p.job_id = id;
      p.gpus_per_node = static_cast<int>(std::ceil(spec.resources().gpus()));
      p.nodes = std::max(1, spec.resources().nodes());
      p.cpu_per_node = spec.resources().cpu();
      p.memory_per_node = spec.resources().memory_bytes();
      p.gpu_types.assign(spec.resources().gpu_type().begin(),
                         spec.resources().gpu_type().end());
      p.labels.insert(spec.resources().labels().begin(),
                      spec.resources().labels().end());
      p.pending_since = absl::FromUnixMillis(
          google::protobuf::util::TimeUtil::TimestampToMilliseconds(
              j.job.created_at()));
      p.fits_live_worker = idle::FitsLiveWorkers(p, snap.workers);
      if (auto info = last_pending_.find(id);
          info != last_pending_.end() &&
          info->second.reason == PendingReason::kWaitsForBoot) {
        auto boot = workers_.find(info->second.boot_node);
        if (boot != workers_.end() && boot->second.info.devices_size() > 0) {
          p.waits_for_boot_of = boot->second.info.devices(0).gpu_type();
          p.fits_live_worker = false;
        }
      }
      snap.pending.push_back(std::move(p));
      continue;
    }
    idle::RunningJob r;
    r.job_id = id;
    r.started_at = j.assigned_at;
    std::optional<double> activity;
    for (auto it = allocs_.lower_bound({id, j.job.attempt(), 0});
         it != allocs_.end() && std::get<0>(it->first) == id &&
         std::get<1>(it->first) == j.job.attempt();
         ++it) {
      r.worker_ids.push_back(it->second.worker_id);
      const WorkerEntry& w = workers_[it->second.worker_id];
      for (int32_t index : it->second.devices)
        for (const v1::Device& d : w.info.devices())
          if (d.index() == index)
            activity = std::max(activity.value_or(0.0), d.utilization());
    }
    if (r.worker_ids.empty()) continue;
    r.activity = activity;
    snap.running.push_back(std::move(r));
  }
  return snap;
}

void SchedulerCore::ShutDownWorker(const idle::ShutdownDecision& d) {
  auto it = workers_.find(d.worker_id);
  if (it == workers_.end() || it->second.session == nullptr) return;
  WorkerEntry& w = it->second;
  const std::string reason = absl::StrCat(d.reason_code, ": ", d.reason);
  w.stop_reason = reason;
  v1::SchedulerMessage msg;
  msg.mutable_shutdown()->set_reason(reason);
  w.session->Push(std::move(msg));
  std::optional<pricing::Money> saved;
  if (options_.pricing && d.saved_per_hour > 0) {
    // As stored before Money: the policy's figure to the micro-unit.
    auto m =
        pricing::Money::FromString(absl::StrFormat("%.6f", d.saved_per_hour));
    if (m.ok()) saved = *m;
  }
  RecordEvent("SHUTDOWN", d.worker_id, 0, reason, absl::ToDoubleSeconds(d.idle),
              saved);
  metrics_->IdleShutdown(d.gpu_type, d.saved_per_hour);
  LOG(INFO) << "idle policy: shutting down " << d.worker_id << " (" << reason
            << "; saves " << d.saved_per_hour << "/h)";
  const std::string& hook = options_.idle->idle_shutdown.hook;
  if (!hook.empty())
    RunHookAsync(hook,
                 {{"TUPA_WORKER_ID", d.worker_id},
                  {"TUPA_INSTANCE_ID", d.instance_id},
                  {"TUPA_REGION", d.region},
                  {"TUPA_GPU_TYPE", d.gpu_type},
                  {"TUPA_REASON", d.reason_code},
                  {"TUPA_REASON_TEXT", d.reason}},
                 d.worker_id);
}

void SchedulerCore::RunIdlePolicy(absl::Time now) {
  if (!options_.idle || now - last_idle_run_ < absl::Seconds(1)) return;
  last_idle_run_ = now;
  idle::Decisions d =
      idle::Decide(*options_.idle, IdleSnapshot(now), idle_state_, now);
  idle_state_ = std::move(d.state);
  verdicts_.clear();
  std::map<std::string, int> by_verdict;
  for (idle::WorkerVerdict& v : d.verdicts) {
    ++by_verdict[idle::VerdictName(v.verdict)];
    verdicts_[v.worker_id] = std::move(v);
  }
  metrics_->IdleVerdicts(by_verdict);
  for (const idle::ShutdownDecision& s : d.shutdowns) ShutDownWorker(s);
  for (const idle::CancelledShutdown& c : d.cancelled)
    RecordEvent("SHUTDOWN_CANCELLED", c.worker_id, 0, c.reason);
  for (const idle::ScaleUpRequest& up : d.scale_ups) {
    RecordEvent(
        "SCALE_UP", "", up.job_ids.empty() ? 0 : up.job_ids[0],
        absl::StrCat(up.pool(), ": ", up.gpus_needed, " GPUs for job(s) ",
                     absl::StrJoin(up.job_ids, ","), "; ", up.reason));
    metrics_->ScaleUpRequested(up.pool());
    LOG(INFO) << "idle policy: scale-up " << up.pool() << " +" << up.gpus_needed
              << " GPUs (" << up.reason << ")";
    const std::string& hook = options_.idle->scale_up.hook;
    if (!hook.empty())
      RunHookAsync(hook,
                   {{"TUPA_POOL", up.pool()},
                    {"TUPA_REGION", up.region},
                    {"TUPA_GPU_TYPE", up.gpu_type},
                    {"TUPA_GPUS_NEEDED", absl::StrCat(up.gpus_needed)},
                    {"TUPA_JOB_IDS", absl::StrJoin(up.job_ids, ",")},
                    {"TUPA_REASON", "SCALE_UP"},
                    {"TUPA_REASON_TEXT", up.reason}},
                   "");
  }
  for (const idle::ZombieJob& z : d.zombies) {
    const bool cancel = z.action == idle::ZombieJobPolicy::Action::kCancel;
    RecordEvent("ZOMBIE", z.worker_ids.empty() ? "" : z.worker_ids[0], z.job_id,
                z.reason);
    metrics_->ZombieJob(cancel ? "cancel" : "flag");
    LOG(WARNING) << "idle policy: job " << z.job_id << " is a zombie ("
                 << z.reason << ")" << (cancel ? "; cancelling" : "");
    auto j = jobs_.find(z.job_id);
    if (j == jobs_.end() || j->second.terminal) continue;
    if (cancel) {
      FinishJob(j->second, v1::JOB_STATE_CANCELLED, 0,
                absl::StrCat("ZOMBIE: ", z.reason));
    } else {
      j->second.job.set_message(absl::StrCat("ZOMBIE: ", z.reason));
      Touch(z.job_id);
      Changed();
    }
  }
}

}  // namespace tupa::scheduler

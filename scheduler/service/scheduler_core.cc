// Lifecycle, the scheduling loop and the job API of SchedulerCore. Worker
// stream handling is in scheduler_core_workers.cc.
#include "scheduler/service/scheduler_core.h"

#include <glog/logging.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/job_spec.h"
#include "common/status_macros.h"
#include "common/thread_name.h"
#include "scheduler/placement/fit_bounds.h"

namespace tupa::scheduler {

using google::protobuf::util::TimeUtil;

namespace {

// The ports a job holds on each of its workers (port_blocks.h).
int32_t JobPortSpan(const v1::JobSpec& spec) {
  return PortSpan(std::max(1, spec.resources().nodes()) * RanksPerNode(spec));
}

}  // namespace

SchedulerCore::SchedulerCore(Stores* stores, SchedulerOptions options)
    : job_store_(&stores->jobs()),
      usage_store_(&stores->usage()),
      worker_store_(&stores->workers()),
      options_(std::move(options)),
      logs_(absl::StrCat(options_.data_dir, "/logs")),
      submits_(job_store_) {
  heartbeat_interval_ms_ =
      absl::ToInt64Milliseconds(options_.heartbeat_interval);
  metrics_->SetHeartbeatInterval(options_.heartbeat_interval);
}

SchedulerCore::~SchedulerCore() { Shutdown(); }

absl::Status SchedulerCore::Start() {
  ASSIGN_OR_RETURN(std::vector<v1::Job> jobs, job_store_->LoadActiveJobs());
  ASSIGN_OR_RETURN(std::vector<AllocationRecord> allocs,
                   usage_store_->LoadOpenAllocations());
  ASSIGN_OR_RETURN(std::vector<EndedNode> ended,
                   usage_store_->LoadEndedNodesOfActiveJobs());
  ASSIGN_OR_RETURN(std::vector<v1::Worker> workers,
                   worker_store_->ListWorkers());
  ASSIGN_OR_RETURN(std::vector<UptimeRecord> uptime,
                   usage_store_->LoadOpenUptime());
  ASSIGN_OR_RETURN(auto stopped_reasons, worker_store_->LastShutdownReasons());
  // tupa_cost_accrued_total resumes from what PostgreSQL holds: closed
  // allocations here, open ones up to now below (AccrueRunningCost).
  std::vector<CostTotal> closed_cost;
  if (options_.pricing) {
    ASSIGN_OR_RETURN(closed_cost, usage_store_->ClosedCostTotals());
  }
  std::vector<int64_t> job_ids;
  for (const v1::Job& j : jobs) job_ids.push_back(j.id());
  ASSIGN_OR_RETURN(auto usage, usage_store_->GetJobsUsage(job_ids));
  // The tupa policy's request mix is the last jobs submitted: read them
  // back so that the first placements after a restart see the same mix.
  JobFilter recent_filter;
  recent_filter.limit = static_cast<int>(kRecentMixJobs);
  ASSIGN_OR_RETURN(std::vector<v1::Job> recent,
                   job_store_->ListJobs(recent_filter));
  // Stored spend of the teams whose pending jobs get a budget check below.
  std::map<std::string, absl::StatusOr<std::optional<pricing::Money>>> spend;
  for (const v1::Job& j : jobs)
    if (j.state() == v1::JOB_STATE_PENDING && options_.pricing &&
        !spend.count(j.spec().team()))
      spend.emplace(j.spec().team(),
                    StoredTeamSpend(j.spec().team(), absl::Now()));
  if (options_.pricing) {
    for (const auto& b : options_.pricing->budgets())
      metrics_->SetTeamBudget(b.team, options_.pricing->currency(),
                              b.monthly.ToDouble());
  }
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    stopped_reasons_ = std::move(stopped_reasons);
    // Known workers get a full lease to reconnect after a scheduler restart.
    for (v1::Worker& w : workers) {
      WorkerEntry entry;
      entry.last_seen = now;
      entry.drain_requested = w.drain_requested();
      SetWorkerInfo(entry, std::move(w));
      if (entry.info.devices_size() > 0)
        entry.gpu_type = entry.info.devices(0).gpu_type();
      entry.price =
          PriceFor(entry.info.region(), entry.gpu_type, entry.info.offering());
      workers_[entry.info.id()] = std::move(entry);
    }
    // Uptime spans end at a restart; reconnecting workers open new ones.
    for (const UptimeRecord& u : uptime) {
      WorkerEntry span;
      span.info.set_id(u.worker_id);
      for (int i = 0; i < static_cast<int>(u.gpus); ++i)
        span.info.add_devices();
      span.price = PriceFor(u.region, u.gpu_type, u.offering);
      span.uptime_id = u.id;
      span.up_since = absl::FromUnixMillis(u.started_at_ms);
      CloseUptime(span, now);
    }
    const std::set<int64_t> active_ids(job_ids.begin(), job_ids.end());
    for (auto it = recent.rbegin(); it != recent.rend(); ++it)  // oldest first
      if (!active_ids.count(it->id())) recent_mix_.Add(RequestOf(*it));
    for (v1::Job& j : jobs) {
      ActiveJob active;
      active.assigned_at = now;
      auto u = usage.find(j.id());
      if (u != usage.end() && u->second.closed_cost.has_value())
        active.closed_cost = *u->second.closed_cost;
      // Usage counts open allocations up to now; the view keeps the
      // closed part and adds the open ones itself.
      if (u != usage.end()) active.closed_gpu_seconds = u->second.gpu_seconds;
      active.job = std::move(j);
      AddJob(std::move(active));
    }
    std::set<int64_t> placements_rebuilt;
    for (const AllocationRecord& a : allocs) {
      Alloc alloc;
      alloc.worker_id = a.worker_id;
      alloc.devices = a.device_indexes;
      alloc.share = a.gpu_share;
      alloc.master_port = a.master_port;
      alloc.port_span = PortSpan(1);  // its job's world, below, if known
      alloc.started = absl::FromUnixMillis(a.started_at_ms);
      alloc.gpus = a.gpus;
      alloc.region = a.region;
      alloc.gpu_type = a.gpu_type;
      auto w = workers_.find(a.worker_id);
      alloc.price =
          PriceFor(a.region, a.gpu_type,
                   w != workers_.end() ? w->second.info.offering() : "");
      // Nodes of earlier attempts and of ended jobs too: until their worker
      // reports them gone (or is lost) their processes may still hold the
      // devices, as they would without the restart.
      auto job = jobs_.find(a.job_id);
      if (job != jobs_.end()) {
        const v1::JobSpec& spec = job->second.job.spec();
        alloc.port_span = JobPortSpan(spec);
        alloc.cpu = spec.resources().cpu();
        alloc.memory = spec.resources().memory_bytes();
        alloc.team = spec.team();
      }
      if (job != jobs_.end()) {
        job->second.closed_gpu_seconds -=
            alloc.gpus * absl::ToDoubleSeconds(now - alloc.started);
        // The reads show the current attempt's nodes (GetJob reads them
        // from the open allocations, as JobStore::GetJob does).
        if (a.attempt == job->second.job.attempt()) {
          if (!placements_rebuilt.count(a.job_id)) {
            job->second.job.clear_placements();
            placements_rebuilt.insert(a.job_id);
          }
          v1::Placement* p = job->second.job.add_placements();
          p->set_worker_id(a.worker_id);
          p->set_node_rank(a.node_rank);
          for (int32_t d : a.device_indexes) p->add_device_indexes(d);
        }
      }
      AddAlloc({a.job_id, a.attempt, a.node_rank}, std::move(alloc));
    }
    for (const CostTotal& t : closed_cost) {
      metrics_->AddCost(t.team, t.user, t.gpu_type, t.currency,
                        t.cost.ToDouble());
    }
    AccrueRunningCost(now);
    ReconcileEndedNodes(ended);
    // A held job stays held across a restart. Checked once the open
    // allocations are back: the running jobs' cost so far counts against
    // the team's budget, and is in no stored row until they end.
    if (options_.pricing) {
      for (auto& [id, active] : jobs_) {
        if (active.terminal || active.job.state() != v1::JOB_STATE_PENDING)
          continue;
        // (A job ReconcileEndedNodes just requeued has no stored spend read.)
        auto stored = spend.find(active.job.spec().team());
        if (stored != spend.end() && stored->second.ok())
          CheckBudget(active.job.spec(), now, *stored->second,
                      &active.pending_reason)
              .IgnoreError();
        active.budget_checked = now;
      }
    }
    FlushWrites();  // what ReconcileEndedNodes decided
    PublishReads(now);
    LOG(INFO) << "rebuilt from PostgreSQL: " << jobs_.size() << " active jobs, "
              << allocs_.size() << " open allocations, " << workers_.size()
              << " known workers; request mix of the last "
              << recent_mix_.size() << " submitted jobs";
  }
  loop_ = std::thread([this] {
    NameThisThread("tupa-loop");
    Loop();
  });
  return absl::OkStatus();
}

void SchedulerCore::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [id, w] : workers_)
      if (w.session) w.session->Close();
  }
  if (loop_.joinable()) loop_.join();
  std::vector<HookThread> hooks;
  {
    absl::MutexLock lock(&hooks_mu_);
    hooks.swap(hook_threads_);
  }
  for (auto& h : hooks) h.thread.join();
}

void SchedulerCore::Loop() {
  // Wake-ups (a submit, a node exit) make the next cycle come sooner, but
  // not more often than every min_gap: a burst of submits then costs a few
  // passes, not one each. min_gap is at least twice what the last cycle
  // took, so that cycles (which hold the core) take at most a third of the
  // time however deep the queue, and worker messages are never starved.
  // Writes queued by the worker streams are committed as soon as the loop
  // is free (group commit: what arrives during one commit goes into the
  // next), each round then published.
  constexpr absl::Duration kMinCycleGap = absl::Milliseconds(20);
  absl::Duration min_gap = kMinCycleGap;
  absl::Time last_cycle = absl::InfinitePast();
  while (true) {
    bool cycle = false;
    {
      absl::MutexLock lock(&mu_);
      const bool woken = wake_;
      const absl::Time earliest = last_cycle + min_gap;
      const absl::Time due = woken ? earliest : std::max(next_cycle_, earliest);
      auto ready = [this, woken]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !batch_writes_.empty() || (!woken && wake_) ||
               (!woken && has_arrivals_.load());
      };
      mu_.AwaitWithDeadline(absl::Condition(&ready), due);
      TakeArrivals();
      // What worker messages and submits queued: their view changes are
      // made, so the commit need not hold the core.
      FlushWritesReleasingLock();
      if (stopping_) return;
      const absl::Time now = absl::Now();
      cycle = now >= last_cycle + min_gap && (now >= next_cycle_ || wake_);
      if (!cycle) PublishReads(now);
    }
    if (cycle) {
      last_cycle = absl::Now();
      RunCycle();
      min_gap = std::max(kMinCycleGap, 2 * (absl::Now() - last_cycle));
    }
  }
}

void SchedulerCore::RunCycle() {
  const absl::Time now = absl::Now();
  std::optional<MetricsView> gauges;
  absl::Time gauges_from;
  {
    absl::MutexLock lock(&mu_);
    TakeArrivals();
    wake_ = false;
    next_cycle_ = now + options_.cycle_interval;
    RetryDeferred(now);
    CheckLeases(now);
    CheckGangFailures(now);
    EnforceBudgets(now);
    UpdateOffPeakWaits(now);
    Schedule(now);
    RunIdlePolicy(now);
    // The gauges walk every active job: twice a second is plenty for a
    // Prometheus scrape, and keeps a deep queue from costing every cycle.
    // A queue so deep that one refresh takes more than 25 ms refreshes less
    // often, so that the gauges never cost more than ~5% of a core (one
    // refresh costs ~1 µs per active job: 0.1 s for 100k, measured).
    if (now - last_gauges_ >=
        std::max(absl::Milliseconds(500), 20 * last_gauges_took_)) {
      last_gauges_ = now;
      AccrueIdleCost(now);
      AccrueRunningCost(now);
      gauges_from = absl::Now();
      gauges = GaugesView(now);
    }
    FlushWrites();
    PublishReads(absl::Now());
  }
  // One labelled series per job: built outside mu_, so that submits do not
  // wait for it.
  if (gauges) {
    metrics_->Update(*gauges, now);
    last_gauges_took_ = absl::Now() - gauges_from;
  }
}

void SchedulerCore::CheckLeases(absl::Time now) {
  auto busy = [this](const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = worker_allocs_.find(id);
    return it != worker_allocs_.end() && !it->second.empty();
  };
  std::vector<std::string> lost;
  int connected = 0;
  for (auto& [id, w] : workers_) {
    if (w.session != nullptr) ++connected;
    const auto state = w.info.state();
    // Not up but holding allocations: stored LOST or OFFLINE by a scheduler
    // that crashed before it requeued the jobs. It gets a lease to
    // reconnect like any known worker, then its jobs are requeued.
    const bool live =
        state == v1::WORKER_STATE_UP || state == v1::WORKER_STATE_DRAINING;
    if ((!live && !busy(id)) || now - w.last_seen <= options_.worker_timeout)
      continue;
    // Told to shut down, with nothing on it: a hook that powers the
    // machine off ends the stream without a goodbye. Stopped, not lost
    // (no TupaWorkerLost page for every idle shutdown).
    if (!w.stop_reason.empty() && !busy(id)) {
      MarkStopped(w, w.last_seen);
      continue;
    }
    lost.push_back(id);
  }
  const HeartbeatRate rate{options_.heartbeat_interval,
                           options_.max_heartbeats_per_second,
                           options_.worker_timeout};
  const int64_t interval_ms =
      absl::ToInt64Milliseconds(rate.IntervalFor(connected));
  if (heartbeat_interval_ms_.exchange(interval_ms) != interval_ms) {
    metrics_->SetHeartbeatInterval(absl::Milliseconds(interval_ms));
    LOG(INFO) << "heartbeat interval " << interval_ms << " ms for " << connected
              << " connected workers";
  }
  for (const std::string& id : lost)
    WorkerLost(
        id, absl::StrCat("worker ", id, " lost (silent for more than ",
                         absl::FormatDuration(options_.worker_timeout), ")"));
}

NodeView SchedulerCore::EmptyView(const std::string& id, const WorkerEntry& w,
                                  absl::Time now) {
  NodeView v;
  v.worker_id = id;
  v.region = w.info.region();
  v.labels.insert(w.info.labels().begin(), w.info.labels().end());
  v.devices.reserve(w.info.devices_size());
  for (const v1::Device& d : w.info.devices())
    v.devices.push_back({d.index(), d.gpu_type(), 1.0});
  v.cpu_total = v.cpu_free = w.info.cpu();
  v.memory_total = v.memory_free = w.info.memory_bytes();
  if (w.price)
    v.price_per_gpu_hour = pricing::PriceAt(*w.price, now).ToDouble();
  return v;
}

std::vector<NodeView> SchedulerCore::NodeViews() {
  // Once per pass over every worker: no map of views, each worker's own
  // allocations through worker_allocs_ (in worker id order, as workers_).
  const absl::Time now = absl::Now();
  std::vector<NodeView> out;
  out.reserve(workers_.size());
  for (const auto& [id, w] : workers_) {
    if (w.info.state() != v1::WORKER_STATE_UP &&
        w.info.state() != v1::WORKER_STATE_DRAINING)
      continue;
    NodeView& v = out.emplace_back(EmptyView(id, w, now));
    auto placed = worker_allocs_.find(id);
    const size_t nodes_here =
        placed == worker_allocs_.end() ? 0 : placed->second.size();
    v.schedulable =
        w.session != nullptr && w.info.state() == v1::WORKER_STATE_UP &&
        w.stop_reason.empty() &&
        nodes_here < static_cast<size_t>(options_.max_nodes_per_worker);
    if (placed == worker_allocs_.end()) continue;
    for (const AllocKey& key : placed->second) {
      auto it = allocs_.find(key);
      if (it == allocs_.end()) continue;
      const Alloc& a = it->second;
      for (int32_t d : a.devices)
        for (DeviceSlot& slot : v.devices)
          if (slot.index == d)
            slot.free_share = std::max(0.0, slot.free_share - a.share);
      v.cpu_free -= a.cpu;
      v.memory_free -= a.memory;
    }
  }
  return out;
}

void SchedulerCore::AddBootableViews(absl::Time now,
                                     std::vector<NodeView>* nodes) {
  for (const auto& [id, reason] : stopped_reasons_) {
    auto it = workers_.find(id);
    if (it == workers_.end() ||
        it->second.info.state() != v1::WORKER_STATE_OFFLINE)
      continue;
    NodeView& v = nodes->emplace_back(EmptyView(id, it->second, now));
    v.schedulable = false;
    v.bootable = true;
  }
}

JobRequest RequestOf(const v1::Job& job) {
  const v1::JobSpec& spec = job.spec();
  JobRequest r;
  r.job_id = job.id();
  r.priority = spec.priority();
  r.team = spec.team();
  r.submitted_at_ms = TimeUtil::TimestampToMilliseconds(job.created_at());
  r.gpus = spec.resources().gpus();
  r.nodes = std::max(1, spec.resources().nodes());
  r.gpu_types.assign(spec.resources().gpu_type().begin(),
                     spec.resources().gpu_type().end());
  r.cpu = spec.resources().cpu();
  r.memory = spec.resources().memory_bytes();
  r.labels.insert(spec.resources().labels().begin(),
                  spec.resources().labels().end());
  r.max_runtime_s = spec.max_runtime().seconds();
  return r;
}

std::set<int64_t> SchedulerCore::HeldByArrayLimit() {
  std::set<int64_t> held;
  // Room left per array with a %N limit: N minus its tasks that hold or
  // are about to hold resources (assigned, running, or still holding an
  // allocation while they end or requeue).
  std::map<int64_t, int> room;
  for (const auto& [id, j] : jobs_) {
    const v1::ArrayTask& array = j.job.spec().array();
    if (array.max_running() > 0)
      room.try_emplace(array.array_id(), array.max_running());
  }
  if (room.empty()) return held;
  std::set<int64_t> allocated;
  for (const auto& [key, a] : allocs_) allocated.insert(std::get<0>(key));
  for (const auto& [id, j] : jobs_) {
    auto r = room.find(j.job.spec().array().array_id());
    if (r == room.end()) continue;
    const v1::JobState s = j.job.state();
    if (allocated.count(id) || (!j.terminal && (s == v1::JOB_STATE_ASSIGNED ||
                                                s == v1::JOB_STATE_RUNNING)))
      --r->second;
  }
  // The pending tasks beyond the room wait, lowest job id (index) first.
  for (const auto& [id, j] : jobs_) {
    auto r = room.find(j.job.spec().array().array_id());
    if (r == room.end() || j.terminal ||
        j.job.state() != v1::JOB_STATE_PENDING || allocated.count(id))
      continue;
    if (r->second > 0) {
      --r->second;
    } else {
      held.insert(id);
    }
  }
  return held;
}

bool SchedulerCore::Startable(const ActiveJob& j) {
  return !j.terminal && j.job.state() == v1::JOB_STATE_PENDING &&
         j.pending_reason.empty() && j.waiting_reason.empty();
}

std::vector<JobRequest> SchedulerCore::PendingRequests() {
  std::vector<JobRequest> pending;
  const std::set<int64_t> held = HeldByArrayLimit();
  for (const auto& [id, j] : jobs_) {
    if (Startable(j) && !held.count(id)) pending.push_back(RequestOf(j.job));
  }
  return pending;
}

bool SchedulerCore::AnyPendingCouldFit(const FitBounds& bounds,
                                       absl::Time now) {
  JobRequest per_node;  // CouldFit reads GPUs, CPU and memory only
  const auto could_fit = [&](const ActiveJob& j) {
    if (!Startable(j)) return false;
    const v1::Resources& r = j.job.spec().resources();
    per_node.gpus = r.gpus();
    per_node.cpu = r.cpu();
    per_node.memory = r.memory_bytes();
    return bounds.CouldFit(per_node);
  };
  if (no_fit_.has_value() && now - no_fit_->at < absl::Seconds(1) &&
      bounds.Within(no_fit_->bounds)) {
    for (int64_t id : no_fit_->arrived) {
      auto it = jobs_.find(id);
      if (it != jobs_.end() && could_fit(it->second)) {
        no_fit_.reset();
        return true;
      }
    }
    no_fit_->bounds = bounds;
    no_fit_->arrived.clear();
    return false;
  }
  no_fit_.reset();
  for (const auto& [id, j] : jobs_) {
    if (could_fit(j)) return true;
  }
  no_fit_ = NoFit{now, bounds, {}};
  return false;
}

std::vector<RunningJob> SchedulerCore::RunningJobs() {
  std::map<int64_t, RunningJob> running;
  for (const auto& [key, a] : allocs_) {
    const int64_t job_id = std::get<0>(key);
    RunningJob& r = running[job_id];
    r.job_id = job_id;
    r.worker_ids.push_back(a.worker_id);
    // One device list fits only a single-node job; gangs release by count.
    if (r.worker_ids.size() == 1) {
      r.device_indexes.assign(a.devices.begin(), a.devices.end());
    } else {
      r.device_indexes.clear();
    }
    auto j = jobs_.find(job_id);
    if (j == jobs_.end()) continue;
    const v1::JobSpec& spec = j->second.job.spec();
    r.team = spec.team();
    r.gpus = spec.resources().gpus();
    r.cpu = spec.resources().cpu();
    r.memory = spec.resources().memory_bytes();
    if (spec.max_runtime().seconds() > 0)
      r.expected_end_ms = absl::ToUnixMillis(
          j->second.assigned_at + absl::Seconds(spec.max_runtime().seconds()));
  }
  std::vector<RunningJob> running_list;
  for (auto& [id, r] : running) running_list.push_back(std::move(r));
  return running_list;
}

void SchedulerCore::Schedule(absl::Time now) {
  // Nothing placement depends on changed: the last pass's answer stands.
  // Time alone changes it (reservations, backfill windows) once a second.
  if (!placement_dirty_ && now - last_pass_ < absl::Seconds(1)) return;
  placement_dirty_ = false;
  last_pass_ = now;
  // Skipped passes leave no stale reasons behind; WhyJob computes its own.
  last_pending_.clear();
  std::vector<NodeView> nodes = NodeViews();
  const FitBounds bounds = FitBounds::Of(nodes);
  if (!bounds.any_schedulable) {  // nothing can start; keep it cheap
    no_fit_.reset();              // and keep no list of arrivals while so
    return;
  }
  // A full fleet under a deep queue: no pending job fits even the best
  // node of each resource, so the pass would start nothing.
  if (!AnyPendingCouldFit(bounds, now)) return;
  std::vector<JobRequest> pending = PendingRequests();
  if (pending.empty()) return;
  PlacementOptions options;
  options.policy = options_.policy;
  options.now_ms = absl::ToUnixMillis(now);
  if (UsesRequestMix(options.policy)) options.request_mix = recent_mix_.Mix();
  if (options_.idle && options_.idle->scale_up.enabled &&
      std::any_of(pending.begin(), pending.end(), [&](const JobRequest& r) {
        return r.max_runtime_s >= options.long_job_runtime_s;
      })) {
    // A long job may wait for a worker the idle policy stopped; the views
    // of stopped workers are built only when one is pending.
    options.boot_time_s =
        absl::ToInt64Seconds(options_.idle->idle_shutdown.boot_time);
    AddBootableViews(now, &nodes);
  }
  PlacementPlan plan =
      PlaceJobs(std::move(nodes), pending, RunningJobs(), options);
  // The pass's bounds: at most max_starts_per_pass jobs, and no worker
  // past max_nodes_per_worker nodes. What is cut waits for the next pass,
  // which comes at once.
  std::map<std::string, size_t> nodes_on;
  std::vector<JobPlacement> start;
  for (JobPlacement& p : plan.placed) {
    if (static_cast<int>(start.size()) >= options_.max_starts_per_pass) {
      WakePlacement();
      break;
    }
    bool fits = true;
    for (const NodeAssignment& n : p.nodes) {
      auto [it, fresh] = nodes_on.try_emplace(n.worker_id, 0);
      if (fresh) {
        auto placed = worker_allocs_.find(n.worker_id);
        it->second = placed == worker_allocs_.end() ? 0 : placed->second.size();
      }
    }
    for (const NodeAssignment& n : p.nodes)
      fits &= nodes_on[n.worker_id] + 1 <=
              static_cast<size_t>(options_.max_nodes_per_worker);
    if (!fits) {
      WakePlacement();
      continue;
    }
    for (const NodeAssignment& n : p.nodes) ++nodes_on[n.worker_id];
    start.push_back(std::move(p));
  }
  AssignPlacements(start, now);
  last_pending_ = std::move(plan.pending);
}

int32_t SchedulerCore::PickMasterPort(const JobPlacement& placement,
                                      int32_t attempt, int32_t span) {
  std::set<std::string> workers;
  for (const NodeAssignment& n : placement.nodes) workers.insert(n.worker_id);
  std::vector<PortRange> used;
  for (const std::string& worker : workers) {
    if (auto taken = taken_ports_.find(worker); taken != taken_ports_.end())
      used.insert(used.end(), taken->second.begin(), taken->second.end());
    if (auto placed = worker_allocs_.find(worker);
        placed != worker_allocs_.end())
      for (const AllocKey& key : placed->second) {
        const Alloc& a = allocs_[key];
        used.push_back({a.master_port, a.port_span});
      }
  }
  const int count = options_.master_port_count;
  const int start = static_cast<int>(
      (placement.job_id * 131 + attempt * 7 + master_port_salt_) % count);
  if (std::optional<int32_t> port =
          PickPortBlock(used, span, options_.master_port_base, count, start))
    return *port;
  // Every block taken (thousands of jobs on one worker): share one rather
  // than refuse to run; the job's rendezvous may then fail and requeue.
  LOG(WARNING) << "no free block of " << span << " ports for job "
               << placement.job_id << " in " << options_.master_port_base << "+"
               << count;
  return options_.master_port_base + start;
}

std::vector<AllocationRecord> SchedulerCore::RecordsOf(
    const JobPlacement& placement, int32_t attempt, int32_t master_port,
    absl::Time now) {
  std::vector<AllocationRecord> records;
  for (const NodeAssignment& n : placement.nodes) {
    AllocationRecord r;
    r.job_id = placement.job_id;
    r.attempt = attempt;
    r.worker_id = n.worker_id;
    r.node_rank = n.node_rank;
    r.device_indexes.assign(n.device_indexes.begin(), n.device_indexes.end());
    r.gpu_share = n.share;
    r.master_port = master_port;
    const WorkerEntry& w = workers_[n.worker_id];
    r.region = w.info.region();
    r.gpu_type = w.gpu_type;
    r.gpus = n.share * static_cast<double>(n.device_indexes.size());
    r.started_at_ms = absl::ToUnixMillis(now);
    records.push_back(std::move(r));
  }
  return records;
}

void SchedulerCore::AssignPlacements(const std::vector<JobPlacement>& placed,
                                     absl::Time now) {
  for (const JobPlacement& p : placed) {
    auto it = jobs_.find(p.job_id);
    if (it == jobs_.end() || p.nodes.empty()) continue;
    const int64_t id = p.job_id;
    const int32_t attempt = it->second.job.attempt();
    // Taken until the batch commits: two jobs of one pass sharing a
    // worker get disjoint blocks.
    const int32_t span = JobPortSpan(it->second.job.spec());
    const int32_t port = PickMasterPort(p, attempt, span);
    for (const NodeAssignment& n : p.nodes)
      taken_ports_[n.worker_id].push_back({port, span});
    std::vector<AllocationRecord> records = RecordsOf(p, attempt, port, now);
    Write(
        absl::StrCat("the assignment of job ", id, " attempt ", attempt),
        [&](WriteBatch& b) {
          return b.AssignJob(id, attempt, std::move(records));
        },
        nullptr,
        [this, p, id, attempt, port, now](const absl::Status& s)
            ABSL_NO_THREAD_SAFETY_ANALYSIS {  // under mu_ (FlushWrites)
              auto j = jobs_.find(id);
              if (j == jobs_.end() || j->second.job.attempt() != attempt)
                return;
              if (!s.ok()) {
                // Unavailable: still PENDING here; the next pass retries.
                LOG(WARNING) << "assigning job " << id << " failed: " << s;
                if (absl::IsFailedPrecondition(s))
                  ReleaseStrandedAssignment(j->second);
                return;
              }
              StartPlacement(p, port, now);
            });
  }
  // The pass's one transaction, with mu_ released: submits and worker
  // messages go on meanwhile. Until it commits, its jobs are PENDING here
  // and ASSIGNED in flight; what could end or move them (CancelJob, a
  // worker's hello, disconnect or drain) waits for it (AwaitNoCommit).
  FlushWritesReleasingLock();
  taken_ports_.clear();
}

void SchedulerCore::StartPlacement(const JobPlacement& placement,
                                   int32_t master_port, absl::Time now) {
  auto it = jobs_.find(placement.job_id);
  if (it == jobs_.end() || placement.nodes.empty()) return;
  ActiveJob& job = it->second;
  const v1::JobSpec& spec = job.job.spec();
  const int32_t attempt = job.job.attempt();
  const std::string& master_worker = placement.nodes[0].worker_id;
  job.job.set_state(v1::JOB_STATE_ASSIGNED);
  job.assigned_at = now;
  metrics_->JobPlaced(job.job.id(), spec.team(), job.job.created_at(), now);
  job.nodes_succeeded = 0;
  job.job.clear_placements();
  const int nnodes = static_cast<int>(placement.nodes.size());
  // Validation refuses per-node train jobs, but rows stored before that
  // rule may carry one: RanksPerNode runs them per device, as the worker.
  const int ranks_per_node = RanksPerNode(spec);
  const std::string master_addr = workers_[master_worker].info.address();
  std::vector<std::string> node_addrs(placement.nodes.size());
  for (const NodeAssignment& n : placement.nodes) {
    const std::string& addr = workers_[n.worker_id].info.address();
    if (n.node_rank >= 0 && n.node_rank < nnodes)
      node_addrs[n.node_rank] = addr.empty() ? "127.0.0.1" : addr;
  }
  for (size_t i = 0; i < placement.nodes.size(); ++i) {
    const NodeAssignment& n = placement.nodes[i];
    Alloc a;
    a.worker_id = n.worker_id;
    a.devices.assign(n.device_indexes.begin(), n.device_indexes.end());
    a.share = n.share;
    a.cpu = spec.resources().cpu();
    a.memory = spec.resources().memory_bytes();
    a.master_port = master_port;
    a.port_span = JobPortSpan(spec);
    a.started = absl::FromUnixMillis(absl::ToUnixMillis(now));  // as stored
    a.gpus = n.share * static_cast<double>(n.device_indexes.size());
    a.region = workers_[n.worker_id].info.region();
    a.gpu_type = workers_[n.worker_id].gpu_type;
    a.price = workers_[n.worker_id].price;
    a.team = spec.team();
    AddAlloc({job.job.id(), attempt, n.node_rank}, std::move(a));
    v1::Placement* p = job.job.add_placements();
    p->set_worker_id(n.worker_id);
    p->set_node_rank(n.node_rank);
    for (int d : n.device_indexes) p->add_device_indexes(d);

    v1::SchedulerMessage msg;
    v1::Assign* assign = msg.mutable_assign();
    assign->set_job_id(job.job.id());
    assign->set_attempt(attempt);
    *assign->mutable_spec() = spec;
    assign->set_node_rank(n.node_rank);
    assign->set_nnodes(nnodes);
    for (int d : n.device_indexes) assign->add_device_indexes(d);
    assign->set_master_addr(master_addr.empty() ? "127.0.0.1" : master_addr);
    assign->set_master_port(master_port);
    assign->set_world_size(nnodes * ranks_per_node);
    assign->set_first_rank(static_cast<int>(i) * ranks_per_node);
    for (const std::string& addr : node_addrs) assign->add_node_addrs(addr);
    assign->set_job_created_at_ms(
        TimeUtil::TimestampToMilliseconds(job.job.created_at()));
    Send(n.worker_id, std::move(msg));
  }
  LOG(INFO) << "job " << job.job.id() << " attempt " << attempt
            << " assigned to " << nnodes << " node(s), master " << master_worker
            << ":" << master_port;
  Touch(job.job.id());
  Changed();
}

void SchedulerCore::Send(const std::string& worker_id,
                         v1::SchedulerMessage message) {
  auto it = workers_.find(worker_id);
  if (it != workers_.end() && it->second.session)
    it->second.session->Push(std::move(message));
}

void SchedulerCore::CancelAttemptNodes(int64_t job_id, int32_t attempt,
                                       const std::string& reason) {
  for (auto it = allocs_.lower_bound({job_id, attempt, 0});
       it != allocs_.end() && std::get<0>(it->first) == job_id &&
       std::get<1>(it->first) == attempt;
       ++it) {
    v1::SchedulerMessage msg;
    msg.mutable_cancel()->set_job_id(job_id);
    msg.mutable_cancel()->set_attempt(attempt);
    msg.mutable_cancel()->set_reason(reason);
    Send(it->second.worker_id, std::move(msg));
  }
}

void SchedulerCore::Defer(std::string what,
                          std::function<absl::Status()> write) {
  LOG(WARNING) << "database unavailable: " << what << " will be recorded when "
               << "it returns";
  deferred_.push_back({std::move(what), std::move(write)});
}

void SchedulerCore::RetryDeferred(absl::Time now) {
  if (deferred_.empty() || now < deferred_retry_at_) return;
  while (!deferred_.empty()) {
    absl::Status s = deferred_.front().write();
    if (absl::IsUnavailable(s)) {  // still down: keep the order, back off
      deferred_retry_at_ = now + absl::Seconds(1);
      return;
    }
    // Anything else (e.g. a commit in doubt that did land) is final.
    if (s.ok()) {
      LOG(INFO) << "recorded " << deferred_.front().what;
    } else {
      LOG(WARNING) << "dropping deferred " << deferred_.front().what << ": "
                   << s;
    }
    deferred_.pop_front();
  }
}

void SchedulerCore::FinishJob(ActiveJob& job, v1::JobState state,
                              int32_t exit_code, const std::string& message) {
  const int64_t id = job.job.id();
  const int32_t attempt = job.job.attempt();
  auto write = [store = job_store_, id, attempt, state, exit_code, message] {
    return store->FinishJob(id, attempt, state, exit_code, message,
                            /*close_allocations=*/false);
  };
  Write(
      absl::StrCat("the end of job ", id, " attempt ", attempt),
      [&](WriteBatch& b) {
        return b.FinishJob(id, attempt, state, exit_code, message);
      },
      write,
      [id](const absl::Status& s) {
        if (!s.ok())
          LOG(ERROR) << "recording the end of job " << id << ": " << s;
      });
  job.terminal = true;
  // In milliseconds, as PostgreSQL's copy is read back.
  *job.job.mutable_finished_at() =
      TimeUtil::MillisecondsToTimestamp(absl::ToUnixMillis(absl::Now()));
  Touch(id);
  job.job.set_state(state);
  job.job.set_exit_code(exit_code);
  job.job.set_message(message);
  metrics_->JobFinished(id, job.job.spec().team(), state);
  LOG(INFO) << "job " << id << " attempt " << attempt << " -> "
            << StateName(state) << (message.empty() ? "" : ": ") << message;
  CancelAttemptNodes(id, attempt, message.empty() ? StateName(state) : message);
  Changed();
  ForgetIfDone(id);
}

void SchedulerCore::RequeueOrFail(ActiveJob& job, const std::string& reason) {
  const int64_t id = job.job.id();
  const int32_t attempt = job.job.attempt();
  // This attempt's requeue is already on its way to PostgreSQL: a second
  // one would move the job on under the first, which would then be dropped
  // and leave the new attempt fenced off as not current.
  if (job.requeue_deferred) return;
  if (attempt > job.job.spec().retries()) {
    FinishJob(job, v1::JOB_STATE_FAILED, -1,
              absl::StrCat(reason, "; no retries left"));
    return;
  }
  CancelAttemptNodes(id, attempt, reason);
  auto next = job_store_->RequeueJob(id, attempt, reason);
  if (absl::IsUnavailable(next.status())) {
    // The job waits, out of placement, until the new attempt is recorded;
    // meanwhile the exits of the cancelled nodes decide nothing.
    job.requeue_deferred = true;
    Defer(absl::StrCat("the requeue of job ", id, " attempt ", attempt),
          [this, id, attempt, reason]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
            // Runs from RetryDeferred, under mu_.
            auto later = job_store_->RequeueJob(id, attempt, reason);
            if (absl::IsUnavailable(later.status())) return later.status();
            auto j = jobs_.find(id);
            if (j == jobs_.end() || j->second.job.attempt() != attempt)
              return later.status();
            ActiveJob& job = j->second;
            job.requeue_deferred = false;
            if (job.terminal && later.ok()) {
              // Ended meanwhile (cancelled, say): that end was written for
              // the old attempt and refused; write it for the new one.
              return job_store_->FinishJob(id, *later, job.job.state(),
                                           job.job.exit_code(),
                                           job.job.message(),
                                           /*close_allocations=*/false);
            }
            if (!job.terminal) RecordRequeue(job, later, reason);
            return absl::OkStatus();
          });
    return;
  }
  RecordRequeue(job, next, reason);
}

void SchedulerCore::RecordRequeue(ActiveJob& job,
                                  const absl::StatusOr<int32_t>& next,
                                  const std::string& reason) {
  if (next.ok()) {
    MarkRequeued(job, *next, reason);
    return;
  }
  // The usual cause: an earlier RequeueJob committed but its answer was
  // lost, so the attempt fence now refuses it. PostgreSQL has the truth.
  absl::StatusOr<v1::Job> stored = job_store_->GetJob(job.job.id());
  if (stored.ok() && stored->attempt() > job.job.attempt() &&
      stored->state() == v1::JOB_STATE_PENDING) {
    MarkRequeued(job, stored->attempt(), reason);
    return;
  }
  LOG(ERROR) << "requeueing job " << job.job.id() << ": " << next.status();
}

void SchedulerCore::MarkRequeued(ActiveJob& job, int32_t next,
                                 const std::string& reason) {
  const int64_t id = job.job.id();
  // The old attempt's remaining nodes stay in allocs_ (holding their
  // devices) until their workers report them gone or are lost.
  job.job.set_attempt(next);
  job.job.set_state(v1::JOB_STATE_PENDING);
  metrics_->JobRequeued(id, job.job.spec().team(), absl::Now());
  job.job.set_message(reason);
  job.job.clear_placements();
  job.nodes_succeeded = 0;
  job.requeue_deferred = false;
  LOG(INFO) << "job " << id << " requeued as attempt " << next << ": "
            << reason;
  Touch(id);
  WakePlacement();
  Changed();
}

void SchedulerCore::ReleaseStrandedAssignment(ActiveJob& job) {
  // An earlier AssignJob of this attempt committed although it reported a
  // failure (a commit in doubt): PostgreSQL has the job ASSIGNED, with open
  // allocations that no worker was ever told about. Refused (not ASSIGNED
  // there), or the database down: nothing to do, or the next pass retries.
  const std::string reason =
      "an assignment whose commit was in doubt was never started";
  auto next = job_store_->RequeueUnstartedAssignment(job.job.id(),
                                                     job.job.attempt(), reason);
  if (next.ok()) MarkRequeued(job, *next, reason);
}

void SchedulerCore::AddJob(ActiveJob active) {
  const int64_t id = active.job.id();
  recent_mix_.Add(RequestOf(active.job));
  if (active.job.spec().start_window() == "off-peak") off_peak_jobs_.insert(id);
  jobs_.insert_or_assign(id, std::move(active));
  if (no_fit_.has_value()) no_fit_->arrived.push_back(id);
  Touch(id);
}

void SchedulerCore::ForgetIfDone(int64_t job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || !it->second.terminal) return;
  auto a = allocs_.lower_bound({job_id, 0, 0});
  if (a != allocs_.end() && std::get<0>(a->first) == job_id) return;
  auto last =
      std::const_pointer_cast<ReadView::JobEntry>(ReadEntryOf(it->second));
  last->final = true;
  forgotten_.push_back(std::move(last));
  dirty_jobs_.erase(job_id);
  jobs_.erase(it);
}

void SchedulerCore::SetWorkerInfo(WorkerEntry& entry, v1::Worker info) {
  absl::MutexLock lock(&shapes_mu_);
  if (entry.shape) fleet_shapes_.Remove(*entry.shape);
  entry.shape = WorkerShape::Of(info);
  fleet_shapes_.Add(*entry.shape);
  entry.info = std::move(info);
}

absl::StatusOr<std::string> SchedulerCore::Admit(
    v1::JobSpec& spec, const std::string& idempotency_key) {
  ApplyJobSpecDefaults(spec);
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  if (idempotency_key.size() > 200)
    return absl::InvalidArgumentError("idempotency_key: longer than 200 bytes");
  std::string held;  // non-empty: admitted but held (BUDGET)
  const absl::Time now = absl::Now();
  absl::StatusOr<std::optional<pricing::Money>> spend =
      StoredTeamSpend(spec.team(), now);
  absl::Status admitted = spend.status();
  if (admitted.ok()) admitted = CouldEverFit(spec);
  // Only a cost cap or a team budget needs the loop's state (prices of the
  // workers, what runs): other submits take no mu_. They run on gRPC's few
  // callback threads, and one waiting for mu_ through a placement pass
  // stalls every stream and read those threads serve.
  if (admitted.ok() && BudgetApplies(spec)) {
    absl::MutexLock lock(&mu_);
    admitted = CheckBudget(spec, now, *spend, &held);
  }
  if (admitted.ok()) return held;
  if (idempotency_key.empty()) return admitted;
  // A retry of a submission that is already stored (its first answer was
  // lost) is answered with that job, although the fleet or the team's
  // spend may have changed since: refusing it would tell the client that a
  // stored job was not accepted. The lookup runs on refusals only.
  absl::StatusOr<bool> stored =
      job_store_->HasIdempotencyKey(spec.user(), idempotency_key);
  if (stored.ok() && *stored) return std::string();
  return admitted;
}

void SchedulerCore::Submit(v1::JobSpec spec, std::string idempotency_key,
                           SubmitBatcher::Done done) {
  absl::StatusOr<std::string> held = Admit(spec, idempotency_key);
  if (!held.ok()) return done(held.status());
  submits_.SubmitAsync(std::move(spec), std::move(idempotency_key),
                       [this, held = *std::move(held), done = std::move(done)](
                           absl::StatusOr<SubmitResult> result) {
                         if (result.ok())
                           AddSubmitted(result->job, held, result->created);
                         done(std::move(result));
                       });
}

absl::StatusOr<ArraySubmitResult> SchedulerCore::SubmitArray(
    std::vector<v1::JobSpec> tasks, const ArrayIndexes& array,
    const std::string& expression, const std::string& idempotency_key) {
  std::vector<std::string> held(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    absl::StatusOr<std::string> admitted = Admit(tasks[i], idempotency_key);
    if (!admitted.ok())
      return absl::Status(admitted.status().code(),
                          absl::StrCat("array task ", array.indexes[i], ": ",
                                       admitted.status().message()));
    held[i] = *std::move(admitted);
  }
  ASSIGN_OR_RETURN(ArraySubmitResult result,
                   job_store_->SubmitArray(std::move(tasks), array, expression,
                                           idempotency_key));
  for (size_t i = 0; i < result.tasks.size(); ++i)
    AddSubmitted(result.tasks[i].job, held[i], result.tasks[i].created);
  return result;
}

int SchedulerCore::CancelArray(int64_t array_id, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  AwaitNoCommit();
  TakeArrivals();
  // FinishJob may drop a job from jobs_: collect first.
  std::vector<int64_t> ids;
  for (const auto& [id, job] : jobs_)
    if (!job.terminal && job.job.spec().array().array_id() == array_id)
      ids.push_back(id);
  for (int64_t id : ids) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second.terminal) continue;
    FinishJob(it->second, v1::JOB_STATE_CANCELLED, 0,
              reason.empty() ? "array cancelled by user" : reason);
  }
  return static_cast<int>(ids.size());
}

void SchedulerCore::AddSubmitted(const v1::Job& job, const std::string& held,
                                 bool created) {
  if (!created && job.state() != v1::JOB_STATE_PENDING) return;
  // Built before taking mu_: submits arrive by the thousand per second.
  ActiveJob active;
  active.job = job;
  active.pending_reason = held;
  active.budget_checked = absl::Now();
  if (created) {
    // Its committed state, published before the loop can see the job (so
    // no later state of it is ever replaced by this one): a GetJob right
    // after the ack is answered by the view, not by PostgreSQL, which the
    // loop's next commit round could keep it waiting for.
    reads_.PutJobs({ReadEntryWithoutAllocs(active)});
    {
      absl::MutexLock lock(&arrivals_mu_);
      arrivals_.push_back(std::move(active));
      has_arrivals_.store(true);
    }
    // The loop's wait re-checks has_arrivals_ whenever mu_ is released:
    // poke it only when no one holds mu_ (then no release is coming).
    if (mu_.TryLock()) mu_.Unlock();
  } else {
    absl::MutexLock lock(&mu_);
    TakeArrivals();
    if (jobs_.count(job.id())) return;
    LOG(INFO) << "job " << job.id()
              << " was committed in doubt; adding it on its retry";
    AddJob(std::move(active));
    WakePlacement();
    Changed();
  }
  metrics_->JobSubmitted(job.spec());
}

void SchedulerCore::TakeArrivals() {
  if (!has_arrivals_.load()) return;
  std::vector<ActiveJob> arrived;
  {
    absl::MutexLock lock(&arrivals_mu_);
    arrived.swap(arrivals_);
    has_arrivals_.store(false);
  }
  for (ActiveJob& active : arrived) AddJob(std::move(active));
  if (arrived.empty()) return;
  WakePlacement();
  Changed();
}

absl::StatusOr<v1::Job> SchedulerCore::CancelJob(int64_t id,
                                                 const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    AwaitNoCommit();
    TakeArrivals();
    auto it = jobs_.find(id);
    if (it != jobs_.end() && !it->second.terminal) {
      FinishJob(it->second, v1::JOB_STATE_CANCELLED, 0,
                reason.empty() ? "cancelled by user" : reason);
    } else if (it != jobs_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("job ", id, " already ended (",
                       StateName(it->second.job.state()), ")"));
    } else {
      ASSIGN_OR_RETURN(v1::Job job, job_store_->GetJob(id));
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", id, " already ended (", StateName(job.state()), ")"));
    }
  }
  return GetJob(id);
}

uint64_t SchedulerCore::WaitForChange(uint64_t seen, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return version_ != seen || stopping_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  return version_;
}

}  // namespace tupa::scheduler

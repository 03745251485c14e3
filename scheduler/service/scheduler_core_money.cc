// SchedulerCore: prices, usage and budgets (issue 4). Every allocation is
// priced from its worker's catalog entry when it ends; worker uptime is
// priced the same way so that idle cost (paid, unallocated GPU time) is
// known; budgets are checked at admission and while jobs run.
#include <glog/logging.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/job_spec.h"
#include "common/quantity.h"
#include "common/status_macros.h"
#include "scheduler/pricing/usage_window.h"
#include "scheduler/service/scheduler_core.h"

namespace tupa::scheduler {

using google::protobuf::util::TimeUtil;
using pricing::Money;

std::optional<pricing::PriceEntry> SchedulerCore::PriceFor(
    const std::string& region, const std::string& gpu_type,
    const std::string& offering) {
  if (!options_.pricing) return std::nullopt;
  auto entry = options_.pricing->Lookup(region, gpu_type, offering);
  if (!entry.ok()) return std::nullopt;
  return *entry;
}

Money SchedulerCore::CostOf(const Alloc& alloc, absl::Time end) {
  if (!alloc.price) return Money();
  auto cost = pricing::Cost(*alloc.price, alloc.gpus, alloc.started,
                            std::max(end, alloc.started));
  if (!cost.ok()) {
    LOG(WARNING) << "pricing an allocation: " << cost.status();
    return Money();
  }
  return *cost;
}

Money SchedulerCore::UptimeCost(const WorkerEntry& worker, absl::Time end) {
  if (!worker.price) return Money();
  Alloc whole;  // all of the worker's devices since up_since, priced as a job
  whole.price = worker.price;
  whole.gpus = worker.info.devices_size();
  whole.started = worker.up_since;
  return CostOf(whole, end);
}

void SchedulerCore::AccrueIdleCost(absl::Time now) {
  const absl::Time from = idle_accrued_until_;
  idle_accrued_until_ = now;
  if (!options_.pricing || from == absl::InfinitePast()) return;
  std::map<std::string, double> allocated;
  for (const auto& [key, a] : allocs_)
    allocated[a.worker_id] += a.share * static_cast<double>(a.devices.size());
  for (const auto& [id, w] : workers_) {
    const v1::WorkerState state = w.info.state();
    if (!w.price || w.uptime_id == 0 ||
        (state != v1::WORKER_STATE_UP && state != v1::WORKER_STATE_DRAINING))
      continue;
    const double idle = w.info.devices_size() - allocated[id];
    const absl::Time start = std::max(from, w.up_since);
    if (idle <= 0 || start >= now) continue;
    auto cost = pricing::Cost(*w.price, idle, start, now);
    if (cost.ok())
      metrics_->AddIdleCost(w.gpu_type, options_.pricing->currency(),
                            cost->ToDouble());
  }
  // Workers the idle policy stopped save what they would cost up.
  for (const auto& [id, reason] : stopped_reasons_) {
    auto w = workers_.find(id);
    if (w == workers_.end() || !w->second.price ||
        w->second.info.state() != v1::WORKER_STATE_OFFLINE)
      continue;
    auto saved = pricing::Cost(*w->second.price, w->second.info.devices_size(),
                               from, now);
    if (saved.ok())
      metrics_->AddIdleShutdownSaved(
          w->second.gpu_type, options_.pricing->currency(), saved->ToDouble());
  }
}

void SchedulerCore::CountCost(int64_t job_id, const Alloc& alloc,
                              Money amount) {
  if (amount <= Money()) return;
  auto j = jobs_.find(job_id);
  metrics_->AddCost(j != jobs_.end() ? j->second.job.spec().team() : "",
                    j != jobs_.end() ? j->second.job.spec().user() : "",
                    alloc.gpu_type, options_.pricing->currency(),
                    amount.ToDouble());
}

void SchedulerCore::AccrueRunningCost(absl::Time now) {
  if (!options_.pricing) return;
  for (auto& [key, a] : allocs_) {
    if (!a.price) continue;
    auto w = workers_.find(a.worker_id);
    const absl::Time until =
        w == workers_.end() ? a.started : std::min(now, w->second.last_seen);
    if (until <= a.started) continue;
    const Money so_far = CostOf(a, until);
    if (so_far <= a.accrued) continue;
    CountCost(std::get<0>(key), a, so_far - a.accrued);
    a.accrued = so_far;
  }
}

void SchedulerCore::CloseAlloc(const AllocKey& key, const Alloc& alloc,
                               absl::Time end, std::optional<int32_t> exit_code,
                               std::function<void()> recorded) {
  const auto [job_id, attempt, node] = key;
  std::optional<Money> cost;
  std::string currency;
  if (alloc.price) {
    Money m = CostOf(alloc, end);
    cost = m;
    currency = options_.pricing->currency();
    auto j = jobs_.find(job_id);
    if (j != jobs_.end()) j->second.closed_cost += m;
    // The counter has what AccrueRunningCost counted while it ran.
    if (m < alloc.accrued)
      LOG(WARNING) << "job " << job_id << " attempt " << attempt << " node "
                   << node << ": tupa_cost_accrued_total counted "
                   << alloc.accrued << ", more than its recorded cost " << m;
    CountCost(job_id, alloc, m - alloc.accrued);
  }
  auto write = [store = usage_store_, job_id = job_id, attempt = attempt,
                node = node, end_ms = absl::ToUnixMillis(end), cost, currency,
                exit_code] {
    return store->CloseAllocation(job_id, attempt, node, end_ms, cost, currency,
                                  exit_code);
  };
  if (auto j = jobs_.find(job_id); j != jobs_.end()) {
    j->second.closed_gpu_seconds +=
        alloc.gpus *
        absl::ToDoubleSeconds(std::max(end, alloc.started) - alloc.started);
    Touch(job_id);
  }
  Write(
      absl::StrCat("the allocation of job ", job_id, " attempt ", attempt,
                   " node ", node),
      [&](WriteBatch& b) {
        return b.CloseAllocation(job_id, attempt, node, absl::ToUnixMillis(end),
                                 cost, currency, exit_code);
      },
      write,
      [recorded, job_id = job_id, attempt = attempt,
       node = node](const absl::Status& s) {
        if (!s.ok())
          LOG(ERROR) << "closing allocation of job " << job_id << " attempt "
                     << attempt << " node " << node << ": " << s;
        if (recorded) recorded();
      });
}

void SchedulerCore::OpenUptime(WorkerEntry& worker, absl::Time now) {
  if (worker.uptime_id != 0) return;  // still open (reconnected in time)
  UptimeRecord u;
  u.worker_id = worker.info.id();
  u.region = worker.info.region();
  u.gpu_type = worker.gpu_type;
  u.offering = worker.info.offering();
  u.gpus = worker.info.devices_size();
  u.started_at_ms = absl::ToUnixMillis(now);
  auto id = usage_store_->OpenUptime(u);
  if (!id.ok()) {
    LOG(WARNING) << "recording uptime of " << u.worker_id << ": "
                 << id.status();
    return;
  }
  worker.uptime_id = *id;
  worker.up_since = now;
}

void SchedulerCore::CloseUptime(WorkerEntry& worker, absl::Time end) {
  if (worker.uptime_id == 0) return;
  std::optional<Money> cost;
  std::string currency;
  if (worker.price) {
    cost = UptimeCost(worker, end);
    currency = options_.pricing->currency();
  }
  auto write = [store = usage_store_, id = worker.uptime_id,
                end_ms = absl::ToUnixMillis(end), cost, currency] {
    return store->CloseUptime(id, end_ms, cost, currency);
  };
  if (absl::IsUnavailable(write()))
    Defer(absl::StrCat("the uptime of worker ", worker.info.id()), write);
  worker.uptime_id = 0;
}

std::optional<Money> SchedulerCore::EstimateCost(const v1::JobSpec& spec,
                                                 absl::Time now) {
  if (!options_.pricing || spec.max_runtime().seconds() <= 0)
    return std::nullopt;
  const auto& types = spec.resources().gpu_type();
  auto cheapest = [&](bool live_only) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::optional<Money> best;
    for (const auto& [id, w] : workers_) {
      const v1::WorkerState state = w.info.state();
      const bool live =
          state == v1::WORKER_STATE_UP || state == v1::WORKER_STATE_DRAINING;
      if (!w.price || (live_only && !live)) continue;
      if (!types.empty() &&
          std::find(types.begin(), types.end(), w.gpu_type) == types.end())
        continue;
      auto cost =
          pricing::Estimate(*w.price, TotalGpus(spec), now,
                            absl::Seconds(spec.max_runtime().seconds()));
      if (cost.ok() && (!best || *cost < *best)) best = *cost;
    }
    return best;
  };
  std::optional<Money> best = cheapest(/*live_only=*/true);
  return best ? best : cheapest(/*live_only=*/false);
}

absl::StatusOr<std::optional<Money>> SchedulerCore::StoredTeamSpend(
    const std::string& team, absl::Time now) {
  if (!options_.pricing || !options_.pricing->MonthlyBudget(team))
    return std::optional<Money>();
  const pricing::BudgetMonth month = pricing::MonthContaining(now);
  ASSIGN_OR_RETURN(Money spent, usage_store_->TeamSpend(
                                    team, absl::ToUnixMillis(month.start)));
  return std::optional<Money>(spent);
}

bool SchedulerCore::BudgetApplies(const v1::JobSpec& spec) const {
  return options_.pricing &&
         (!spec.max_cost().empty() ||
          options_.pricing->MonthlyBudget(spec.team()).has_value());
}

absl::Status SchedulerCore::CheckBudget(
    const v1::JobSpec& spec, absl::Time now,
    const std::optional<Money>& stored_spend, std::string* held) {
  held->clear();
  if (!options_.pricing) return absl::OkStatus();
  pricing::BudgetRequest request;
  request.team = spec.team();
  request.currency = options_.pricing->currency();
  if (!spec.max_cost().empty()) {
    ASSIGN_OR_RETURN(request.max_cost, Money::FromString(spec.max_cost()));
  }
  request.monthly_budget = options_.pricing->MonthlyBudget(spec.team());
  if (!request.max_cost && !request.monthly_budget) return absl::OkStatus();
  std::optional<Money> estimate = EstimateCost(spec, now);
  if (!estimate) {
    if (request.max_cost && spec.max_runtime().seconds() <= 0)
      return absl::InvalidArgumentError(
          "max_runtime: required with max_cost (the estimate needs it)");
    return absl::OkStatus();  // no eligible priced worker yet: nothing to judge
  }
  request.estimated_cost = *estimate;
  if (request.monthly_budget) {
    request.spent_this_month =
        stored_spend.value_or(Money()) +
        RunningTeamCost(spec.team(), pricing::MonthContaining(now).start, now);
  }
  request.action = options_.pricing->budget_action();
  pricing::BudgetDecision d = pricing::DecideBudget(request);
  switch (d.verdict) {
    case pricing::BudgetDecision::Verdict::kAdmit:
      return absl::OkStatus();
    case pricing::BudgetDecision::Verdict::kHold:
      *held = absl::StrCat(d.reason, ": ", d.message);
      return absl::OkStatus();
    case pricing::BudgetDecision::Verdict::kReject:
      return absl::FailedPreconditionError(
          absl::StrCat(d.reason, ": ", d.message));
  }
  return absl::OkStatus();
}

Money SchedulerCore::AccruedCost(int64_t job_id, absl::Time now) {
  Money total;
  auto j = jobs_.find(job_id);
  if (j != jobs_.end()) total = j->second.closed_cost;
  for (auto it = allocs_.lower_bound({job_id, 0, 0});
       it != allocs_.end() && std::get<0>(it->first) == job_id; ++it)
    total += CostOf(it->second, now);
  return total;
}

Money SchedulerCore::RunningTeamCost(const std::string& team, absl::Time since,
                                     absl::Time now) {
  Money total;
  auto keys = team_allocs_.find(team);
  if (keys == team_allocs_.end()) return total;
  for (const AllocKey& key : keys->second) {
    const Alloc& alloc = allocs_.at(key);
    if (alloc.started < since) continue;  // as TeamSpend: by start time
    total += CostOf(alloc, now);
  }
  return total;
}

void SchedulerCore::AddAlloc(const AllocKey& key, Alloc alloc) {
  team_allocs_[alloc.team].insert(key);
  worker_allocs_[alloc.worker_id].insert(key);
  Touch(std::get<0>(key));
  allocs_[key] = std::move(alloc);
}

void SchedulerCore::EraseAlloc(const AllocKey& key) {
  auto it = allocs_.find(key);
  if (it == allocs_.end()) return;
  auto keys = team_allocs_.find(it->second.team);
  if (keys != team_allocs_.end()) {
    keys->second.erase(key);
    if (keys->second.empty()) team_allocs_.erase(keys);
  }
  auto placed = worker_allocs_.find(it->second.worker_id);
  if (placed != worker_allocs_.end()) {
    placed->second.erase(key);
    if (placed->second.empty()) worker_allocs_.erase(placed);
  }
  Touch(std::get<0>(key));
  placement_dirty_ = true;  // its devices are free
  allocs_.erase(it);
}

void SchedulerCore::EnforceBudgets(absl::Time now) {
  if (!options_.pricing) return;
  std::vector<int64_t> over;
  // One read of a team's stored spend per call, however many of its jobs
  // are held: this runs under mu_.
  std::map<std::string, absl::StatusOr<std::optional<Money>>> spend;
  for (auto& [id, job] : jobs_) {
    if (job.terminal) continue;
    const v1::JobSpec& spec = job.job.spec();
    if (!job.pending_reason.empty() &&
        now - job.budget_checked > absl::Minutes(1)) {
      job.budget_checked = now;
      auto team = spend.find(spec.team());
      if (team == spend.end())
        team =
            spend.emplace(spec.team(), StoredTeamSpend(spec.team(), now)).first;
      if (!team->second.ok()) continue;  // database down: next minute
      std::string held;
      absl::Status s = CheckBudget(spec, now, *team->second, &held);
      if (s.ok() && held.empty()) {
        job.pending_reason.clear();
        WakePlacement();
        Touch(id);
        Changed();
      }
      continue;
    }
    if (spec.max_cost().empty() || job.job.state() == v1::JOB_STATE_PENDING)
      continue;
    auto cap = Money::FromString(spec.max_cost());
    if (cap.ok() && AccruedCost(id, now) >= *cap) over.push_back(id);
  }
  for (int64_t id : over) {
    ActiveJob& job = jobs_[id];
    FinishJob(job, v1::JOB_STATE_FAILED, 0,
              absl::StrCat("max_cost reached (", job.job.spec().max_cost(), " ",
                           options_.pricing->currency(), ")"));
  }
}

void SchedulerCore::UpdateOffPeakWaits(absl::Time now) {
  for (auto it = off_peak_jobs_.begin(); it != off_peak_jobs_.end();) {
    auto found = jobs_.find(*it);
    if (found == jobs_.end() || found->second.terminal) {
      if (found != jobs_.end()) found->second.waiting_reason.clear();
      it = off_peak_jobs_.erase(it);
      continue;
    }
    ++it;
    ActiveJob& job = found->second;
    const v1::JobSpec& spec = job.job.spec();
    if (job.job.state() != v1::JOB_STATE_PENDING) {
      job.waiting_reason.clear();
      continue;
    }
    std::string reason;
    absl::Time next = absl::InfiniteFuture();
    bool eligible = false, discounted = false;
    const auto& types = spec.resources().gpu_type();
    for (const auto& [wid, w] : workers_) {
      if (!options_.pricing || !w.price || w.session == nullptr ||
          w.info.state() != v1::WORKER_STATE_UP || !w.stop_reason.empty())
        continue;
      if (!types.empty() &&
          std::find(types.begin(), types.end(), w.gpu_type) == types.end())
        continue;
      eligible = true;
      if (pricing::PriceAt(*w.price, now) < w.price->per_gpu_hour) {
        discounted = true;
        break;
      }
      next = std::min(next, pricing::NextPriceChange(*w.price, now));
    }
    // Nothing priced to wait for, or a discount now: placement decides.
    if (eligible && !discounted && next != absl::InfiniteFuture()) {
      bool must_start = false;
      if (spec.has_deadline()) {
        const absl::Time latest_start =
            absl::FromUnixSeconds(spec.deadline().seconds()) -
            absl::Seconds(spec.max_runtime().seconds());
        must_start = next > latest_start;
      }
      if (!must_start)
        reason = absl::StrCat(
            "WAITING_OFF_PEAK: start_window off-peak; the next discounted "
            "window starts ",
            absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", next, absl::UTCTimeZone()),
            spec.has_deadline() ? " (still meets the deadline)" : "");
    }
    if (reason != job.waiting_reason) {
      job.waiting_reason = reason;
      job.waiting_until = reason.empty() ? absl::InfiniteFuture() : next;
      if (reason.empty()) WakePlacement();
      Touch(found->first);
      Changed();
    }
  }
}

absl::StatusOr<v1::CostReport> SchedulerCore::CostReport(
    const v1::CostReportRequest& req) {
  const absl::Time now = absl::Now();
  const absl::Time until =
      req.has_until()
          ? absl::FromUnixMillis(TimeUtil::TimestampToMilliseconds(req.until()))
          : now;
  const absl::Time since =
      req.has_since()
          ? absl::FromUnixMillis(TimeUtil::TimestampToMilliseconds(req.since()))
          : until - absl::Hours(24 * 7);
  if (since > until)
    return absl::InvalidArgumentError("since: must be before until");
  const std::string group_by = req.group_by().empty() ? "team" : req.group_by();
  const bool by_day = group_by == "day";
  const int64_t since_ms = absl::ToUnixMillis(since);
  const int64_t until_ms = absl::ToUnixMillis(until);
  ASSIGN_OR_RETURN(std::vector<CostGroup> closed,
                   usage_store_->CostByGroup(group_by, since_ms, until_ms));
  ASSIGN_OR_RETURN(
      std::vector<UsageRow> crossing,
      usage_store_->CrossingAllocations(group_by, since_ms, until_ms));
  ASSIGN_OR_RETURN(CostGroup uptime,
                   usage_store_->UptimeTotals(since_ms, until_ms));
  ASSIGN_OR_RETURN(std::vector<UsageRow> crossing_uptime,
                   usage_store_->CrossingUptime(since_ms, until_ms));
  ASSIGN_OR_RETURN(Money saved,
                   usage_store_->IdleShutdownSavings(
                       since_ms, absl::ToUnixMillis(std::min(until, now))));
  std::map<std::string, std::pair<double, Money>> groups;
  for (const CostGroup& g : closed) groups[g.key] = {g.gpu_seconds, g.cost};
  Money uptime_cost = uptime.cost;
  double uptime_seconds = uptime.gpu_seconds;
  // Spans that the window cuts count their part inside it (by day, each
  // day its part).
  auto span_of = [&](const UsageRow& row) {
    pricing::UsageSpan span;
    span.start = absl::FromUnixMillis(row.started_ms);
    span.end = absl::FromUnixMillis(row.ended_ms);
    span.gpus = row.gpus;
    span.billed = row.cost;
    span.price = PriceFor(row.region, row.gpu_type, row.offering);
    return span;
  };
  for (const UsageRow& row : crossing) {
    for (const pricing::UsagePiece& piece :
         pricing::ClipUsage(span_of(row), since, until, by_day)) {
      auto& g = groups[by_day ? piece.day : row.key];
      g.first += piece.gpu_seconds;
      g.second += piece.cost;
    }
  }
  for (const UsageRow& row : crossing_uptime) {
    for (const pricing::UsagePiece& piece :
         pricing::ClipUsage(span_of(row), since, until, false)) {
      uptime_seconds += piece.gpu_seconds;
      uptime_cost += piece.cost;
    }
  }
  {
    // What is still running counts up to now.
    absl::MutexLock lock(&mu_);
    const absl::Time end = std::min(now, until);
    for (const auto& [key, a] : allocs_) {
      auto j = jobs_.find(std::get<0>(key));
      const v1::JobSpec* spec =
          j != jobs_.end() ? &j->second.job.spec() : nullptr;
      std::string k;
      if (group_by == "team")
        k = spec ? spec->team() : "";
      else if (group_by == "user")
        k = spec ? spec->user() : "";
      else if (group_by == "gpu-type")
        k = a.gpu_type;
      else if (group_by == "region")
        k = a.region;
      else if (group_by == "array")
        k = spec && spec->array().array_id() > 0
                ? absl::StrCat(spec->array().array_id())
                : "";
      else if (!by_day)
        k = absl::StrCat(std::get<0>(key));
      pricing::UsageSpan span;
      span.start = a.started;
      span.end = std::max(end, a.started);
      span.gpus = a.gpus;
      span.price = a.price;
      for (const pricing::UsagePiece& piece :
           pricing::ClipUsage(span, since, until, by_day)) {
        auto& g = groups[by_day ? piece.day : k];
        g.first += piece.gpu_seconds;
        g.second += piece.cost;
      }
    }
    for (auto& [id, w] : workers_) {
      if (w.uptime_id == 0) continue;
      pricing::UsageSpan span;
      span.start = w.up_since;
      span.end = std::max(end, w.up_since);
      span.gpus = w.info.devices_size();
      span.price = w.price;
      for (const pricing::UsagePiece& piece :
           pricing::ClipUsage(span, since, until, false)) {
        uptime_seconds += piece.gpu_seconds;
        uptime_cost += piece.cost;
      }
    }
  }
  v1::CostReport report;
  report.set_currency(options_.pricing ? options_.pricing->currency() : "");
  report.set_group_by(group_by);
  *report.mutable_since() =
      TimeUtil::MillisecondsToTimestamp(absl::ToUnixMillis(since));
  *report.mutable_until() =
      TimeUtil::MillisecondsToTimestamp(absl::ToUnixMillis(until));
  std::vector<std::pair<std::string, std::pair<double, Money>>> rows(
      groups.begin(), groups.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.second > b.second.second ||
           (a.second.second == b.second.second && a.first < b.first);
  });
  Money total;
  double total_seconds = 0;
  for (const auto& [key, v] : rows) {
    v1::CostRow* row = report.add_rows();
    row->set_key(key.empty() ? "-" : key);
    row->set_gpu_seconds(v.first);
    row->set_cost(v.second.ToString());
    total += v.second;
    total_seconds += v.first;
  }
  report.set_total(total.ToString());
  report.set_total_gpu_seconds(total_seconds);
  const Money idle = uptime_cost > total ? uptime_cost - total : Money();
  report.set_idle_cost(idle.ToString());
  report.set_idle_gpu_seconds(std::max(0.0, uptime_seconds - total_seconds));
  report.set_idle_shutdown_saved(saved.ToString());
  return report;
}

absl::StatusOr<v1::EstimateJobResponse> SchedulerCore::EstimateJob(
    v1::JobSpec spec) {
  ApplyJobSpecDefaults(spec);
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  const absl::Time now = absl::Now();
  // The job as placement would see it if submitted now (it has no id).
  v1::Job probe;
  probe.set_id(-1);
  *probe.mutable_spec() = spec;
  *probe.mutable_created_at() =
      TimeUtil::MillisecondsToTimestamp(absl::ToUnixMillis(now));
  const JobRequest request = RequestOf(probe);
  const int64_t runtime_s = spec.max_runtime().seconds();

  absl::MutexLock lock(&mu_);
  v1::EstimateJobResponse out;
  out.set_currency(options_.pricing ? options_.pricing->currency() : "");
  const auto& types = spec.resources().gpu_type();
  // Pools: live workers of one region x GPU type x offering.
  struct Pool {
    std::set<std::string> workers;
    const WorkerEntry* sample = nullptr;  // its price is the pool's
  };
  std::map<std::tuple<std::string, std::string, std::string>, Pool> pools;
  for (const auto& [id, w] : workers_) {
    if (w.info.state() != v1::WORKER_STATE_UP &&
        w.info.state() != v1::WORKER_STATE_DRAINING)
      continue;
    if (!types.empty() &&
        std::find(types.begin(), types.end(), w.gpu_type) == types.end())
      continue;
    Pool& pool = pools[{w.info.region(), w.gpu_type, w.info.offering()}];
    pool.workers.insert(id);
    pool.sample = &w;
  }
  const std::vector<NodeView> nodes = NodeViews();
  const std::vector<RunningJob> running = RunningJobs();
  PlacementOptions placement;
  placement.policy = options_.policy;
  placement.now_ms = absl::ToUnixMillis(now);
  // Cheapest first: by cost, else by price per GPU-hour (unpriced last).
  struct Ranked {
    std::optional<Money> order;
    v1::Estimate estimate;
  };
  std::vector<Ranked> list;
  for (const auto& [key, pool] : pools) {
    // The whole request (gang, CPU, memory, labels) against this pool
    // alone; the running jobs' ends give the earliest start when it does
    // not fit now. Jobs queued ahead are not counted.
    std::vector<NodeView> pool_nodes;
    for (const NodeView& n : nodes)
      if (pool.workers.count(n.worker_id)) pool_nodes.push_back(n);
    const PlacementPlan plan =
        PlaceJobs(std::move(pool_nodes), {request}, running, placement);
    const bool fits_now = !plan.placed.empty();
    absl::Time start = now;
    if (!fits_now) {
      const PendingInfo& info = plan.pending.at(request.job_id);
      if (info.reason == PendingReason::kNeverFits ||
          info.reason == PendingReason::kNoSuchGpuType)
        continue;  // this pool could never run it
      start = info.estimated_start_ms > 0
                  ? absl::FromUnixMillis(info.estimated_start_ms)
                  : absl::InfiniteFuture();
    }
    const WorkerEntry& w = *pool.sample;
    Ranked ranked;
    v1::Estimate& e = ranked.estimate;
    e.set_region(std::get<0>(key));
    e.set_gpu_type(std::get<1>(key));
    e.set_offering(std::get<2>(key));
    e.set_fits_now(fits_now);
    if (start != absl::InfiniteFuture())
      *e.mutable_start_at() =
          TimeUtil::MillisecondsToTimestamp(absl::ToUnixMillis(start));
    if (runtime_s > 0) {
      const absl::Duration d = absl::Seconds(runtime_s);
      e.mutable_duration()->set_seconds(runtime_s);
      // Priced from the start: a later start may fall in an off-peak window.
      const absl::Time priced_from =
          start == absl::InfiniteFuture() ? now : start;
      if (start != absl::InfiniteFuture())
        *e.mutable_finish_at() =
            TimeUtil::MillisecondsToTimestamp(absl::ToUnixMillis(start + d));
      e.set_basis(fits_now ? "max_runtime"
                  : start == absl::InfiniteFuture()
                      ? "max_runtime; start unknown (running jobs without "
                        "max_runtime hold the room)"
                      : "max_runtime; starts when running jobs end (jobs "
                        "queued ahead not counted)");
      if (w.price) {
        auto cost =
            pricing::Estimate(*w.price, TotalGpus(spec), priced_from, d);
        if (cost.ok()) {
          e.set_cost(cost->ToString());
          ranked.order = *cost;
        }
      }
    } else {
      e.set_basis("no max_runtime: price per GPU-hour only");
    }
    if (w.price) {
      const Money hourly = pricing::PriceAt(*w.price, now);
      e.set_price_per_gpu_hour(hourly.ToString());
      if (!ranked.order) ranked.order = hourly;
    }
    list.push_back(std::move(ranked));
  }
  std::sort(list.begin(), list.end(), [](const Ranked& a, const Ranked& b) {
    if (a.order && b.order && *a.order != *b.order) return *a.order < *b.order;
    if (a.order.has_value() != b.order.has_value()) return a.order.has_value();
    return std::tie(a.estimate.region(), a.estimate.gpu_type(),
                    a.estimate.offering()) < std::tie(b.estimate.region(),
                                                      b.estimate.gpu_type(),
                                                      b.estimate.offering());
  });
  for (auto& r : list) *out.add_estimates() = std::move(r.estimate);
  return out;
}

}  // namespace tupa::scheduler

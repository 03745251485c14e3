#include "scheduler/idle/decide.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/quantity.h"
#include "scheduler/idle/cost_rule.h"
#include "scheduler/idle/jobs.h"

namespace tupa::scheduler::idle {
namespace {

// Why a worker is busy now, or nullopt when it is idle.
std::optional<std::string> BusyReason(const WorkerInfo& w, double threshold) {
  if (!w.job_ids.empty()) {
    return absl::StrCat(w.job_ids.size() == 1 ? "busy: job " : "busy: jobs ",
                        absl::StrJoin(w.job_ids, ", "));
  }
  double peak = 0;
  for (double a : w.device_activity) peak = std::max(peak, a);
  if (!w.device_activity.empty() && peak >= threshold) {
    return absl::StrFormat("busy: device activity %.2f without a job", peak);
  }
  return std::nullopt;
}

absl::Time IdleSince(const WorkerInfo& w, const PolicyState& prev,
                     absl::Time now) {
  // A worker busy in the previous cycle is idle since then, not since it
  // joined, or since last_busy_at when the caller knows it to be later (a
  // caller that runs the policy only at events, like tupa-sim).
  auto it = prev.idle_since.find(w.id);
  auto busy = prev.busy_at.find(w.id);
  absl::Time since = it != prev.idle_since.end() ? it->second
                     : busy != prev.busy_at.end()
                         ? std::max(busy->second, w.last_busy_at)
                     : w.last_busy_at != absl::InfinitePast()
                         ? std::max(w.last_busy_at, w.joined_at)
                         : w.joined_at;
  if (since == absl::InfinitePast() || since > now) since = now;
  return since;
}

// The first pending job that could use `w` now, if any.
const PendingJob* JobThatCanUse(const Snapshot& s, const WorkerInfo& w) {
  for (const PendingJob& j : s.pending) {
    if (j.waits_for_boot_of.empty() && PendingJobCanUse(j, w)) return &j;
  }
  return nullptr;
}

std::string IdleReason(const WorkerInfo& w, double threshold,
                       absl::Duration idle) {
  if (w.device_activity.empty()) {
    return absl::StrCat("no job for ", HumanDuration(idle),
                        " (device activity not measured)");
  }
  return absl::StrFormat("no job and device activity below %g for %s",
                         threshold, HumanDuration(idle));
}

// An idle worker that passed every check but keep_warm.
struct Candidate {
  size_t index;  // into snapshot.workers and verdicts
  absl::Duration idle;
  bool in_grace;
  bool warm_pays = false;  // the cost rule keeps it
};

class WorkerPass {
 public:
  WorkerPass(const IdlePolicy& policy, const Snapshot& s,
             const PolicyState& prev, absl::Time now, Decisions* d)
      : policy_(policy),
        p_(policy.idle_shutdown),
        s_(s),
        prev_(prev),
        now_(now),
        d_(d) {}

  void Run() {
    for (size_t i = 0; i < s_.workers.size(); ++i) Judge(i);
    if (cost()) LearnPools();
    for (auto& [pool, candidates] : candidates_) StopInPool(pool, candidates);
  }

 private:
  bool cost() const {
    return p_.enabled && p_.kind == IdleShutdownPolicy::Kind::kCost;
  }

  // Pickups of this cycle: idle workers that got work (counted in Judge)
  // and new pending jobs that fit no live worker, for each pool whose GPU
  // type they accept.
  void LearnPools() {
    d_->state.pools = prev_.pools;
    for (const PendingJob& j : s_.pending) {
      d_->state.pending_seen.insert(j.job_id);
      if (j.fits_live_worker || prev_.pending_seen.count(j.job_id)) continue;
      for (const std::string& pool : pools_seen_) {
        const std::string type = pool.substr(pool.find('/') + 1);
        if (j.gpu_types.empty() ||
            std::find(j.gpu_types.begin(), j.gpu_types.end(), type) !=
                j.gpu_types.end()) {
          ++pickups_[pool];
        }
      }
    }
    for (const std::string& pool : pools_seen_)
      RecordPickups(&d_->state.pools[pool], pickups_[pool], now_);
  }

  bool InGrace(const std::string& id) const {
    return prev_.grace_since.count(id) > 0;
  }
  void CancelGrace(const std::string& id, const std::string& why) {
    if (InGrace(id)) d_->cancelled.push_back({id, why});
  }
  void Set(size_t i, Verdict v, std::string reason, absl::Duration idle) {
    d_->verdicts[i] = {s_.workers[i].id, v, std::move(reason), idle};
  }

  void Judge(size_t i) {
    const WorkerInfo& w = s_.workers[i];
    const std::string pool = PoolKey(w.region, w.gpu_type);
    auto stopping = prev_.shutting_down.find(w.id);
    if (stopping != prev_.shutting_down.end()) {
      d_->state.shutting_down[w.id] = stopping->second;
      Set(i, Verdict::kShuttingDown,
          absl::StrCat("shutting down since ",
                       HumanDuration(now_ - stopping->second), " ago"),
          absl::ZeroDuration());
      return;
    }
    if (w.state == WorkerInfo::State::kUp) ++live_up_[pool];
    pools_seen_.insert(pool);
    if (auto busy = BusyReason(w, p_.activity_threshold)) {
      if (prev_.idle_since.count(w.id)) ++pickups_[pool];
      d_->state.busy_at[w.id] = now_;
      CancelGrace(w.id, absl::StrCat(*busy, " during the shutdown grace"));
      Set(i, p_.enabled ? Verdict::kBusy : Verdict::kDisabled, *busy,
          absl::ZeroDuration());
      return;
    }
    const absl::Time since = IdleSince(w, prev_, now_);
    d_->state.idle_since[w.id] = since;
    const absl::Duration idle = now_ - since;
    if (!p_.enabled) {
      Set(i, Verdict::kDisabled,
          absl::StrCat("idle ", HumanDuration(idle), "; idle_shutdown off"),
          idle);
      return;
    }
    if (w.state == WorkerInfo::State::kDraining) {
      CancelGrace(w.id, "drained by the operator during the shutdown grace");
      Set(i, Verdict::kDraining,
          absl::StrCat("draining: idle ", HumanDuration(idle),
                       ", left to the operator"),
          idle);
      return;
    }
    if (!cost() && idle < p_.idle_after) {
      CancelGrace(w.id, "idle time reset during the shutdown grace");
      Set(i, Verdict::kIdle,
          absl::StrCat("idle ", HumanDuration(idle), " of ",
                       HumanDuration(p_.idle_after)),
          idle);
      return;
    }
    const absl::Duration up = now_ - std::min(w.joined_at, now_);
    if (up < p_.MinUptime()) {
      CancelGrace(w.id, "min_uptime not reached during the shutdown grace");
      Set(i, Verdict::kMinUptime,
          absl::StrCat("min_uptime: up ", HumanDuration(up), " of ",
                       HumanDuration(p_.MinUptime())),
          idle);
      return;
    }
    if (const PendingJob* job = JobThatCanUse(s_, w)) {
      const std::string why =
          absl::StrCat("pending job ", job->job_id, " fits");
      CancelGrace(w.id, absl::StrCat(why, " during the shutdown grace"));
      Set(i, Verdict::kPendingJobFits, why, idle);
      return;
    }
    candidates_[pool].push_back({i, idle, InGrace(w.id)});
  }

  // Stops the candidates of one pool while more than keep_warm UP workers
  // would remain; those already in grace first, then the longest idle.
  void StopInPool(const std::string& pool, std::vector<Candidate>& cs) {
    std::sort(cs.begin(), cs.end(),
              [&](const Candidate& a, const Candidate& b) {
                if (a.in_grace != b.in_grace) return a.in_grace;
                if (a.idle != b.idle) return a.idle > b.idle;
                return s_.workers[a.index].id < s_.workers[b.index].id;
              });
    const int keep = p_.KeepWarm(pool);
    int remaining = live_up_[pool];
    std::vector<std::string> cost_reasons(cs.size());
    if (cost()) JudgePoolByCost(pool, cs, &cost_reasons);
    for (size_t k = 0; k < cs.size(); ++k) {
      const Candidate& c = cs[k];
      const WorkerInfo& w = s_.workers[c.index];
      if (remaining <= keep) {
        CancelGrace(w.id, "keep_warm reached during the shutdown grace");
        Set(c.index, Verdict::kKeepWarm,
            absl::StrCat("keep_warm: last ", remaining, " of pool ", pool),
            c.idle);
        continue;
      }
      if (c.warm_pays) {
        CancelGrace(w.id, "the cost rule kept it during the shutdown grace");
        Set(c.index, Verdict::kWarmPays, cost_reasons[k], c.idle);
        continue;
      }
      --remaining;
      Stop(c, w, cost_reasons[k]);
    }
  }

  // Marks the candidates the cost rule keeps (warm_pays), ranking them
  // most recently idle first, and their reasons; those idle past
  // MaxIdle() are stopped whatever the rule says.
  void JudgePoolByCost(const std::string& pool, std::vector<Candidate>& cs,
                       std::vector<std::string>* reasons) {
    const PoolStats& stats = d_->state.pools[pool];
    int rank = 0;
    for (size_t k = cs.size(); k-- > 0;) {
      Candidate& c = cs[k];
      CostJudgement j = JudgeByCost(policy_, stats, s_.workers[c.index], ++rank,
                                    c.idle, now_);
      c.warm_pays = j.keep && c.idle < p_.MaxIdle();
      (*reasons)[k] = c.idle < p_.MaxIdle()
                          ? j.reason
                          : absl::StrCat("idle ", HumanDuration(c.idle),
                                         ", the most idle_after allows");
    }
  }

  void Stop(const Candidate& c, const WorkerInfo& w, const std::string& why) {
    if (p_.grace > absl::ZeroDuration()) {
      auto it = prev_.grace_since.find(w.id);
      const absl::Time since =
          it == prev_.grace_since.end() ? now_ : it->second;
      const absl::Duration waited = now_ - since;
      if (waited < p_.grace) {
        d_->state.grace_since[w.id] = since;
        Set(c.index, Verdict::kGrace,
            absl::StrCat("idle ", HumanDuration(c.idle), ": stopping in ",
                         HumanDuration(p_.grace - waited),
                         " unless it gets work"),
            c.idle);
        return;
      }
    }
    ShutdownDecision s;
    s.worker_id = w.id;
    s.instance_id = w.instance_id;
    s.region = w.region;
    s.gpu_type = w.gpu_type;
    s.reason = IdleReason(w, p_.activity_threshold, c.idle);
    if (!why.empty()) absl::StrAppend(&s.reason, "; ", why);
    s.idle = c.idle;
    s.saved_per_hour = w.price_per_gpu_hour * w.gpus_total;
    Set(c.index, Verdict::kShutdown, s.reason, c.idle);
    d_->state.shutting_down[w.id] = now_;
    d_->shutdowns.push_back(std::move(s));
  }

  const IdlePolicy& policy_;
  const IdleShutdownPolicy& p_;
  const Snapshot& s_;
  const PolicyState& prev_;
  const absl::Time now_;
  Decisions* d_;
  std::map<std::string, int> live_up_;  // pool -> UP workers not stopping
  std::map<std::string, std::vector<Candidate>> candidates_;
  std::set<std::string> pools_seen_;    // pools of live workers
  std::map<std::string, int> pickups_;  // pool -> pickups this cycle
};

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kDisabled:
      return "DISABLED";
    case Verdict::kBusy:
      return "BUSY";
    case Verdict::kIdle:
      return "IDLE";
    case Verdict::kMinUptime:
      return "MIN_UPTIME";
    case Verdict::kPendingJobFits:
      return "PENDING_JOB_FITS";
    case Verdict::kKeepWarm:
      return "KEEP_WARM";
    case Verdict::kWarmPays:
      return "WARM_PAYS";
    case Verdict::kDraining:
      return "DRAINING";
    case Verdict::kGrace:
      return "GRACE";
    case Verdict::kShutdown:
      return "SHUTDOWN";
    case Verdict::kShuttingDown:
      return "SHUTTING_DOWN";
  }
  return "UNKNOWN";
}

bool PendingJobCanUse(const PendingJob& job, const WorkerInfo& w) {
  if (w.state != WorkerInfo::State::kUp) return false;
  if (job.gpus_per_node > w.gpus_free) return false;
  if (job.gpus_per_node > 0 && !job.gpu_types.empty() &&
      std::find(job.gpu_types.begin(), job.gpu_types.end(), w.gpu_type) ==
          job.gpu_types.end()) {
    return false;
  }
  for (const auto& [key, value] : job.labels) {
    auto it = w.labels.find(key);
    if (it == w.labels.end() || it->second != value) return false;
  }
  if (job.cpu_per_node > 0 && job.cpu_per_node > w.cpu_free) return false;
  if (job.memory_per_node > 0 && job.memory_per_node > w.memory_free)
    return false;
  return true;
}

bool FitsLiveWorkers(const PendingJob& job,
                     const std::vector<WorkerInfo>& workers) {
  int usable = 0;
  for (const WorkerInfo& w : workers) {
    usable += w.state == WorkerInfo::State::kUp && PendingJobCanUse(job, w);
    if (usable >= job.nodes) return true;
  }
  return false;
}

Decisions Decide(const IdlePolicy& policy, const Snapshot& snapshot,
                 const PolicyState& previous, absl::Time now) {
  Decisions d;
  d.verdicts.resize(snapshot.workers.size());
  WorkerPass(policy, snapshot, previous, now, &d).Run();
  const absl::Duration room_within =
      policy.idle_shutdown.kind == IdleShutdownPolicy::Kind::kCost
          ? policy.idle_shutdown.boot_time
          : absl::ZeroDuration();
  DecideScaleUps(policy.scale_up, room_within, snapshot, previous, now, &d);
  DecideZombies(policy.zombie_jobs, policy.idle_shutdown.activity_threshold,
                snapshot, previous, now, &d);
  return d;
}

}  // namespace tupa::scheduler::idle

// The cost rule of the idle policy (IdleShutdownPolicy::Kind::kCost):
// whether keeping an idle worker up until its next job costs less than
// stopping it and paying for a restart when that job comes. Pure; used by
// Decide(), so the scheduler and tupa-sim make the same decisions.
//
// Each pool (region x GPU type) learns, from what Decide() sees cycle after
// cycle, how often a job comes to one of its idle workers or finds none
// (PoolStats, constant size per pool: a moving average of the gap between
// such "pickups" and the time of the last one). The expected wait of the
// k-th idle worker of a pool (most recently idle first) for its next job is
// k x gap, where gap = max(average gap, time since the last pickup): a pool
// whose jobs stopped coming looks slower every minute. Staying up costs
// the worker's GPUs x the price integrated over that wait (off-peak
// windows included); a restart costs the worker's GPUs x the price then x
// (boot_time + billing_minimum), plus the job's wait for it (scale-up
// pending_after + boot_time) at the price of the GPUs it waits for (the
// pool's average per pickup, at most the worker's). The
// worker is kept while staying costs no more than a restart
// (the ski-rental break-even when jobs stop coming). Until a pool has seen
// kMinPickups pickups, its k-th idle worker is stopped once idle for the
// restart time / k.
// Thread-compatible.
#ifndef TUPA_SCHEDULER_IDLE_COST_RULE_H_
#define TUPA_SCHEDULER_IDLE_COST_RULE_H_

#include <string>

#include "absl/time/time.h"
#include "scheduler/idle/policy.h"
#include "scheduler/idle/snapshot.h"

namespace tupa::scheduler::idle {

// A pool that has seen fewer pickups has no estimate yet: its k-th idle
// worker is stopped once its idle time equals the restart time (boot_time
// + billing_minimum + the job's wait) / k, the ski-rental rule.
inline constexpr int kMinPickups = 10;

// Weight of the newest gap in PoolStats::mean_gap_s.
inline constexpr double kGapAverageWeight = 0.2;

// Records `count` pickups seen at `now` that took `gpus` GPUs in all
// (count may be 0: only starts the clock of a pool seen for the first
// time; gpus 0: not known).
void RecordPickups(PoolStats* stats, int count, absl::Time now,
                   double gpus = 0);

struct CostJudgement {
  bool keep = false;
  absl::Duration expected_wait;  // until the worker's next job
  double stay_cost = 0;          // in the catalog currency; 0 without prices
  double restart_cost = 0;
  std::string reason;  // "cost: next job in ~4m; staying up 0.53 <= ..."
};

// Judges the idle worker `w`, idle for `idle` and ranked `rank` (1: the
// most recently idle of its pool's idle workers), under `stats`.
CostJudgement JudgeByCost(const IdlePolicy& policy, const PoolStats& stats,
                          const WorkerInfo& w, int rank, absl::Duration idle,
                          absl::Time now);

// GPUs of `w` x the integral of its price over [from, to), from
// price_steps (or price_per_gpu_hour when it has none).
double IdleCost(const WorkerInfo& w, absl::Time from, absl::Time to);

}  // namespace tupa::scheduler::idle

#endif  // TUPA_SCHEDULER_IDLE_COST_RULE_H_

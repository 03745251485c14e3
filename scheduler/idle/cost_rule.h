// The cost rule of the idle policy (IdleShutdownPolicy::Kind::kCost):
// whether keeping an idle worker up until its next job costs less than
// stopping it and paying for a restart when that job comes. Pure; used by
// Decide(), so the scheduler and tupa-sim make the same decisions.
//
// Each pool (region x GPU type) learns, from what Decide() sees cycle after
// cycle, when a job comes to one of its idle workers or finds none there
// (a "pickup"): PoolStats keeps the last kGapSamples gaps between pickups,
// the pool's empirical gap distribution, and the time of the last one.
//
// The next job of the pool, given that it has been silent for s since its
// last pickup, comes after g - s for each remembered gap g > s (the
// survival estimate: a pool whose day gaps are a minute and night gaps an
// hour looks like night after ten silent minutes), plus one pseudo-gap of
// max(s, mean gap) for "jobs stopped coming" (so a silence longer than
// every gap seen says: as long again). The k-th idle worker of a pool
// (most recently idle first) needs k jobs: its wait is that residual plus
// (k - 1) mean residuals.
//
// A worker kept until time h and stopped then pays its GPUs x the price
// integrated until its job or h (off-peak windows included); one stopped
// now pays a restart when its job comes: its GPUs x the price then x
// (boot_time + billing_minimum), plus the job's wait for it (scale-up
// pending_after + boot_time) at the price of the GPUs it waits for (a job
// that finds no idle worker waits for a whole one to boot). The worker is
// kept while some h makes staying cheaper in expectation than stopping now
// (optimal stopping under the estimated distribution; with one gap it is
// the ski-rental rule). Until a pool has seen kMinPickups pickups, its
// k-th idle worker is stopped once idle for the restart time / k.
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

// Records `count` pickups seen at `now` (count may be 0: only starts the
// clock of a pool seen for the first time). Pickups seen in one cycle
// share its gap.
void RecordPickups(PoolStats* stats, int count, absl::Time now);

// The mean of the gaps `stats` remembers, in seconds (0: none).
double MeanGapSeconds(const PoolStats& stats);

struct CostJudgement {
  bool keep = false;
  absl::Duration expected_wait;  // mean time until the worker's next job
  absl::Duration horizon;        // kept: worth staying up at least until
  double p_job = 0;              // P(its job comes within the horizon)
  double stay_cost = 0;     // expected, up to the horizon; catalog currency
  double restart_cost = 0;  // expected restarts saved within the horizon
  std::string reason;       // "cost: rank 1, next job within 4m with p ..."
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

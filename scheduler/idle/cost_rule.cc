#include "scheduler/idle/cost_rule.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "common/quantity.h"

namespace tupa::scheduler::idle {
namespace {

// Price per GPU-hour of `w` at `t`.
double PriceAt(const WorkerInfo& w, absl::Time t) {
  double price = w.price_per_gpu_hour;
  for (const auto& [from, p] : w.price_steps) {
    if (from > t) break;
    price = p;
  }
  return price;
}

// The pool's gap between pickups as it looks now.
absl::Duration Gap(const PoolStats& s, absl::Time now) {
  const absl::Time since =
      s.last_pickup == absl::InfinitePast() ? s.first_seen : s.last_pickup;
  absl::Duration silent = since == absl::InfinitePast()
                              ? absl::ZeroDuration()
                              : std::max(absl::ZeroDuration(), now - since);
  return std::max(absl::Seconds(s.mean_gap_s), silent);
}

}  // namespace

void RecordPickups(PoolStats* s, int count, absl::Time now, double gpus) {
  if (s->first_seen == absl::InfinitePast()) s->first_seen = now;
  if (count <= 0) return;
  const absl::Time since =
      s->last_pickup == absl::InfinitePast() ? s->first_seen : s->last_pickup;
  const double sample =
      std::max(0.0, absl::ToDoubleSeconds(now - since)) / count;
  const double per_job = gpus / count;
  if (s->pickups == 0) {
    s->mean_gap_s = sample;
    s->mean_job_gpus = per_job;
  } else {
    // `count` pickups in one cycle weigh as `count` samples.
    const double w = 1 - std::pow(1 - kGapAverageWeight, count);
    s->mean_gap_s += w * (sample - s->mean_gap_s);
    s->mean_job_gpus += w * (per_job - s->mean_job_gpus);
  }
  s->pickups += count;
  s->last_pickup = now;
}

double IdleCost(const WorkerInfo& w, absl::Time from, absl::Time to) {
  if (to <= from) return 0;
  double cost = 0;
  absl::Time t = from;
  size_t i = 0;
  double price = w.price_per_gpu_hour;
  while (i < w.price_steps.size() && w.price_steps[i].first <= t)
    price = w.price_steps[i++].second;
  while (t < to) {
    const absl::Time next =
        i < w.price_steps.size() ? std::min(to, w.price_steps[i].first) : to;
    cost += price * absl::ToDoubleHours(next - t);
    t = next;
    if (i < w.price_steps.size() && w.price_steps[i].first <= t)
      price = w.price_steps[i++].second;
  }
  return cost * w.gpus_total;
}

CostJudgement JudgeByCost(const IdlePolicy& policy, const PoolStats& stats,
                          const WorkerInfo& w, int rank, absl::Duration idle,
                          absl::Time now) {
  const IdleShutdownPolicy& p = policy.idle_shutdown;
  CostJudgement j;
  // Past a year the answer no longer changes; this keeps the integral short.
  j.expected_wait = std::min(rank * Gap(stats, now), absl::Hours(24 * 365));
  const absl::Time next_job = now + j.expected_wait;
  // Without a price every GPU-hour counts 1: the comparison is in time.
  WorkerInfo priced = w;
  if (priced.price_per_gpu_hour <= 0 && priced.price_steps.empty())
    priced.price_per_gpu_hour = 1;
  priced.gpus_total = std::max(1, w.gpus_total);
  j.stay_cost = IdleCost(priced, now, next_job);
  const absl::Duration job_waits =
      (policy.scale_up.enabled ? policy.scale_up.pending_after
                               : absl::ZeroDuration()) +
      p.boot_time;
  const double price_then = PriceAt(priced, next_job);
  const double job_gpus =
      stats.mean_job_gpus > 0
          ? std::min<double>(stats.mean_job_gpus, priced.gpus_total)
          : priced.gpus_total;
  j.restart_cost =
      price_then * (priced.gpus_total *
                        absl::ToDoubleHours(p.boot_time + p.billing_minimum) +
                    job_gpus * absl::ToDoubleHours(job_waits));
  if (stats.pickups < kMinPickups) {
    // Too few gaps to estimate from (a fresh pool): the ski-rental rule,
    // stop once the idle time paid equals what a restart would cost,
    // divided by the rank (the k-th idle worker needs k jobs to be used).
    const absl::Duration break_even =
        p.boot_time + p.billing_minimum + job_waits;
    j.keep = idle * rank < break_even;
    j.reason = absl::StrFormat(
        "cost: pool has seen %d of the %d jobs it learns from; idle %s of "
        "the %s a restart costs / rank %d",
        stats.pickups, kMinPickups, HumanDuration(idle),
        HumanDuration(break_even), rank);
    return j;
  }
  j.keep = j.stay_cost <= j.restart_cost;
  j.reason = absl::StrFormat(
      "cost: next job in ~%s; staying up %.2f %s restart %.2f (boot %s, job "
      "waits %s)",
      HumanDuration(j.expected_wait), j.stay_cost, j.keep ? "<=" : ">",
      j.restart_cost, HumanDuration(p.boot_time), HumanDuration(job_waits));
  return j;
}

}  // namespace tupa::scheduler::idle

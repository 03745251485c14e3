#include "scheduler/idle/cost_rule.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/quantity.h"

namespace tupa::scheduler::idle {
namespace {

// Past a year the answer no longer changes; this keeps the integrals short.
constexpr absl::Duration kLongest = absl::Hours(24 * 365);

// Price per GPU-hour of `w` at `t`.
double PriceAt(const WorkerInfo& w, absl::Time t) {
  double price = w.price_per_gpu_hour;
  for (const auto& [from, p] : w.price_steps) {
    if (from > t) break;
    price = p;
  }
  return price;
}

absl::Time LastPickup(const PoolStats& s) {
  return s.last_pickup == absl::InfinitePast() ? s.first_seen : s.last_pickup;
}

// The residual times until the pool's next pickup, after `silence`: one
// per remembered gap longer than the silence, and the pseudo-gap.
std::vector<double> Residuals(const PoolStats& s, double silence) {
  std::vector<double> r;
  for (int i = 0; i < s.gap_count(); ++i) {
    if (s.gaps_s[i] > silence) r.push_back(s.gaps_s[i] - silence);
  }
  r.push_back(std::max(silence, MeanGapSeconds(s)));
  return r;
}

}  // namespace

void RecordPickups(PoolStats* s, int count, absl::Time now) {
  if (s->first_seen == absl::InfinitePast()) s->first_seen = now;
  if (count <= 0) return;
  const double gap =
      std::max(0.0, absl::ToDoubleSeconds(now - LastPickup(*s))) / count;
  for (int i = 0; i < std::min(count, kGapSamples); ++i) {
    s->gaps_s[s->next_gap] = static_cast<float>(gap);
    s->next_gap = (s->next_gap + 1) % kGapSamples;
  }
  s->pickups += count;
  s->last_pickup = now;
}

double MeanGapSeconds(const PoolStats& s) {
  const int n = s.gap_count();
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += s.gaps_s[i];
  return n == 0 ? 0 : sum / n;
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
  // Without a price every GPU-hour counts 1: the comparison is in time.
  WorkerInfo priced = w;
  if (priced.price_per_gpu_hour <= 0 && priced.price_steps.empty())
    priced.price_per_gpu_hour = 1;
  priced.gpus_total = std::max(1, w.gpus_total);
  const absl::Duration job_waits =
      (policy.scale_up.enabled ? policy.scale_up.pending_after
                               : absl::ZeroDuration()) +
      p.boot_time;
  // What stopping now costs if the worker's job comes at `t`: the
  // restart billed, and the job's wait for it at the worker's GPUs (a
  // job that finds no idle worker waits for a whole one to boot).
  const double restart_hours =
      priced.gpus_total *
      absl::ToDoubleHours(p.boot_time + p.billing_minimum + job_waits);
  auto restart_at = [&](absl::Time t) {
    return PriceAt(priced, t) * restart_hours;
  };
  if (stats.pickups < kMinPickups) {
    // Too few gaps to estimate from (a fresh pool): the ski-rental rule,
    // stop once the idle time paid equals what a restart would cost,
    // divided by the rank (the k-th idle worker needs k jobs to be used).
    const absl::Duration break_even =
        p.boot_time + p.billing_minimum + job_waits;
    j.keep = idle * rank < break_even;
    j.restart_cost = restart_at(now);
    j.reason = absl::StrFormat(
        "cost: pool has seen %d of the %d jobs it learns from; idle %s of "
        "the %s a restart costs / rank %d",
        stats.pickups, kMinPickups, HumanDuration(idle),
        HumanDuration(break_even), rank);
    return j;
  }
  const absl::Time since = LastPickup(stats);
  const double silence =
      since == absl::InfinitePast()
          ? 0
          : std::max(0.0, absl::ToDoubleSeconds(now - since));
  std::vector<double> waits = Residuals(stats, silence);
  double mean_residual = 0;
  for (double r : waits) mean_residual += r;
  mean_residual /= waits.size();
  const double longest = absl::ToDoubleSeconds(kLongest);
  double mean_wait = 0;
  for (double& t : waits) {
    t = std::min(longest, t + (rank - 1) * mean_residual);
    mean_wait += t;
  }
  std::sort(waits.begin(), waits.end());
  const double n = static_cast<double>(waits.size());
  j.expected_wait = absl::Seconds(mean_wait / n);
  // Staying until h = waits[i]: the jobs that came by then saved a restart
  // each; every outcome paid the idle time until its job or h.
  double saved = 0, stay_done = 0, best = -1;
  for (size_t i = 0; i < waits.size(); ++i) {
    const absl::Time t = now + absl::Seconds(waits[i]);
    const double stay_until = IdleCost(priced, now, t);
    saved += restart_at(t);
    stay_done += stay_until;
    const double stay = stay_done + (n - i - 1) * stay_until;
    const double gain = (saved - stay) / n;
    if (i == 0 || gain > best) {
      best = gain;
      j.horizon = absl::Seconds(waits[i]);
      j.p_job = (i + 1) / n;
      j.stay_cost = stay / n;
      j.restart_cost = saved / n;
    }
  }
  j.keep = best >= 0;
  j.reason = absl::StrFormat(
      "cost: rank %d, next job within %s with p %.2f (silent %s, %d gaps "
      "seen); staying up %.2f %s restarts saved %.2f (boot %s, job waits %s)",
      rank, HumanDuration(j.horizon), j.p_job,
      HumanDuration(absl::Seconds(std::round(silence))), stats.gap_count(),
      j.stay_cost, j.keep ? "<=" : ">", j.restart_cost,
      HumanDuration(p.boot_time), HumanDuration(job_waits));
  return j;
}

}  // namespace tupa::scheduler::idle

#include "scheduler/sim/replay.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "scheduler/placement/recent_mix.h"

namespace tupa::sim {
namespace {

using scheduler::JobPlacement;
using scheduler::JobRequest;
using scheduler::NodeView;
using scheduler::RunningJob;

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double P95(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(0.95 * v.size())) - 1;
  return v[std::min(i, v.size() - 1)];
}

class Cluster {
 public:
  explicit Cluster(std::vector<NodeView> nodes) : nodes_(std::move(nodes)) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      index_[nodes_[i].worker_id] = i;
      gpus_ += static_cast<double>(nodes_[i].devices.size());
    }
  }
  const std::vector<NodeView>& nodes() const { return nodes_; }
  std::vector<NodeView>* mutable_nodes() { return &nodes_; }
  double gpus() const { return gpus_; }

  // sign -1 takes, +1 gives back.
  void Change(const RunningJob& job, const JobPlacement& where, int sign) {
    for (const auto& a : where.nodes) {
      NodeView& n = nodes_[index_.at(a.worker_id)];
      n.cpu_free += sign * job.cpu;
      n.memory_free += sign * job.memory;
      for (int d : a.device_indexes) {
        for (auto& slot : n.devices) {
          if (slot.index != d) continue;
          slot.free_share += sign * a.share;
          slot.free_share = std::clamp(slot.free_share, 0.0, 1.0);
          if (std::fabs(slot.free_share - 1.0) < 1e-9) slot.free_share = 1.0;
          if (std::fabs(slot.free_share) < 1e-9) slot.free_share = 0.0;
        }
      }
    }
  }

 private:
  std::vector<NodeView> nodes_;
  std::unordered_map<std::string, size_t> index_;
  double gpus_ = 0;
};

}  // namespace

absl::StatusOr<ReplayResult> RunReplay(const std::vector<NodeView>& nodes,
                                       const std::vector<PodSpec>& jobs,
                                       const ReplayOptions& options) {
  ReplayResult result;
  auto fleet_or = Fleet::Create(nodes, options.fleet);
  if (!fleet_or.ok()) return fleet_or.status();
  Fleet& fleet = **fleet_or;
  std::vector<NodeView> priced = nodes;
  for (size_t i = 0; i < priced.size(); ++i) {
    priced[i].price_per_gpu_hour = fleet.PriceAtEpoch(static_cast<int>(i));
  }
  Cluster cluster(std::move(priced));
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) order[i] = i;
  std::vector<double> submit_s(jobs.size());
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> jitter(-options.arrival_jitter_s,
                                                options.arrival_jitter_s);
  for (size_t i = 0; i < jobs.size(); ++i) {
    submit_s[i] = jobs[i].submit_s;
    if (options.arrival_jitter_s > 0)
      submit_s[i] = std::max(0.0, submit_s[i] + jitter(rng));
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return submit_s[a] < submit_s[b];
  });
  auto arrival_ms = [&](size_t i) {
    return static_cast<int64_t>(
        std::llround(submit_s[i] * 1000.0 / options.arrival_speedup));
  };

  std::vector<JobRequest> pending;
  std::unordered_map<int64_t, RunningJob> running;
  std::unordered_map<int64_t, JobPlacement> where;
  using End = std::pair<int64_t, int64_t>;  // end_ms, job id
  std::priority_queue<End, std::vector<End>, std::greater<End>> ends;
  std::vector<double> jct, wait;
  double gpu_seconds = 0;
  int64_t first_ms = jobs.empty() ? 0 : arrival_ms(order[0]);
  int64_t last_ms = first_ms;
  const int64_t last_arrival_ms =
      jobs.empty() ? 0 : arrival_ms(order[order.size() - 1]);
  double alloc_gpus = 0;     // GPUs held by running jobs
  double window_gpu_ms = 0;  // integral of alloc_gpus in the arrival window
  int64_t prev_ms = first_ms;
  scheduler::RecentMix arrived(0);  // every arrival so far
  using ShapeKey =
      std::tuple<double, double, int64_t, std::vector<std::string>>;
  std::map<ShapeKey, scheduler::PendingReason> ever_fits;
  const bool arrival_mix =
      options.mix_from_arrivals && scheduler::UsesRequestMix(options.policy);
  size_t next = 0;
  scheduler::PlacementOptions popt;
  popt.policy = options.policy;
  popt.max_estimates = 0;
  popt.long_job_runtime_s = options.long_job_runtime_s;
  popt.lone_job_runtime_s = options.lone_job_runtime_s;
  if (options.fleet.idle && options.fleet.idle->scale_up.enabled) {
    popt.boot_time_s = absl::ToInt64Seconds(options.fleet.boot_time);
  }

  fleet.Start(first_ms);
  while (next < order.size() || !ends.empty() ||
         (!pending.empty() && fleet.NextWakeMs() != kNever)) {
    int64_t now = fleet.NextWakeMs();
    if (!ends.empty()) now = std::min(now, ends.top().first);
    if (next < order.size()) now = std::min(now, arrival_ms(order[next]));
    {
      const int64_t a = std::max(prev_ms, first_ms);
      const int64_t b = std::min(now, last_arrival_ms);
      if (b > a) window_gpu_ms += alloc_gpus * static_cast<double>(b - a);
      prev_ms = now;
    }
    while (!ends.empty() && ends.top().first <= now) {
      const int64_t id = ends.top().second;
      ends.pop();
      cluster.Change(running.at(id), where.at(id), +1);
      fleet.OnJobEnd(where.at(id), running.at(id).expected_end_ms);
      alloc_gpus -= running.at(id).gpus;
      running.erase(id);
      where.erase(id);
      last_ms = std::max(last_ms, now);
    }
    for (; next < order.size() && arrival_ms(order[next]) <= now; ++next) {
      const PodSpec& p = jobs[order[next]];
      JobRequest r;
      r.job_id = static_cast<int64_t>(order[next]);
      r.team = p.user;
      r.submitted_at_ms = arrival_ms(order[next]);
      r.gpus = p.Gpus();
      r.gpu_types = p.gpu_types;
      r.cpu = p.cpu_milli / 1000.0;
      r.memory = p.memory_mib << 20;
      r.max_runtime_s = std::max<int64_t>(1, p.duration_s);
      ++result.jobs;
      // Judged on the whole fleet (stopped nodes do not make a job unfit),
      // once per request shape.
      auto [fit, fresh] =
          ever_fits.try_emplace(ShapeKey{r.gpus, r.cpu, r.memory, r.gpu_types},
                                scheduler::PendingReason::kNone);
      if (fresh) fit->second = scheduler::CheckEverFits(nodes, r);
      if (fit->second != scheduler::PendingReason::kNone) {
        ++result.never_fit;
        continue;
      }
      if (arrival_mix) arrived.Add(r);
      pending.push_back(std::move(r));
    }
    fleet.CompleteBoots(now, cluster.mutable_nodes());
    if (pending.empty()) {
      fleet.RunPolicy(now, cluster.mutable_nodes(), pending);
      continue;
    }
    std::vector<RunningJob> views;
    views.reserve(running.size());
    for (const auto& [id, r] : running) views.push_back(r);
    popt.now_ms = now;
    if (arrival_mix) popt.request_mix = arrived.Mix();
    scheduler::PlacementPlan plan =
        scheduler::PlaceJobs(cluster.nodes(), pending, views, popt);
    ++result.passes;
    std::unordered_map<int64_t, const JobPlacement*> started;
    for (const JobPlacement& p : plan.placed) started[p.job_id] = &p;
    std::vector<JobRequest> still;
    for (JobRequest& r : pending) {
      auto it = started.find(r.job_id);
      if (it != started.end()) {
        const PodSpec& spec = jobs[r.job_id];
        RunningJob run;
        run.job_id = r.job_id;
        run.gpus = r.gpus;
        run.cpu = r.cpu;
        run.memory = r.memory;
        run.team = r.team;
        const int64_t dur_ms = std::max<int64_t>(0, spec.duration_s) * 1000;
        run.expected_end_ms = now + dur_ms;
        for (const auto& a : it->second->nodes) {
          run.worker_ids.push_back(a.worker_id);
        }
        run.device_indexes = it->second->nodes[0].device_indexes;
        cluster.Change(run, *it->second, -1);
        fleet.OnJobStart(*it->second, r, now, run.expected_end_ms);
        alloc_gpus += run.gpus;
        where[r.job_id] = *it->second;
        running[r.job_id] = run;
        ends.push({run.expected_end_ms, r.job_id});
        wait.push_back((now - r.submitted_at_ms) / 1000.0);
        jct.push_back((run.expected_end_ms - r.submitted_at_ms) / 1000.0);
        gpu_seconds += r.gpus * spec.duration_s;
        ++result.finished;
        last_ms = std::max(last_ms, run.expected_end_ms);
        continue;
      }
      still.push_back(std::move(r));
    }
    pending = std::move(still);
    std::map<int64_t, std::string> boot_nodes;
    for (const auto& [id, info] : plan.pending) {
      if (info.reason == scheduler::PendingReason::kWaitsForBoot)
        boot_nodes[id] = info.boot_node;
    }
    // The idle policy sees the pending jobs this pass left.
    fleet.RunPolicy(now, cluster.mutable_nodes(), pending, boot_nodes);
  }
  result.unstarted = static_cast<int>(pending.size());
  result.fleet = fleet.Finish(last_ms);
  result.avg_jct_s = Mean(jct);
  result.p95_jct_s = P95(jct);
  result.avg_wait_s = Mean(wait);
  result.p95_wait_s = P95(wait);
  result.makespan_s = (last_ms - first_ms) / 1000.0;
  if (result.makespan_s > 0 && cluster.gpus() > 0) {
    result.gpu_utilisation = gpu_seconds / (cluster.gpus() * result.makespan_s);
  }
  if (last_arrival_ms > first_ms && cluster.gpus() > 0) {
    result.arrival_window_utilisation =
        window_gpu_ms /
        (cluster.gpus() * static_cast<double>(last_arrival_ms - first_ms));
  }
  return result;
}

}  // namespace tupa::sim

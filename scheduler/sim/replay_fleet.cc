#include "scheduler/sim/replay_fleet.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "scheduler/pricing/cost.h"

namespace tupa::sim {

using scheduler::JobPlacement;
using scheduler::JobRequest;
using scheduler::NodeView;
namespace idle = scheduler::idle;

// How far ahead the cost rule sees the price calendar.
constexpr absl::Duration kPriceHorizon = absl::Hours(24);

absl::StatusOr<std::unique_ptr<Fleet>> Fleet::Create(
    const std::vector<NodeView>& nodes, FleetOptions options) {
  std::vector<NodeState> states;
  for (const NodeView& v : nodes) {
    NodeState n;
    n.id = v.worker_id;
    n.gpu_type = v.devices.empty() ? "" : v.devices[0].gpu_type;
    n.gpus = static_cast<int>(v.devices.size());
    n.cpu = v.cpu_total;
    n.memory = v.memory_total;
    if (options.pricing.has_value()) {
      auto entry =
          options.pricing->Lookup(options.region, n.gpu_type, options.offering);
      if (!entry.ok()) return entry.status();
      n.price = *std::move(entry);
    }
    states.push_back(std::move(n));
  }
  return std::unique_ptr<Fleet>(
      new Fleet(std::move(states), std::move(options)));
}

Fleet::Fleet(std::vector<NodeState> nodes, FleetOptions options)
    : options_(std::move(options)), nodes_(std::move(nodes)) {
  for (size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i].id] = i;
}

double Fleet::PriceAtEpoch(int node) const {
  const NodeState& n = nodes_[node];
  return n.price ? pricing::PriceAt(*n.price, options_.epoch).ToDouble() : 0;
}

pricing::Money Fleet::CostOf(const NodeState& n, double gpus, int64_t from_ms,
                             int64_t to_ms) const {
  if (!n.price || to_ms <= from_ms || gpus <= 0) return pricing::Money();
  auto cost = pricing::Cost(*n.price, gpus, At(from_ms), At(to_ms));
  return cost.ok() ? *cost : pricing::Money();
}

void Fleet::Start(int64_t now_ms) {
  for (NodeState& n : nodes_) {
    n.power = Power::kUp;
    n.up_since_ms = now_ms;
  }
  if (options_.idle) next_decide_ms_ = now_ms;
}

void Fleet::OnJobStart(const JobPlacement& where, const JobRequest& job,
                       int64_t start_ms, int64_t end_ms) {
  idle::WorkerInfo::Release release;
  release.at = At(end_ms);
  release.gpus = job.gpus >= 1 ? static_cast<int>(job.gpus) : 0;
  release.cpu = job.cpu;
  release.memory = job.memory;
  for (const auto& a : where.nodes) {
    NodeState& n = nodes_[index_.at(a.worker_id)];
    ++n.jobs;
    job_cost_ += CostOf(n, job.gpus, start_ms, end_ms);
    n.releases[where.job_id] = release;
  }
}

void Fleet::OnJobEnd(const JobPlacement& where, int64_t end_ms) {
  for (const auto& a : where.nodes) {
    NodeState& n = nodes_[index_.at(a.worker_id)];
    --n.jobs;
    n.releases.erase(where.job_id);
    n.last_end_ms = std::max(n.last_end_ms, end_ms);
  }
}

int64_t Fleet::NextWakeMs() const {
  int64_t next = next_decide_ms_;
  for (const NodeState& n : nodes_) {
    if (n.power == Power::kBooting) next = std::min(next, n.ready_ms);
  }
  return next;
}

void Fleet::CompleteBoots(int64_t now_ms, std::vector<NodeView>* nodes) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& n = nodes_[i];
    if (n.power == Power::kBooting && n.ready_ms <= now_ms) {
      n.power = Power::kUp;
      (*nodes)[i].schedulable = true;
      (*nodes)[i].bootable = false;
    }
  }
}

void Fleet::RunPolicy(int64_t now_ms, std::vector<NodeView>* nodes,
                      const std::vector<JobRequest>& pending,
                      const std::map<int64_t, std::string>& boot_nodes) {
  // Every event may change a verdict, so the policy runs on each call, at
  // most once per decide_every; a throttled call comes back when it may.
  if (!options_.idle) return;
  boot_types_.clear();
  for (const auto& [job, node] : boot_nodes) {
    auto it = index_.find(node);
    if (it != index_.end()) boot_types_[job] = nodes_[it->second].gpu_type;
  }
  const int64_t every = absl::ToInt64Milliseconds(options_.decide_every);
  if (now_ms - last_decide_ms_ < every) {
    next_decide_ms_ = last_decide_ms_ + every;
    return;
  }
  last_decide_ms_ = now_ms;
  Decide(now_ms, nodes, pending);
}

void Fleet::Decide(int64_t now_ms, std::vector<NodeView>* nodes,
                   const std::vector<JobRequest>& pending) {
  const absl::Time now = At(now_ms);
  idle::Snapshot snap;
  std::vector<int> worker_node;  // snapshot worker -> node index
  const bool cost_rule = options_.idle->idle_shutdown.kind ==
                         idle::IdleShutdownPolicy::Kind::kCost;
  // One catalog entry per GPU type (every node shares region and offering).
  std::map<std::string, std::vector<std::pair<absl::Time, double>>> steps;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeState& n = nodes_[i];
    if (n.power != Power::kUp) continue;
    const NodeView& v = (*nodes)[i];
    idle::WorkerInfo w;
    w.id = n.id;
    w.region = options_.region;
    w.gpu_type = n.gpu_type;
    w.instance_id = n.id;
    w.joined_at = At(n.up_since_ms);
    // The policy runs only at events: a node whose job ended since its
    // last run is idle from that end, not from that run; as in the
    // scheduler, whose once-a-second cycle last saw it busy up to a second
    // before the end.
    if (n.last_end_ms >= 0) w.last_busy_at = At(n.last_end_ms - 1000);
    w.gpus_total = n.gpus;
    for (const auto& d : v.devices) w.gpus_free += d.free_share >= 1.0;
    w.cpu_free = v.cpu_free;
    w.memory_free = v.memory_free;
    // Decide() only needs to know whether jobs are there.
    for (int j = 0; j < n.jobs; ++j) w.job_ids.push_back(j + 1);
    if (cost_rule) {
      for (const auto& [job, r] : n.releases) w.releases.push_back(r);
    }
    w.price_per_gpu_hour = PriceAtEpoch(static_cast<int>(i));
    if (cost_rule && n.price) {
      auto [it, fresh] = steps.try_emplace(n.gpu_type);
      if (fresh) it->second = pricing::PriceSteps(*n.price, now, kPriceHorizon);
      w.price_steps = it->second;
    }
    snap.workers.push_back(std::move(w));
    worker_node.push_back(static_cast<int>(i));
  }
  // Whether a job fits a live worker depends on its shape only.
  using Shape = std::tuple<int, double, int64_t, std::vector<std::string>>;
  std::map<Shape, bool> fits;
  for (const JobRequest& r : pending) {
    idle::PendingJob p;
    p.job_id = r.job_id;
    p.gpus_per_node = static_cast<int>(std::ceil(r.gpus));
    p.nodes = r.nodes;
    p.cpu_per_node = r.cpu;
    p.memory_per_node = r.memory;
    p.gpu_types = r.gpu_types;
    p.pending_since = At(r.submitted_at_ms);
    auto [it, fresh] = fits.emplace(
        Shape{p.gpus_per_node, p.cpu_per_node, p.memory_per_node, p.gpu_types},
        false);
    if (fresh) it->second = idle::FitsLiveWorkers(p, snap.workers);
    p.fits_live_worker = it->second;
    if (auto boot = boot_types_.find(r.job_id); boot != boot_types_.end()) {
      p.waits_for_boot_of = boot->second;
      p.fits_live_worker = false;
    }
    snap.pending.push_back(std::move(p));
  }
  idle::Decisions d = idle::Decide(*options_.idle, snap, idle_state_, now);
  idle_state_ = std::move(d.state);
  for (const idle::ShutdownDecision& s : d.shutdowns) {
    const int i = index_.at(s.worker_id);
    StopNode(i, now_ms);
    (*nodes)[i].schedulable = false;
    (*nodes)[i].bootable = true;
  }
  for (const idle::ScaleUpRequest& up : d.scale_ups) {
    BootFor(up, pending, now_ms);
  }
  // Wake again when an idle node could next be stopped, a grace ends or a
  // waiting job could next ask for capacity.
  absl::Duration soonest = absl::InfiniteDuration();
  const auto& policy = *options_.idle;
  for (const idle::WorkerVerdict& v : d.verdicts) {
    if (v.verdict == idle::Verdict::kIdle) {
      soonest = std::min(soonest, policy.idle_shutdown.idle_after - v.idle);
    } else if (v.verdict == idle::Verdict::kMinUptime) {
      const NodeState& n = nodes_[index_.at(v.worker_id)];
      soonest = std::min(
          soonest, At(n.up_since_ms) + policy.idle_shutdown.MinUptime() - now);
    } else if (v.verdict == idle::Verdict::kWarmPays) {
      // The rule's answer changes as the pool's silence grows.
      soonest = std::min(soonest, options_.decide_every);
    } else if (v.verdict == idle::Verdict::kGrace) {
      soonest = std::min(soonest, policy.idle_shutdown.grace);
    }
  }
  if (policy.scale_up.enabled && !pending.empty()) {
    soonest = std::min(soonest, policy.scale_up.pending_after);
  }
  next_decide_ms_ =
      soonest == absl::InfiniteDuration()
          ? kNever
          : now_ms + std::max<int64_t>(1, absl::ToInt64Milliseconds(soonest));
}

void Fleet::CloseUp(NodeState& n, int64_t end_ms) {
  fleet_cost_ += CostOf(n, n.gpus, n.up_since_ms, end_ms);
  node_ms_ += static_cast<double>(std::max<int64_t>(0, end_ms - n.up_since_ms));
  n.power = Power::kDown;
}

void Fleet::StopNode(int i, int64_t now_ms) {
  CloseUp(nodes_[i], now_ms);
  ++shutdowns_;
}

void Fleet::BootFor(const idle::ScaleUpRequest& up,
                    const std::vector<JobRequest>& pending, int64_t now_ms) {
  // Each node of each asked job gets one node that can hold it (enough
  // GPUs, CPU and memory when empty): a node already booting, else a
  // stopped one of the asked pool, else of the other types the job accepts
  // (any type when it accepts any), cheapest first. A 1-node 8-GPU job
  // needs one 8-GPU node, not four 2-GPU ones; a job asking for 64 cores
  // does not boot a 32-core node.
  std::vector<bool> claimed(nodes_.size(), false);
  const int64_t boot_ms = absl::ToInt64Milliseconds(options_.boot_time);
  for (const JobRequest& r : pending) {
    if (std::find(up.job_ids.begin(), up.job_ids.end(), r.job_id) ==
        up.job_ids.end()) {
      continue;
    }
    const int need = static_cast<int>(std::ceil(r.gpus));
    // A job waiting for a cheaper node takes only that node's type.
    auto boot = boot_types_.find(r.job_id);
    auto accepts = [&](const NodeState& n) {
      if (boot != boot_types_.end() && n.gpu_type != boot->second) return false;
      return n.gpus >= need && n.cpu >= r.cpu && n.memory >= r.memory &&
             (r.gpu_types.empty() ||
              std::find(r.gpu_types.begin(), r.gpu_types.end(), n.gpu_type) !=
                  r.gpu_types.end());
    };
    int nodes = r.nodes;
    std::vector<int> candidates;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const NodeState& n = nodes_[i];
      if (claimed[i] || !accepts(n)) continue;
      if (n.power == Power::kBooting && nodes > 0) {
        claimed[i] = true;
        --nodes;
      } else if (n.power == Power::kDown) {
        candidates.push_back(static_cast<int>(i));
      }
    }
    std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      const bool asked_a = nodes_[a].gpu_type == up.gpu_type;
      const bool asked_b = nodes_[b].gpu_type == up.gpu_type;
      if (asked_a != asked_b) return asked_a;
      return PriceAtEpoch(a) * nodes_[a].gpus <
             PriceAtEpoch(b) * nodes_[b].gpus;
    });
    for (int i : candidates) {
      if (nodes <= 0) break;
      NodeState& n = nodes_[i];
      n.power = Power::kBooting;
      n.up_since_ms = now_ms;  // billed from launch
      n.ready_ms = now_ms + boot_ms;
      claimed[i] = true;
      --nodes;
      ++boots_;
    }
  }
}

FleetReport Fleet::Finish(int64_t end_ms) {
  for (NodeState& n : nodes_) {
    if (n.power != Power::kDown) CloseUp(n, end_ms);
  }
  FleetReport r;
  if (options_.pricing) r.currency = options_.pricing->currency();
  r.job_cost = job_cost_;
  r.fleet_cost = fleet_cost_;
  r.idle_cost = fleet_cost_ - job_cost_;
  r.shutdowns = shutdowns_;
  r.boots = boots_;
  r.node_hours = node_ms_ / 3.6e6;
  return r;
}

}  // namespace tupa::sim

#include "scheduler/placement/placement.h"

#include <algorithm>
#include <climits>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "scheduler/placement/cluster_state.h"
#include "scheduler/placement/gang.h"
#include "scheduler/placement/queue_order.h"
#include "scheduler/placement/reservation.h"

namespace tupa::scheduler {
namespace {

// Enough for any realistic mix; the rarest shapes beyond it barely move the
// expectation and would cost time on every score.
constexpr int kMaxMixShapes = 128;

std::vector<RequestShape> MixOf(const std::vector<JobRequest>& pending) {
  std::vector<RequestShape> mix;
  mix.reserve(pending.size());
  for (const JobRequest& job : pending) {
    mix.push_back({job.gpus, job.cpu, job.memory, job.gpu_types,
                   static_cast<double>(std::max(1, job.nodes))});
  }
  return mix;
}

// A job that failed now means any job asking at least as much (same GPU
// shape, filter and gang size, no labels) fails too: resources only shrink
// during a pass. Keeps a full cluster cheap to scan.
class FailureCache {
 public:
  using Key = std::tuple<int, int, uint64_t, int, bool>;

  static std::optional<Key> KeyOf(const Demand& d, const JobRequest& job,
                                  bool blocked) {
    if (!job.labels.empty()) return std::nullopt;
    return Key{d.milli, d.count, d.types, d.nodes, blocked};
  }
  std::optional<PendingReason> Lookup(const Key& key, const Demand& d) const {
    auto it = failed_.find(key);
    if (it == failed_.end()) return std::nullopt;
    for (const auto& [cpu, mem, reason] : it->second) {
      if (d.cpu_milli >= cpu && d.memory >= mem) return reason;
    }
    return std::nullopt;
  }
  void Add(const Key& key, const Demand& d, PendingReason reason) {
    failed_[key].emplace_back(d.cpu_milli, d.memory, reason);
  }
  void Clear() { failed_.clear(); }

 private:
  std::map<Key, std::vector<std::tuple<int64_t, int64_t, PendingReason>>>
      failed_;
};

// Orders `releases` by end, earliest first (what Reserve and
// EstimateStarts expect).
void SortByEnd(std::vector<Release>* releases) {
  std::sort(
      releases->begin(), releases->end(),
      [](const Release& a, const Release& b) { return a.end_ms < b.end_ms; });
}

// Appends the release of `job`, placed by this pass as `placement`; its
// RunningJob is kept in `placed` (a deque: addresses stay valid).
void AddPlacedRelease(const JobRequest& job, const JobPlacement& placement,
                      int64_t now_ms, std::deque<RunningJob>* placed,
                      std::vector<Release>* releases) {
  RunningJob& r = placed->emplace_back();
  r.job_id = job.job_id;
  r.gpus = job.gpus;
  r.cpu = job.cpu;
  r.memory = job.memory;
  r.team = job.team;
  for (const NodeAssignment& a : placement.nodes) {
    r.worker_ids.push_back(a.worker_id);
  }
  if (placement.nodes.size() == 1) {
    r.device_indexes = placement.nodes[0].device_indexes;
  }
  releases->push_back(
      {job.max_runtime_s > 0 ? now_ms + job.max_runtime_s * 1000 : kUnknownEnd,
       &r});
}

JobPlacement ToPlacement(const ClusterState& state, int64_t job_id,
                         const GangAttempt& attempt) {
  JobPlacement placement;
  placement.job_id = job_id;
  for (size_t rank = 0; rank < attempt.choices.size(); ++rank) {
    const NodeChoice& c = attempt.choices[rank];
    NodeAssignment a;
    a.worker_id = state.WorkerId(c.node);
    a.node_rank = static_cast<int>(rank);
    a.device_indexes = c.device_indexes;
    a.share = c.milli > 0 && c.milli < kMilliPerGpu
                  ? static_cast<double>(c.milli) / kMilliPerGpu
                  : 1.0;
    placement.nodes.push_back(std::move(a));
  }
  return placement;
}

// Whether the long single-node `job`, placed by `attempt`, should rather
// wait for a bootable node that costs less to keep up, booting included,
// than the node it got (its run is [run_from_ms, run_until_ms)). If so,
// fills `info` (kWaitsForBoot, the node, its start).
bool WaitForBoot(const ClusterState& state, const Demand& demand,
                 const JobRequest& job, const GangAttempt& attempt,
                 const PlacementOptions& options, PendingInfo* info) {
  const int64_t boot_ms = options.boot_time_s * 1000;
  auto boot = state.CheapestBootable(demand, job.labels, demand.run_from_ms,
                                     demand.run_until_ms, boot_ms);
  if (!boot.has_value() ||
      boot->cost >= state.KeepUpCost(attempt.choices[0].node,
                                     demand.run_from_ms, demand.run_until_ms)) {
    return false;
  }
  info->reason = PendingReason::kWaitsForBoot;
  info->boot_node = state.WorkerId(boot->node);
  info->estimated_start_ms = options.now_ms + boot_ms;
  return true;
}

// Whether the long single-node `job`, placed by `attempt`, should rather
// wait for a live node that frees up within the boot time (a job on it
// ends) and costs less to keep up for the job's run than the node it got:
// at most `kCheaperShare` of it. `releases`: the running jobs' ends,
// in any order. Fills `info` (kWaitsForRelease, the expected start).
constexpr double kCheaperShare = 0.8;

// `demand` with a run from now for `runtime_s` (what keep-up costs are
// priced over; a long or lone job's).
Demand WithRun(Demand demand, int64_t now_ms, int64_t runtime_s) {
  demand.run_from_ms = now_ms;
  demand.run_until_ms = now_ms + runtime_s * 1000;
  return demand;
}

// Per node, whether keeping it up for `demand`'s run costs less than
// `below` (and it is in `within`, when given).
std::vector<char> CheaperToKeepUp(const ClusterState& state,
                                  const Demand& demand, double below,
                                  const std::vector<char>* within) {
  std::vector<char> cheaper(state.num_nodes(), 0);
  for (int n = 0; n < state.num_nodes(); ++n) {
    cheaper[n] =
        (within == nullptr || (*within)[n]) &&
        state.KeepUpCost(n, demand.run_from_ms, demand.run_until_ms) < below;
  }
  return cheaper;
}

bool WaitForRelease(const ClusterState& state, const Demand& demand,
                    const JobRequest& job, const GangAttempt& attempt,
                    const std::vector<Release>& releases,
                    const PlacementOptions& options, PendingInfo* info) {
  const int64_t boot_ms = options.boot_time_s * 1000;
  const auto ends_soon = [&](const Release& r) {
    return r.end_ms <= options.now_ms + boot_ms;
  };
  if (std::none_of(releases.begin(), releases.end(), ends_soon)) return false;
  const std::vector<char> cheaper = CheaperToKeepUp(
      state, demand,
      kCheaperShare * state.KeepUpCost(attempt.choices[0].node,
                                       demand.run_from_ms, demand.run_until_ms),
      nullptr);
  // Only a release on a cheaper node can make room where the job may go.
  std::vector<Release> soon;
  for (const Release& r : releases) {
    if (!ends_soon(r)) continue;
    for (const std::string& worker : r.job->worker_ids) {
      const int n = state.NodeIndex(worker);
      if (n >= 0 && cheaper[n]) {
        soon.push_back(r);
        break;
      }
    }
  }
  if (soon.empty()) return false;
  SortByEnd(&soon);
  SearchFilter filter;
  if (!job.labels.empty()) filter.labels = &job.labels;
  filter.only = &cheaper;
  const Reservation r = Reserve(state, soon, demand, filter);
  if (!r.active || r.start_ms <= 0) return false;
  info->reason = PendingReason::kWaitsForRelease;
  info->estimated_start_ms = r.start_ms;
  return true;
}

// Whether the long single-node `job`, placed by `attempt`, waits for a
// cheaper node instead: a boot (WaitForBoot), else a release
// (WaitForRelease). Only with a boot time; a job pending for twice the
// boot time waits no more: a boot that has not come by then (a hook that
// failed, a region out of capacity) is not coming.
bool WaitForCheaperNode(const ClusterState& state, const Demand& demand,
                        const JobRequest& job, const GangAttempt& attempt,
                        const std::vector<Release>& releases,
                        const PlacementOptions& options, PendingInfo* info) {
  const int64_t boot_ms = options.boot_time_s * 1000;
  if (boot_ms <= 0 || demand.run_until_ms <= 0 || attempt.choices.size() != 1 ||
      options.now_ms - job.submitted_at_ms >= 2 * boot_ms) {
    return false;
  }
  return WaitForBoot(state, demand, job, attempt, options, info) ||
         WaitForRelease(state, demand, job, attempt, releases, options, info);
}

// Whether `job`, placed by `attempt`, is a lone job
// (PlacementOptions::lone_job_runtime_s): a single-node job of at least
// that max_runtime, not a long job, on a node nothing else holds up.
bool IsLoneJob(const ClusterState& state, const Demand& demand,
               const JobRequest& job, const GangAttempt& attempt,
               const PlacementOptions& options) {
  return options.policy == PlacementOptions::Policy::kTupa &&
         options.lone_job_runtime_s > 0 && demand.run_until_ms <= 0 &&
         job.nodes == 1 && attempt.choices.size() == 1 &&
         job.max_runtime_s >= options.lone_job_runtime_s &&
         state.HeldUntil(attempt.choices[0].node) <= options.now_ms;
}

// The lone job of `attempt` placed again by keep-up cost (the first key of
// a long job's search; ClusterState::CostKey) among the nodes that cost
// less to keep up for its run than the one it took; `attempt` as it is
// when there are none or none fits.
GangAttempt PlaceByKeepUpCost(ClusterState* state, const Demand& demand,
                              const JobRequest& job, const GangAttempt& attempt,
                              const SearchFilter& filter,
                              const PlacementOptions& options) {
  const Demand by_cost = WithRun(demand, options.now_ms, job.max_runtime_s);
  const std::vector<char> cheaper = CheaperToKeepUp(
      *state, by_cost,
      state->KeepUpCost(attempt.choices[0].node, by_cost.run_from_ms,
                        by_cost.run_until_ms),
      filter.only);
  if (std::none_of(cheaper.begin(), cheaper.end(), [](char c) { return c; }))
    return attempt;
  UndoGang(state, attempt);
  SearchFilter among = filter;
  among.only = &cheaper;
  GangAttempt placed = PlaceGang(state, by_cost, among);
  return placed.placed ? placed : PlaceGang(state, demand, filter);
}

// The demand of `job`; a long job's carries its run
// (PlacementOptions::long_job_runtime_s).
std::optional<Demand> DemandOf(const ClusterState& state, const JobRequest& job,
                               const PlacementOptions& options) {
  auto demand =
      state.MakeDemand(job.gpus, job.cpu, job.memory, job.gpu_types, job.nodes);
  if (demand.has_value() && options.long_job_runtime_s > 0 &&
      job.max_runtime_s >= options.long_job_runtime_s) {
    demand = WithRun(*demand, options.now_ms, job.max_runtime_s);
  }
  return demand;
}

// The single-node long jobs of the top priority in `pending`, oldest first
// (indexes); empty when long jobs are off.
std::vector<int> LongJobsAtTopPriority(const std::vector<JobRequest>& pending,
                                       const PlacementOptions& options) {
  std::vector<int> longs;
  if (options.long_job_runtime_s <= 0) return longs;
  int top = INT_MIN;
  for (const JobRequest& j : pending) top = std::max(top, j.priority);
  for (size_t i = 0; i < pending.size(); ++i) {
    const JobRequest& j = pending[i];
    if (j.priority == top && j.nodes == 1 &&
        j.max_runtime_s >= options.long_job_runtime_s) {
      longs.push_back(static_cast<int>(i));
    }
  }
  std::sort(longs.begin(), longs.end(), [&](int a, int b) {
    return std::make_pair(pending[a].submitted_at_ms, pending[a].job_id) <
           std::make_pair(pending[b].submitted_at_ms, pending[b].job_id);
  });
  return longs;
}

// The long-jobs-first phase of a pass (PlaceJobs): the single-node long
// jobs of the top priority, oldest first, each placed where it fits now
// (by keep-up cost, ClusterState::CostKey) unless it would take a node in
// `avoid` (reserved by the plain pass for a waiting job) or should wait
// for a boot or a release (the queue loop then says so). Marks each one
// placed in `placed_first`.
void PlaceLongJobsFirst(ClusterState* state,
                        const std::vector<JobRequest>& pending,
                        const PlacementOptions& options,
                        const std::vector<char>& avoid, PlacementPlan* plan,
                        std::deque<RunningJob>* placed,
                        std::vector<Release>* releases,
                        std::vector<char>* placed_first) {
  for (int idx : LongJobsAtTopPriority(pending, options)) {
    const JobRequest& job = pending[idx];
    const std::optional<Demand> demand = DemandOf(*state, job, options);
    if (!demand.has_value()) continue;
    SearchFilter filter;
    if (!job.labels.empty()) filter.labels = &job.labels;
    if (!avoid.empty()) filter.blocked = &avoid;
    GangAttempt attempt = PlaceGang(state, *demand, filter);
    if (!attempt.placed) continue;
    PendingInfo unused;
    if (WaitForCheaperNode(*state, *demand, job, attempt, *releases, options,
                           &unused)) {
      UndoGang(state, attempt);
      continue;
    }
    plan->placed.push_back(ToPlacement(*state, job.job_id, attempt));
    AddPlacedRelease(job, plan->placed.back(), options.now_ms, placed,
                     releases);
    for (const NodeChoice& c : attempt.choices) {
      state->HoldUntil(c.node, releases->back().end_ms);
    }
    (*placed_first)[idx] = 1;
  }
}

}  // namespace

const char* PendingReasonName(PendingReason reason) {
  switch (reason) {
    case PendingReason::kNone:
      return "NONE";
    case PendingReason::kNoFitNow:
      return "NO_FIT_NOW";
    case PendingReason::kGangIncomplete:
      return "GANG_INCOMPLETE";
    case PendingReason::kBehindPriority:
      return "BEHIND_PRIORITY";
    case PendingReason::kNoSuchGpuType:
      return "NO_SUCH_GPU_TYPE";
    case PendingReason::kNeverFits:
      return "NEVER_FITS";
    case PendingReason::kWaitsForBoot:
      return "WAITS_FOR_BOOT";
    case PendingReason::kWaitsForRelease:
      return "WAITS_FOR_RELEASE";
  }
  return "UNKNOWN";
}

PendingReason CheckEverFits(const std::vector<NodeView>& nodes,
                            const JobRequest& job) {
  ClusterState state(nodes, PlacementOptions::Policy::kFirstFit);
  auto demand =
      state.MakeDemand(job.gpus, job.cpu, job.memory, job.gpu_types, job.nodes);
  if (!demand.has_value()) return PendingReason::kNeverFits;
  return state.EverFits(*demand, job.labels);
}

namespace {

PlacementPlan PlacePass(const std::vector<NodeView>& nodes,
                        const std::vector<JobRequest>& pending,
                        const std::vector<RunningJob>& running,
                        const PlacementOptions& options,
                        const std::vector<char>* long_first_avoid,
                        std::vector<char>* reserved_out) {
  PlacementPlan plan;
  ClusterState state(nodes, options.policy);
  if (UsesRequestMix(options.policy)) {
    state.SetRequestMix(
        options.request_mix.empty() ? MixOf(pending) : options.request_mix,
        kMaxMixShapes);
  }
  std::vector<Release> releases;
  releases.reserve(running.size() + pending.size());
  std::deque<RunningJob> placed_jobs;  // what `releases` of placed jobs hold
  for (const RunningJob& r : running) {
    // A job past its expected end is being stopped: it ends any moment,
    // not in the past (start estimates are never earlier than now).
    releases.push_back({r.expected_end_ms > 0
                            ? std::max(r.expected_end_ms, options.now_ms)
                            : kUnknownEnd,
                        &r});
    for (const std::string& worker : r.worker_ids) {
      const int node = state.NodeIndex(worker);
      if (node >= 0) state.HoldUntil(node, releases.back().end_ms);
    }
  }
  QueueOrder order(pending, running);
  Reservation reservation;
  bool blocked_all = false;  // no backfill: nothing passes the first waiter
  std::vector<char> blocked(state.num_nodes(), 0);
  FailureCache failures;
  std::map<std::tuple<int, int, uint64_t, int, int64_t, int64_t>, PendingReason>
      ever_fits;
  std::vector<int> waiting;  // unplaced, in queue order
  std::vector<std::optional<Demand>> demands(pending.size());

  std::vector<char> placed_first(pending.size(), 0);
  if (long_first_avoid != nullptr) {
    PlaceLongJobsFirst(&state, pending, options, *long_first_avoid, &plan,
                       &placed_jobs, &releases, &placed_first);
  }
  for (int idx = order.Next(); idx >= 0; idx = order.Next()) {
    const JobRequest& job = pending[idx];
    if (placed_first[idx]) {
      order.OnPlaced(idx);
      continue;
    }
    PendingInfo info;
    info.jobs_ahead = static_cast<int>(waiting.size());
    demands[idx] = DemandOf(state, job, options);
    const std::optional<Demand>& demand = demands[idx];
    info.reason = PendingReason::kNeverFits;
    if (demand.has_value() && job.labels.empty()) {
      // Cached: the answer depends on the request only.
      const auto key =
          std::make_tuple(demand->milli, demand->count, demand->types,
                          demand->nodes, demand->cpu_milli, demand->memory);
      auto it = ever_fits.find(key);
      if (it == ever_fits.end()) {
        it = ever_fits.emplace(key, state.EverFits(*demand, job.labels)).first;
      }
      info.reason = it->second;
    } else if (demand.has_value()) {
      info.reason = state.EverFits(*demand, job.labels);
    }
    if (info.reason != PendingReason::kNone) {
      plan.pending[job.job_id] = info;  // waiting on nothing we can change
      continue;
    }
    const bool ends_in_time =
        reservation.start_ms > 0 && job.max_runtime_s > 0 &&
        options.now_ms + job.max_runtime_s * 1000 <= reservation.start_ms;
    const bool use_block = reservation.active && !ends_in_time;
    SearchFilter filter;
    if (!job.labels.empty()) filter.labels = &job.labels;
    if (use_block) filter.blocked = &blocked;
    const auto key = FailureCache::KeyOf(*demand, job, use_block);
    std::optional<PendingReason> cached;
    if (key.has_value()) cached = failures.Lookup(*key, *demand);
    if (!cached.has_value() && !blocked_all) {
      GangAttempt attempt;
      if (ends_in_time && reservation.active &&
          options.policy == PlacementOptions::Policy::kTupa) {
        // It leaves before the reserved job starts, so the reserved nodes
        // cost nothing to use, and every other node stays open for jobs
        // that would run past the reservation.
        SearchFilter reserved = filter;
        reserved.only = &blocked;
        attempt = PlaceGang(&state, *demand, reserved);
      }
      if (!attempt.placed) attempt = PlaceGang(&state, *demand, filter);
      if (attempt.placed && IsLoneJob(state, *demand, job, attempt, options)) {
        attempt =
            PlaceByKeepUpCost(&state, *demand, job, attempt, filter, options);
      }
      if (attempt.placed && WaitForCheaperNode(state, *demand, job, attempt,
                                               releases, options, &info)) {
        UndoGang(&state, attempt);
        plan.pending[job.job_id] = info;
        continue;
      }
      if (attempt.placed) {
        plan.placed.push_back(ToPlacement(state, job.job_id, attempt));
        AddPlacedRelease(job, plan.placed.back(), options.now_ms, &placed_jobs,
                         &releases);
        for (const NodeChoice& c : attempt.choices) {
          state.HoldUntil(c.node, releases.back().end_ms);
        }
        order.OnPlaced(idx);
        continue;
      }
      info.reason = attempt.ranks_found > 0 && demand->nodes > 1
                        ? PendingReason::kGangIncomplete
                        : PendingReason::kNoFitNow;
    } else if (cached.has_value()) {
      info.reason = *cached;
    }
    if (blocked_all || (use_block && !cached.has_value())) {
      // Would it start but for the job reserved ahead of it?
      SearchFilter open = filter;
      open.blocked = nullptr;
      GangAttempt dry = PlaceGang(&state, *demand, open);
      if (dry.placed) {
        UndoGang(&state, dry);
        info.reason = PendingReason::kBehindPriority;
      } else if (blocked_all) {
        info.reason = dry.ranks_found > 0 && demand->nodes > 1
                          ? PendingReason::kGangIncomplete
                          : PendingReason::kNoFitNow;
      }
    }
    if (key.has_value() && !cached.has_value() && !blocked_all) {
      failures.Add(*key, *demand, info.reason);
    }
    if (!reservation.active && !blocked_all) {
      SortByEnd(&releases);
      SearchFilter reserve_filter;
      if (!job.labels.empty()) reserve_filter.labels = &job.labels;
      reservation = Reserve(state, releases, *demand, reserve_filter);
      for (int n : reservation.nodes) blocked[n] = 1;
      info.estimated_start_ms = reservation.start_ms;
      blocked_all = !options.backfill;
      failures.Clear();
    }
    plan.pending[job.job_id] = info;
    waiting.push_back(idx);
  }

  // Start estimates for the first waiters.
  std::vector<StartEstimate> estimates;
  std::vector<int64_t> ids;
  for (int idx : waiting) {
    if (static_cast<int>(estimates.size()) >= options.max_estimates) break;
    const JobRequest& job = pending[idx];
    if (plan.pending[job.job_id].estimated_start_ms > 0) continue;
    StartEstimate e;
    e.demand = *demands[idx];
    if (!job.labels.empty()) e.filter.labels = &job.labels;
    estimates.push_back(e);
    ids.push_back(job.job_id);
  }
  if (!estimates.empty()) {
    SortByEnd(&releases);
    EstimateStarts(state, releases, &estimates);
  }
  for (size_t i = 0; i < estimates.size(); ++i) {
    PendingInfo& info = plan.pending[ids[i]];
    info.estimated_start_ms = estimates[i].start_ms;
    if (info.reason == PendingReason::kBehindPriority &&
        info.estimated_start_ms > 0) {
      info.estimated_start_ms =
          std::max(info.estimated_start_ms, reservation.start_ms);
    }
  }
  if (reserved_out != nullptr) *reserved_out = std::move(blocked);
  return plan;
}

// Whether the long-jobs-first phase could change the pass: kTupa, and a
// single-node long job at the top priority with another job pending beside
// it (alone, it is first anyway).
bool LongJobsFirstMayHelp(const std::vector<JobRequest>& pending,
                          const PlacementOptions& options) {
  return options.policy == PlacementOptions::Policy::kTupa &&
         pending.size() >= 2 &&
         !LongJobsAtTopPriority(pending, options).empty();
}

}  // namespace

PlacementPlan PlaceJobs(std::vector<NodeView> nodes,
                        const std::vector<JobRequest>& pending,
                        const std::vector<RunningJob>& running,
                        const PlacementOptions& options) {
  std::vector<char> reserved;
  PlacementPlan plain =
      PlacePass(nodes, pending, running, options, nullptr, &reserved);
  if (!LongJobsFirstMayHelp(pending, options)) return plain;
  // Again with the long jobs first, kept off the nodes the plain pass
  // reserved for the job at the head of the queue.
  return PlacePass(nodes, pending, running, options, &reserved, nullptr);
}

}  // namespace tupa::scheduler

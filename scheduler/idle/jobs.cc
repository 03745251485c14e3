#include "scheduler/idle/jobs.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/quantity.h"

namespace tupa::scheduler::idle {
namespace {

// The region where `gpu_type` is cheapest among live workers ("" if none
// runs it; ties go to the first region in name order).
std::string CheapestRegion(const Snapshot& s, const std::string& gpu_type) {
  std::map<std::string, double> price;  // region -> lowest price
  for (const WorkerInfo& w : s.workers) {
    if (w.gpu_type != gpu_type) continue;
    auto [it, added] = price.emplace(w.region, w.price_per_gpu_hour);
    if (!added) it->second = std::min(it->second, w.price_per_gpu_hour);
  }
  std::string best;
  double best_price = 0;
  for (const auto& [region, p] : price) {
    if (best.empty() || p < best_price) {
      best = region;
      best_price = p;
    }
  }
  return best;
}

std::string Needs(const PendingJob& j) {
  return absl::StrCat(
      j.nodes, j.nodes == 1 ? " node x " : " nodes x ", j.gpus_per_node,
      " GPUs",
      j.gpu_types.empty()
          ? ""
          : absl::StrCat(" of ", absl::StrJoin(j.gpu_types, "|")));
}

// The room live workers will have by a time: free now plus what running
// jobs give back by then. Taken by pending jobs in order (Take).
class RoomSoon {
 public:
  RoomSoon(const std::vector<WorkerInfo>& workers, absl::Time by) {
    for (const WorkerInfo& w : workers) {
      if (w.state != WorkerInfo::State::kUp) continue;
      WorkerInfo soon = w;
      for (const WorkerInfo::Release& r : w.releases) {
        if (r.at > by) continue;
        soon.gpus_free += r.gpus;
        soon.cpu_free += r.cpu;
        soon.memory_free += r.memory;
      }
      soon.releases.clear();
      workers_.push_back(std::move(soon));
    }
  }

  // Takes room for every node of `job` (the fullest workers that fit
  // first); false, taking nothing, when it does not fit.
  bool Take(const PendingJob& job) {
    if (FitsNowhere(job)) return false;
    std::vector<int> fit;
    for (int i = 0; i < static_cast<int>(workers_.size()); ++i) {
      if (PendingJobCanUse(job, workers_[i])) fit.push_back(i);
    }
    if (static_cast<int>(fit.size()) < job.nodes) {
      failed_.insert(ShapeOf(job));
      return false;
    }
    std::partial_sort(fit.begin(), fit.begin() + job.nodes, fit.end(),
                      [&](int a, int b) {
                        return workers_[a].gpus_free < workers_[b].gpus_free;
                      });
    for (int k = 0; k < job.nodes; ++k) {
      WorkerInfo& w = workers_[fit[k]];
      w.gpus_free -= job.gpus_per_node;
      w.cpu_free -= job.cpu_per_node;
      w.memory_free -= job.memory_per_node;
    }
    return true;
  }

 private:
  using Shape = std::tuple<int, int, double, int64_t, std::vector<std::string>,
                           std::map<std::string, std::string>>;
  static Shape ShapeOf(const PendingJob& j) {
    return {j.gpus_per_node,   j.nodes,     j.cpu_per_node,
            j.memory_per_node, j.gpu_types, j.labels};
  }
  // Room only shrinks, so a shape that found none finds none later.
  bool FitsNowhere(const PendingJob& job) const {
    return failed_.count(ShapeOf(job)) > 0;
  }

  std::vector<WorkerInfo> workers_;
  std::set<Shape> failed_;
};

}  // namespace

void DecideScaleUps(const ScaleUpPolicy& policy, absl::Duration room_within,
                    const Snapshot& snapshot, const PolicyState& previous,
                    absl::Time now, Decisions* d) {
  if (!policy.enabled) return;
  std::optional<RoomSoon> room;  // built for the first job that would ask
  std::map<std::pair<std::string, std::string>, ScaleUpRequest> by_pool;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> why;
  for (const PendingJob& j : snapshot.pending) {
    const bool boot = !j.waits_for_boot_of.empty();
    if (j.fits_live_worker && !boot) continue;
    // Room soon is for jobs that would take a live worker; one that waits
    // for a boot of a cheaper type asks for it whatever frees up.
    if (room_within > absl::ZeroDuration() && !boot) {
      if (!room) room.emplace(snapshot.workers, now + room_within);
      if (room->Take(j)) continue;
    }
    const absl::Time since = std::min(j.pending_since, now);
    const absl::Duration waited =
        since == absl::InfinitePast() ? absl::ZeroDuration() : now - since;
    if (waited < policy.pending_after && !boot) continue;
    auto asked = previous.scale_up_asked.find(j.job_id);
    if (asked != previous.scale_up_asked.end() &&
        now - asked->second <
            std::max(policy.pending_after, kMinScaleUpRepeat)) {
      d->state.scale_up_asked[j.job_id] = asked->second;
      continue;
    }
    d->state.scale_up_asked[j.job_id] = now;
    const std::string type = boot                  ? j.waits_for_boot_of
                             : j.gpu_types.empty() ? ""
                                                   : j.gpu_types.front();
    const std::string region =
        type.empty() ? "" : CheapestRegion(snapshot, type);
    ScaleUpRequest& r = by_pool[{region, type}];
    r.region = region;
    r.gpu_type = type;
    r.gpus_needed += j.gpus_per_node * j.nodes;
    r.job_ids.push_back(j.job_id);
    why[{region, type}].push_back(absl::StrCat(
        "job ", j.job_id, " pending ", HumanDuration(waited), " needs ",
        Needs(j),
        boot ? absl::StrCat(" (a long job: a stopped ", type,
                            " worker costs less to keep up than the live "
                            "one it fits)")
             : ""));
  }
  for (auto& [key, r] : by_pool) {
    r.reason =
        absl::StrCat("fits no live worker: ", absl::StrJoin(why[key], "; "));
    d->scale_ups.push_back(std::move(r));
  }
}

void DecideZombies(const ZombieJobPolicy& policy, double threshold,
                   const Snapshot& snapshot, const PolicyState& previous,
                   absl::Time now, Decisions* d) {
  if (!policy.enabled) return;
  for (const RunningJob& j : snapshot.running) {
    if (!j.activity.has_value() || *j.activity >= threshold) continue;
    auto low = previous.low_activity_since.find(j.job_id);
    const absl::Time since =
        low == previous.low_activity_since.end() ? now : low->second;
    d->state.low_activity_since[j.job_id] = since;
    const absl::Duration low_for = now - since;
    if (low_for < policy.after) continue;
    auto reported = previous.zombies.find(j.job_id);
    if (reported != previous.zombies.end()) {
      d->state.zombies[j.job_id] = reported->second;
      continue;
    }
    d->state.zombies[j.job_id] = now;
    ZombieJob z;
    z.job_id = j.job_id;
    z.worker_ids = j.worker_ids;
    z.action = policy.action;
    z.low_for = low_for;
    z.reason =
        absl::StrFormat("devices below %g activity for %s (peak now %.2f)",
                        threshold, HumanDuration(low_for), *j.activity);
    d->zombies.push_back(std::move(z));
  }
}

}  // namespace tupa::scheduler::idle

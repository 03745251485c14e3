// The rented side of a replay: which nodes are up, what they cost, and the
// scheduler's own idle policy (idle::Decide) stopping idle nodes and booting
// stopped ones for jobs that wait.
//
// Money follows the scheduler's rules (pricing::Cost, with off-peak
// windows): a job costs its GPUs (shares count as their fraction) times the
// node's price over [start, end); the fleet costs every GPU of every node
// while it is up, from the first arrival (or from its boot request) until
// the idle policy stops it or the replay ends. Idle cost = fleet - jobs:
// what was paid for GPUs no job held.
//
// The idle policy sees what the scheduler would: live workers with their
// free devices and jobs (no device activity: emulated nodes are busy
// exactly while they hold a job), and the pending jobs. A shutdown makes the
// node unschedulable at once; a scale-up request boots, for each node of
// each of its jobs, one stopped node that can hold it (enough GPUs, CPU and
// memory when empty), of the asked pool, then of the other GPU types the
// job accepts (any type when it accepts any), cheapest first, unless a
// booting node already can; they become schedulable `boot_time` later. Without
// an idle policy every node stays up. Replay time is in ms from `epoch`. Not
// thread-safe.
#ifndef TUPA_SCHEDULER_SIM_REPLAY_FLEET_H_
#define TUPA_SCHEDULER_SIM_REPLAY_FLEET_H_

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/idle/decide.h"
#include "scheduler/idle/policy.h"
#include "scheduler/placement/placement.h"
#include "scheduler/pricing/money.h"
#include "scheduler/pricing/price_catalog.h"

namespace tupa::sim {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

struct FleetOptions {
  std::optional<pricing::PriceCatalog> pricing;     // none: no money figures
  std::optional<scheduler::idle::IdlePolicy> idle;  // none: nodes stay up
  std::string region = "sa-east-1";    // of every node (openb has none)
  std::string offering = "on-demand";  // of every node
  absl::Time epoch = absl::FromUnixSeconds(1767582000);  // Mon 5 Jan 2026
                                                         // 00:00 in Sao Paulo
  absl::Duration boot_time = absl::Minutes(3);
  // The idle policy runs at most this often (the scheduler: once a second),
  // and again when a node could next change verdict.
  absl::Duration decide_every = absl::Seconds(30);
};

struct FleetReport {
  std::string currency;  // empty without pricing
  pricing::Money job_cost, fleet_cost, idle_cost;
  int shutdowns = 0;
  int boots = 0;
  double node_hours = 0;  // sum over nodes of hours up
};

class Fleet {
 public:
  // NotFound naming region, GPU type and offering when a node has no price.
  static absl::StatusOr<std::unique_ptr<Fleet>> Create(
      const std::vector<scheduler::NodeView>& nodes, FleetOptions options);

  // The price of one GPU-hour of `node` at the epoch (0 without pricing),
  // for NodeView::price_per_gpu_hour.
  double PriceAtEpoch(int node) const;
  // Every node goes up at `now_ms` (the first arrival).
  void Start(int64_t now_ms);
  // `job` starts on `where` and ends at `end_ms` (known to the policy as
  // its nodes' releases).
  void OnJobStart(const scheduler::JobPlacement& where,
                  const scheduler::JobRequest& job, int64_t start_ms,
                  int64_t end_ms);
  void OnJobEnd(const scheduler::JobPlacement& where, int64_t end_ms);
  // Makes the nodes whose boot has finished by `now_ms` schedulable in
  // `nodes`. Call before placing jobs.
  void CompleteBoots(int64_t now_ms, std::vector<scheduler::NodeView>* nodes);
  // When due, runs the idle policy on `nodes` (stopped nodes it marks not
  // schedulable and bootable) and the jobs still `pending` after placement;
  // `boot_nodes`: the long jobs placement holds for a stopped node
  // (PendingReason::kWaitsForBoot), job id -> that node.
  void RunPolicy(int64_t now_ms, std::vector<scheduler::NodeView>* nodes,
                 const std::vector<scheduler::JobRequest>& pending,
                 const std::map<int64_t, std::string>& boot_nodes = {});
  // When CompleteBoots() or RunPolicy() next has something to do; kNever when
  // nothing.
  int64_t NextWakeMs() const;
  // Closes every up interval at `end_ms` and totals the money.
  FleetReport Finish(int64_t end_ms);

 private:
  enum class Power { kUp, kBooting, kDown };
  struct NodeState {
    std::string id;
    std::string gpu_type;
    int gpus = 0;
    double cpu = 0;      // cores
    int64_t memory = 0;  // bytes
    std::optional<pricing::PriceEntry> price;
    Power power = Power::kUp;
    int64_t up_since_ms = 0;  // billing start of the current interval
    int64_t ready_ms = 0;     // kBooting: schedulable from then
    int jobs = 0;
    int64_t last_end_ms = -1;  // of its last job; -1: none yet
    // What each running job gives back when it ends, by job id.
    std::map<int64_t, scheduler::idle::WorkerInfo::Release> releases;
  };

  Fleet(std::vector<NodeState> nodes, FleetOptions options);
  absl::Time At(int64_t ms) const {
    return options_.epoch + absl::Milliseconds(ms);
  }
  pricing::Money CostOf(const NodeState& n, double gpus, int64_t from_ms,
                        int64_t to_ms) const;
  void Decide(int64_t now_ms, std::vector<scheduler::NodeView>* nodes,
              const std::vector<scheduler::JobRequest>& pending);
  // Bills `n`'s current up interval (booting counts) until `end_ms` and
  // marks it down.
  void CloseUp(NodeState& n, int64_t end_ms);
  void StopNode(int node, int64_t now_ms);
  void BootFor(const scheduler::idle::ScaleUpRequest& up,
               const std::vector<scheduler::JobRequest>& pending,
               int64_t now_ms);
  // The GPU type each job waiting for a boot waits for (RunPolicy's
  // boot_nodes, by the node's type).
  std::map<int64_t, std::string> boot_types_;

  FleetOptions options_;
  std::vector<NodeState> nodes_;
  std::map<std::string, int> index_;
  scheduler::idle::PolicyState idle_state_;
  int64_t last_decide_ms_ = std::numeric_limits<int64_t>::min() / 2;
  int64_t next_decide_ms_ = kNever;
  pricing::Money job_cost_, fleet_cost_;
  double node_ms_ = 0;
  int shutdowns_ = 0, boots_ = 0;
};

}  // namespace tupa::sim

#endif  // TUPA_SCHEDULER_SIM_REPLAY_FLEET_H_

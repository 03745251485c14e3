// ClusterState: the free resources of a cluster in a compact, indexed form,
// and the per-node search of every placement policy.
//
// Built from a NodeView snapshot; Apply()/Undo() consume and give back the
// resources of one node assignment, ReleaseRunning() frees a running job's.
// Each node is split into GPU pools (its devices of one type). Pools of
// schedulable nodes are grouped into classes of identical GPU state (type,
// price, sorted free shares); within a class members are ordered by free
// CPU then memory, so a search looks at one best-fitting representative per
// class instead of every node. Used by PlaceJobs() and by tupa-sim (which
// keeps one state across many single-job placements).
// Copyable (reservations simulate on a copy); not thread-safe.
#ifndef TUPA_SCHEDULER_PLACEMENT_CLUSTER_STATE_H_
#define TUPA_SCHEDULER_PLACEMENT_CLUSTER_STATE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "scheduler/placement/demand.h"
#include "scheduler/placement/frag.h"
#include "scheduler/placement/placement.h"

namespace tupa::scheduler {

// One node's share of a job, found by FindNode() and consumed by Apply().
struct NodeChoice {
  int node = -1;
  int pool = -1;
  std::vector<int> positions;       // device positions within the pool
  std::vector<int> device_indexes;  // DeviceSlot::index of those devices
  int milli = 0;                    // taken from each device
  int64_t cpu_milli = 0;
  int64_t memory = 0;
};

// Which nodes a search may use. Pointers may be null (no restriction).
struct SearchFilter {
  const std::map<std::string, std::string>* labels = nullptr;
  const std::vector<char>* blocked = nullptr;  // indexed by node
  const std::vector<char>* only = nullptr;     // if set, nodes marked here
  const std::vector<int>* excluded = nullptr;  // node indexes
};

class ClusterState {
 public:
  using Policy = PlacementOptions::Policy;

  ClusterState(const std::vector<NodeView>& nodes, Policy policy);

  // kTupa, kFgd: the request mix fragmentation is measured against (the
  // heaviest `max_shapes` shapes). Without one, they score like kBestFit.
  void SetRequestMix(const std::vector<RequestShape>& mix, int max_shapes);

  // Converts a job's per-node request. nullopt when malformed: negative
  // amounts, or a whole-GPU request that is not an integer.
  std::optional<Demand> MakeDemand(double gpus, double cpu, int64_t memory,
                                   const std::vector<std::string>& gpu_types,
                                   int nodes) const;

  // Best node for one node's worth of `demand` under the policy, or nullopt.
  std::optional<NodeChoice> FindNode(const Demand& demand,
                                     const SearchFilter& filter) const;
  void Apply(const NodeChoice& choice);
  void Undo(const NodeChoice& choice);
  // Gives back what `job` holds on its nodes (unknown workers are ignored).
  void ReleaseRunning(const RunningJob& job);
  // `node` stays up at least until `until_ms` for a job on it (kUnknownEnd:
  // a job of unknown end). Placement records each running and placed job.
  void HoldUntil(int node, int64_t until_ms);
  // What keeping `node` up for a run [from_ms, until_ms) adds to the
  // fleet's bill: its price per GPU-hour x all its GPUs x the part of the
  // run past what already holds it. 0 on a node held longer.
  double KeepUpCost(int node, int64_t from_ms, int64_t until_ms) const;
  // Until when running or placed jobs hold `node` up (0: nothing does).
  int64_t HeldUntil(int node) const { return nodes_[node].held_until_ms; }
  // The bootable node (NodeView::bootable) that could hold one node's
  // worth of `demand` when empty and costs least to keep up from `from_ms`
  // until `until_ms` plus `boot_ms`, with that cost; nullopt when none.
  struct BootOption {
    int node = -1;
    double cost = 0;
  };
  std::optional<BootOption> CheapestBootable(
      const Demand& demand, const std::map<std::string, std::string>& labels,
      int64_t from_ms, int64_t until_ms, int64_t boot_ms) const;

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int NodeIndex(const std::string& worker_id) const;
  const std::string& WorkerId(int node) const { return nodes_[node].id; }
  // Whether one node's worth of `demand` fits on `node` now.
  bool FitsOnNode(const Demand& demand, int node,
                  const SearchFilter& filter) const;
  bool LabelsMatch(int node,
                   const std::map<std::string, std::string>& labels) const;
  // Milli-GPUs of schedulable nodes, in total and free now.
  int64_t total_gpu_milli() const { return total_gpu_milli_; }
  int64_t free_gpu_milli() const { return free_gpu_milli_; }
  // Whether `demand` could run on an empty cluster (per node; gang size is
  // checked too) and, if not, why: kNoSuchGpuType or kNeverFits.
  PendingReason EverFits(
      const Demand& demand,
      const std::map<std::string, std::string>& labels) const;

 private:
  struct Node {
    std::string id;
    std::map<std::string, std::string> labels;
    int64_t cpu_free = 0, cpu_total = 0, mem_free = 0, mem_total = 0;
    double price = 0;
    int gpus = 0;
    int64_t held_until_ms = 0;  // HoldUntil; 0: nothing holds it
    bool schedulable = true;
    bool bootable = false;
    std::vector<int> pools;
  };
  struct Pool {
    int node = 0;
    int type_id = -1;  // -1: a node without GPUs
    std::vector<int> dev_index;
    std::vector<int> free;  // milli, parallel to dev_index
    std::vector<int> capacity;
    int cls = -1;
    std::tuple<int64_t, int64_t, int> member_key;
  };
  struct Class {
    int type_slot = 0;
    std::vector<int> sorted_free;
    int full_free = 0;
    int max_free = 0;
    std::set<std::tuple<int64_t, int64_t, int>> members;  // cpu, mem, pool
    int pos_in_slot = -1;  // index in by_type_ while non-empty
  };
  struct Score {
    double first = 0;  // CostKey
    double primary = 0, secondary = 0;
    int64_t mem_left = 0;
    double price = 0;
    int node = 0;
    bool Better(const Score& o) const;
  };

  // The first key of a node for `demand`: KeepUpCost for a long job under
  // kTupa, else 0.
  double CostKey(const Demand& demand, int node) const;
  int TypeSlot(int type_id) const {
    return type_id < 0 ? num_types() : type_id;
  }
  int num_types() const { return static_cast<int>(type_names_.size()); }
  bool Passes(int node, const SearchFilter& filter) const;
  std::optional<NodeChoice> FirstFit(const Demand& demand,
                                     const SearchFilter& filter) const;
  std::optional<NodeChoice> ByClass(const Demand& demand,
                                    const SearchFilter& filter) const;
  // kFgd, kTupa (with a request mix): every node that passes is scored,
  // not one per class; a share takes its node's best device, the lowest
  // index on ties; ties between nodes by policy (cluster_state_members.cc).
  std::optional<NodeChoice> ByMember(const Demand& demand,
                                     const SearchFilter& filter) const;
  // Scores the options of placing `demand` on pool `p` (in class `c`) and
  // updates best/choice when one beats `best`.
  void ScorePool(const Demand& demand, int p, const Class& c, Score* best,
                 std::optional<NodeChoice>* choice) const;
  NodeChoice MakeChoice(const Demand& demand, int p, int share_free) const;
  void Unindex(int p);
  void Index(int p);
  void ChangeNode(int node, const NodeChoice& choice, int sign);

  Policy policy_;
  FragModel frag_;
  std::vector<std::string> type_names_;
  std::unordered_map<std::string, int> type_ids_;
  std::unordered_map<std::string, int> node_ids_;
  std::vector<Node> nodes_;
  std::vector<Pool> pools_;
  std::vector<Class> classes_;
  std::unordered_map<std::string, int> class_ids_;
  std::vector<std::vector<int>> by_type_;  // slot -> non-empty class ids
  double cpu_norm_ = 1, gpu_norm_ = 1, mem_norm_ = 1;
  int64_t total_gpu_milli_ = 0, free_gpu_milli_ = 0;
  // kBestFitK8s: xorshift64 state of the random tie-break (a fixed
  // seed: a run is reproducible).
  mutable uint64_t tie_state_ = 0x9E3779B97F4A7C15ull;
  double NextTieDraw() const;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_CLUSTER_STATE_H_

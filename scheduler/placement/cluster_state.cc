#include "scheduler/placement/cluster_state.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <utility>

namespace tupa::scheduler {
namespace {

constexpr double kEps = 1e-9;
constexpr int kMaxTypes = 64;  // type ids are bits of a uint64_t mask

int64_t ToMilli(double v) { return std::llround(v * 1000.0); }

// Ascending insertion after one element changed; n <= a few dozen.
void Resort(std::vector<int>* v) { std::sort(v->begin(), v->end()); }

}  // namespace

bool ClusterState::Score::Better(const Score& o) const {
  if (first != o.first) return first < o.first;
  if (primary < o.primary - kEps) return true;
  if (primary > o.primary + kEps) return false;
  if (secondary < o.secondary - kEps) return true;
  if (secondary > o.secondary + kEps) return false;
  if (mem_left != o.mem_left) return mem_left < o.mem_left;
  if (price != o.price) return price < o.price;
  return node < o.node;
}

ClusterState::ClusterState(const std::vector<NodeView>& nodes, Policy policy)
    : policy_(policy) {
  int max_devices = 1;
  int64_t max_cpu = 1;
  for (const NodeView& view : nodes) {
    const int n = static_cast<int>(nodes_.size());
    node_ids_.emplace(view.worker_id, n);
    Node node;
    node.id = view.worker_id;
    node.labels = view.labels;
    node.cpu_total = ToMilli(view.cpu_total);
    node.cpu_free = ToMilli(view.cpu_free);
    node.mem_total = view.memory_total;
    node.mem_free = view.memory_free;
    node.price = view.price_per_gpu_hour;
    node.schedulable = view.schedulable;
    node.bootable = view.bootable && !view.schedulable;
    if (node.schedulable) max_cpu = std::max(max_cpu, node.cpu_total);
    std::map<int, int> pool_of_type;
    for (const DeviceSlot& dev : view.devices) {
      auto [it, added] = type_ids_.emplace(dev.gpu_type, num_types());
      if (added) {
        if (num_types() >= kMaxTypes) {  // more types than mask bits: skip
          type_ids_.erase(it);
          continue;
        }
        type_names_.push_back(dev.gpu_type);
      }
      auto [pit, new_pool] =
          pool_of_type.emplace(it->second, static_cast<int>(pools_.size()));
      if (new_pool) {
        Pool pool;
        pool.node = n;
        pool.type_id = it->second;
        node.pools.push_back(pit->second);
        pools_.push_back(std::move(pool));
      }
      Pool& pool = pools_[pit->second];
      const int free = static_cast<int>(
          std::clamp<int64_t>(ToMilli(dev.free_share), 0, kMilliPerGpu));
      ++node.gpus;
      pool.dev_index.push_back(dev.index);
      pool.free.push_back(free);
      pool.capacity.push_back(kMilliPerGpu);
      if (node.schedulable) {
        total_gpu_milli_ += kMilliPerGpu;
        free_gpu_milli_ += free;
      }
    }
    if (node.pools.empty()) {
      Pool pool;
      pool.node = n;
      node.pools.push_back(static_cast<int>(pools_.size()));
      pools_.push_back(std::move(pool));
    }
    for (int p : node.pools) {
      if (node.schedulable) {
        max_devices =
            std::max(max_devices, static_cast<int>(pools_[p].free.size()));
      }
    }
    nodes_.push_back(std::move(node));
  }
  cpu_norm_ = static_cast<double>(max_cpu);
  for (const Node& n : nodes_) {
    if (n.schedulable) {
      mem_norm_ = std::max(mem_norm_, static_cast<double>(n.mem_total));
    }
  }
  gpu_norm_ = static_cast<double>(max_devices) * kMilliPerGpu;
  by_type_.resize(num_types() + 1);
  for (int p = 0; p < static_cast<int>(pools_.size()); ++p) Index(p);
}

std::optional<Demand> ClusterState::MakeDemand(
    double gpus, double cpu, int64_t memory,
    const std::vector<std::string>& gpu_types, int nodes) const {
  if (!(gpus >= 0) || !(cpu >= 0) || memory < 0 || nodes < 1) {
    return std::nullopt;
  }
  Demand d;
  d.cpu_milli = ToMilli(cpu);
  d.memory = memory;
  d.nodes = nodes;
  if (gpus > 0 && gpus < 1) {
    d.milli = static_cast<int>(std::max<int64_t>(1, ToMilli(gpus)));
    d.count = 1;
  } else if (gpus >= 1) {
    const double whole = std::round(gpus);
    if (std::fabs(gpus - whole) > 1e-6 || whole > 1e6) return std::nullopt;
    d.milli = kMilliPerGpu;
    d.count = static_cast<int>(whole);
  }
  if (!gpu_types.empty()) {
    d.types = 0;
    for (const std::string& t : gpu_types) {
      auto it = type_ids_.find(t);
      if (it != type_ids_.end()) d.types |= uint64_t{1} << it->second;
    }
  }
  return d;
}

void ClusterState::SetRequestMix(const std::vector<RequestShape>& mix,
                                 int max_shapes) {
  std::vector<FragModel::Shape> shapes;
  for (const RequestShape& r : mix) {
    auto d = MakeDemand(r.gpus, r.cpu, r.memory, r.gpu_types, 1);
    if (d.has_value()) shapes.push_back({*d, r.weight});
  }
  std::vector<int64_t> supply(num_types(), 0);
  for (const Pool& pool : pools_) {
    if (pool.type_id < 0 || !nodes_[pool.node].schedulable) continue;
    for (int c : pool.capacity) supply[pool.type_id] += c;
  }
  if (policy_ == Policy::kFgd) {
    // Plain FGD: its own typical pods, and a rejected type counted by shape
    // weight alone.
    frag_ = FragModel(FgdTypicalShapes(shapes, kFgdTypicalCoverage), 0, {});
    return;
  }
  int64_t max_cpu_free = 0, max_memory_free = 0;
  for (const Node& node : nodes_) {
    if (!node.schedulable) continue;
    // Totals bound what a release can give back later in the pass.
    max_cpu_free = std::max({max_cpu_free, node.cpu_free, node.cpu_total});
    max_memory_free =
        std::max({max_memory_free, node.mem_free, node.mem_total});
  }
  frag_ = FragModel(std::move(shapes), max_shapes, supply,
                    static_cast<int>(gpu_norm_ / kMilliPerGpu), max_cpu_free,
                    max_memory_free);
}

double ClusterState::NextTieDraw() const {
  tie_state_ ^= tie_state_ << 13;
  tie_state_ ^= tie_state_ >> 7;
  tie_state_ ^= tie_state_ << 17;
  return static_cast<double>(tie_state_ >> 11);
}

bool ClusterState::FitsOnNode(const Demand& demand, int node,
                              const SearchFilter& filter) const {
  const Node& n = nodes_[node];
  if (!n.schedulable || n.cpu_free < demand.cpu_milli ||
      n.mem_free < demand.memory || !Passes(node, filter)) {
    return false;
  }
  if (demand.count == 0) return true;
  for (int p : n.pools) {
    const Pool& pool = pools_[p];
    if (pool.type_id < 0 || !((demand.types >> pool.type_id) & 1)) continue;
    int room = 0;
    for (int f : pool.free) room += f >= demand.milli ? 1 : 0;
    if (room >= demand.count) return true;
  }
  return false;
}

int ClusterState::NodeIndex(const std::string& worker_id) const {
  auto it = node_ids_.find(worker_id);
  return it == node_ids_.end() ? -1 : it->second;
}

bool ClusterState::LabelsMatch(
    int node, const std::map<std::string, std::string>& labels) const {
  const auto& have = nodes_[node].labels;
  for (const auto& [key, value] : labels) {
    auto it = have.find(key);
    if (it == have.end() || it->second != value) return false;
  }
  return true;
}

bool ClusterState::Passes(int node, const SearchFilter& filter) const {
  if (filter.blocked != nullptr && (*filter.blocked)[node]) return false;
  if (filter.only != nullptr && !(*filter.only)[node]) return false;
  if (filter.excluded != nullptr &&
      std::find(filter.excluded->begin(), filter.excluded->end(), node) !=
          filter.excluded->end()) {
    return false;
  }
  return filter.labels == nullptr || LabelsMatch(node, *filter.labels);
}

void ClusterState::Unindex(int p) {
  Pool& pool = pools_[p];
  if (pool.cls < 0) return;
  Class& c = classes_[pool.cls];
  c.members.erase(pool.member_key);
  if (c.members.empty()) {
    std::vector<int>& slot = by_type_[c.type_slot];
    const int last = slot.back();
    slot[c.pos_in_slot] = last;
    classes_[last].pos_in_slot = c.pos_in_slot;
    slot.pop_back();
    c.pos_in_slot = -1;
  }
  pool.cls = -1;
}

void ClusterState::Index(int p) {
  Pool& pool = pools_[p];
  const Node& node = nodes_[pool.node];
  if (!node.schedulable) return;
  std::vector<int> sorted = pool.free;
  std::sort(sorted.begin(), sorted.end());
  const int slot = TypeSlot(pool.type_id);
  std::string key(sizeof(int) + sizeof(double) + sorted.size() * sizeof(int),
                  '\0');
  std::memcpy(&key[0], &slot, sizeof(int));
  std::memcpy(&key[sizeof(int)], &node.price, sizeof(double));
  if (!sorted.empty()) {
    std::memcpy(&key[sizeof(int) + sizeof(double)], sorted.data(),
                sorted.size() * sizeof(int));
  }
  auto [it, added] =
      class_ids_.emplace(std::move(key), static_cast<int>(classes_.size()));
  if (added) {
    Class c;
    c.type_slot = slot;
    c.sorted_free = sorted;
    for (int f : sorted) {
      if (f >= kMilliPerGpu) ++c.full_free;
      c.max_free = std::max(c.max_free, f);
    }
    classes_.push_back(std::move(c));
  }
  Class& c = classes_[it->second];
  if (c.members.empty()) {
    c.pos_in_slot = static_cast<int>(by_type_[slot].size());
    by_type_[slot].push_back(it->second);
  }
  pool.member_key = {node.cpu_free, node.mem_free, p};
  c.members.insert(pool.member_key);
  pool.cls = it->second;
}

void ClusterState::ChangeNode(int n, const NodeChoice& choice, int sign) {
  Node& node = nodes_[n];
  for (int p : node.pools) Unindex(p);
  node.cpu_free += sign * choice.cpu_milli;
  node.mem_free += sign * choice.memory;
  if (choice.pool >= 0) {
    Pool& pool = pools_[choice.pool];
    for (int pos : choice.positions) pool.free[pos] += sign * choice.milli;
    if (node.schedulable) {
      free_gpu_milli_ += int64_t{sign} * choice.milli *
                         static_cast<int64_t>(choice.positions.size());
    }
  }
  for (int p : node.pools) Index(p);
}

void ClusterState::HoldUntil(int node, int64_t until_ms) {
  int64_t& held = nodes_[node].held_until_ms;
  held = std::max(held, until_ms);
}

double ClusterState::KeepUpCost(int node, int64_t from_ms,
                                int64_t until_ms) const {
  const Node& n = nodes_[node];
  const int64_t past = until_ms - std::max(from_ms, n.held_until_ms);
  if (past <= 0) return 0;
  return n.price * n.gpus * (static_cast<double>(past) / 3'600'000.0);
}

std::optional<ClusterState::BootOption> ClusterState::CheapestBootable(
    const Demand& demand, const std::map<std::string, std::string>& labels,
    int64_t from_ms, int64_t until_ms, int64_t boot_ms) const {
  std::optional<BootOption> best;
  for (int i = 0; i < num_nodes(); ++i) {
    const Node& node = nodes_[i];
    if (!node.bootable || node.cpu_total < demand.cpu_milli ||
        node.mem_total < demand.memory || !LabelsMatch(i, labels)) {
      continue;
    }
    bool room = demand.count == 0;
    for (int p : node.pools) {
      const Pool& pool = pools_[p];
      room |= pool.type_id >= 0 && ((demand.types >> pool.type_id) & 1) &&
              static_cast<int>(pool.capacity.size()) >= demand.count;
    }
    if (!room) continue;
    const double cost =
        node.price * node.gpus *
        (static_cast<double>(until_ms + boot_ms - from_ms) / 3'600'000.0);
    if (!best.has_value() || cost < best->cost) best = BootOption{i, cost};
  }
  return best;
}

double ClusterState::CostKey(const Demand& demand, int node) const {
  if (demand.run_until_ms <= 0 || policy_ != Policy::kTupa) return 0;
  return KeepUpCost(node, demand.run_from_ms, demand.run_until_ms);
}

void ClusterState::Apply(const NodeChoice& choice) {
  ChangeNode(choice.node, choice, -1);
}

void ClusterState::Undo(const NodeChoice& choice) {
  ChangeNode(choice.node, choice, +1);
}

void ClusterState::ReleaseRunning(const RunningJob& job) {
  auto demand = MakeDemand(job.gpus, job.cpu, job.memory, {}, 1);
  if (!demand.has_value()) return;
  for (const std::string& worker : job.worker_ids) {
    const int n = NodeIndex(worker);
    if (n < 0) continue;
    Node& node = nodes_[n];
    for (int p : node.pools) Unindex(p);
    node.cpu_free = std::min(node.cpu_total, node.cpu_free + demand->cpu_milli);
    node.mem_free = std::min(node.mem_total, node.mem_free + demand->memory);
    // Devices to give back: the known ones, else the fullest that can take
    // the share back.
    std::vector<std::pair<int, int>> targets;  // pool, position
    for (int index : job.device_indexes) {
      for (int p : node.pools) {
        const auto& idx = pools_[p].dev_index;
        auto it = std::find(idx.begin(), idx.end(), index);
        if (it != idx.end()) targets.emplace_back(p, it - idx.begin());
      }
    }
    for (int k = static_cast<int>(targets.size()); k < demand->count; ++k) {
      std::pair<int, int> pick{-1, -1};
      for (int p : node.pools) {
        for (int i = 0; i < static_cast<int>(pools_[p].free.size()); ++i) {
          const int f = pools_[p].free[i];
          if (f + demand->milli > pools_[p].capacity[i]) continue;
          if (std::find(targets.begin(), targets.end(), std::make_pair(p, i)) !=
              targets.end()) {
            continue;
          }
          if (pick.first < 0 || f < pools_[pick.first].free[pick.second]) {
            pick = {p, i};
          }
        }
      }
      if (pick.first < 0) break;
      targets.push_back(pick);
    }
    for (auto [p, i] : targets) {
      int& f = pools_[p].free[i];
      const int before = f;
      f = std::min(pools_[p].capacity[i], f + demand->milli);
      if (node.schedulable) free_gpu_milli_ += f - before;
    }
    for (int p : node.pools) Index(p);
  }
}

NodeChoice ClusterState::MakeChoice(const Demand& demand, int p,
                                    int share_free) const {
  const Pool& pool = pools_[p];
  NodeChoice choice;
  choice.node = pool.node;
  choice.pool = p;
  choice.milli = demand.milli;
  choice.cpu_milli = demand.cpu_milli;
  choice.memory = demand.memory;
  const int n = static_cast<int>(pool.free.size());
  if (demand.count > 0 && demand.milli >= kMilliPerGpu) {
    for (int i = 0;
         i < n && static_cast<int>(choice.positions.size()) < demand.count;
         ++i) {
      if (pool.free[i] >= kMilliPerGpu) choice.positions.push_back(i);
    }
  } else if (demand.count > 0) {
    for (int i = 0; i < n; ++i) {
      const bool ok = share_free < 0 ? pool.free[i] >= demand.milli
                                     : pool.free[i] == share_free;
      if (ok) {
        choice.positions.push_back(i);
        break;
      }
    }
  }
  for (int pos : choice.positions) {
    choice.device_indexes.push_back(pool.dev_index[pos]);
  }
  return choice;
}

std::optional<NodeChoice> ClusterState::FindNode(
    const Demand& demand, const SearchFilter& filter) const {
  if (demand.count > 0 && demand.types == 0) return std::nullopt;
  if (policy_ == Policy::kFirstFit) return FirstFit(demand, filter);
  if (UsesRequestMix(policy_) && !frag_.empty()) {
    return ByMember(demand, filter);
  }
  return ByClass(demand, filter);
}

std::optional<NodeChoice> ClusterState::FirstFit(
    const Demand& demand, const SearchFilter& filter) const {
  for (int p = 0; p < static_cast<int>(pools_.size()); ++p) {
    const Pool& pool = pools_[p];
    const Node& node = nodes_[pool.node];
    if (!node.schedulable || node.cpu_free < demand.cpu_milli ||
        node.mem_free < demand.memory) {
      continue;
    }
    if (demand.count > 0) {
      if (pool.type_id < 0 || !((demand.types >> pool.type_id) & 1)) continue;
      int room = 0;
      for (int f : pool.free) room += f >= demand.milli ? 1 : 0;
      if (room < demand.count) continue;
    }
    if (!Passes(pool.node, filter)) continue;
    return MakeChoice(demand, p, -1);
  }
  return std::nullopt;
}

std::optional<NodeChoice> ClusterState::ByClass(
    const Demand& demand, const SearchFilter& filter) const {
  Score best;
  std::optional<NodeChoice> choice;
  for (int slot = 0; slot <= num_types(); ++slot) {
    if (demand.count > 0 &&
        (slot == num_types() || !((demand.types >> slot) & 1))) {
      continue;
    }
    for (int cid : by_type_[slot]) {
      const Class& c = classes_[cid];
      if (demand.count > 0 && demand.milli >= kMilliPerGpu &&
          c.full_free < demand.count) {
        continue;
      }
      if (demand.count > 0 && c.max_free < demand.milli) continue;
      // The best CPU fit of the class that passes the filter; every
      // member for a long job, whose cost key differs per node.
      for (auto it =
               c.members.lower_bound({demand.cpu_milli, INT64_MIN, INT_MIN});
           it != c.members.end(); ++it) {
        const auto& [cpu, mem, p] = *it;
        if (mem < demand.memory || !Passes(pools_[p].node, filter)) continue;
        ScorePool(demand, p, c, &best, &choice);
        if (demand.run_until_ms == 0) break;
      }
    }
  }
  return choice;
}

void ClusterState::ScorePool(const Demand& demand, int p, const Class& c,
                             Score* best,
                             std::optional<NodeChoice>* choice) const {
  const Pool& pool = pools_[p];
  const Node& node = nodes_[pool.node];
  const int64_t cpu_left = node.cpu_free - demand.cpu_milli;
  const int64_t mem_left = node.mem_free - demand.memory;
  int64_t gpu_free = 0;
  for (int f : c.sorted_free) gpu_free += f;
  const double fit =
      0.5 * static_cast<double>(cpu_left) / cpu_norm_ +
      0.5 * static_cast<double>(gpu_free - demand.GpuMilliPerNode()) /
          gpu_norm_;
  const bool use_frag = UsesRequestMix(policy_) && !frag_.empty();
  // kTupa breaks fragmentation ties by best fit over all three resources;
  // the paper's policies pick at random among the top-scored nodes (one
  // draw per node: its devices tie, and the first option wins).
  const bool random_ties =
      policy_ == Policy::kFgd || policy_ == Policy::kBestFitK8s;
  const double tie = random_ties ? NextTieDraw() : 0;
  const double fit3 = fit + 0.5 * static_cast<double>(mem_left) / mem_norm_;
  const int n = static_cast<int>(c.sorted_free.size());
  double before = 0;
  if (use_frag) {
    before = frag_.Frag(c.sorted_free.data(), n, pool.type_id, node.cpu_free,
                        node.mem_free);
  }
  // Options: which free level a share takes (ascending: best fit first).
  std::vector<int> options;
  if (demand.count > 0 && demand.milli < kMilliPerGpu) {
    for (int f : c.sorted_free) {
      if (f >= demand.milli && (options.empty() || options.back() != f)) {
        options.push_back(f);
        if (!use_frag) break;
      }
    }
  } else {
    options.push_back(-1);
  }
  std::vector<int> after;
  for (int option : options) {
    Score s;
    s.mem_left = random_ties ? 0 : mem_left;
    s.price = random_ties ? 0 : node.price;
    s.first = CostKey(demand, pool.node);
    s.node = pool.node;
    if (use_frag) {
      after = c.sorted_free;
      if (demand.count > 0 && demand.milli >= kMilliPerGpu) {
        for (int k = 0; k < demand.count; ++k) after[n - 1 - k] = 0;
      } else if (demand.count > 0) {
        *std::find(after.begin(), after.end(), option) -= demand.milli;
      }
      Resort(&after);
      s.primary = FragScore(
          frag_.Frag(after.data(), n, pool.type_id, cpu_left, mem_left) -
          before);
      s.secondary = random_ties ? tie : fit3;
    } else if (policy_ == Policy::kBestFitK8s) {
      // The Kubernetes 0..100 integer score of the paper's BestFit plugin,
      // negated: lower is better.
      s.primary = -std::floor((1 - fit) * 100);
      s.secondary = tie;
    } else {
      s.primary = fit;
    }
    if (!choice->has_value() || s.Better(*best)) {
      *best = s;
      *choice = MakeChoice(demand, p, option);
    }
  }
}

PendingReason ClusterState::EverFits(
    const Demand& demand,
    const std::map<std::string, std::string>& labels) const {
  int type_ok = 0, fits = 0;
  for (const Pool& pool : pools_) {
    const Node& node = nodes_[pool.node];
    if (demand.count > 0) {
      if (pool.type_id < 0 || !((demand.types >> pool.type_id) & 1)) continue;
      if (static_cast<int>(pool.free.size()) < demand.count) continue;
    }
    ++type_ok;
    if (node.cpu_total >= demand.cpu_milli && node.mem_total >= demand.memory &&
        LabelsMatch(pool.node, labels)) {
      ++fits;  // a node with two matching pools counts twice; rare, benign
      if (fits >= demand.nodes) break;
    }
  }
  if (demand.count > 0 && demand.types != kAnyType && type_ok == 0) {
    return PendingReason::kNoSuchGpuType;
  }
  return fits >= demand.nodes ? PendingReason::kNone
                              : PendingReason::kNeverFits;
}

}  // namespace tupa::scheduler

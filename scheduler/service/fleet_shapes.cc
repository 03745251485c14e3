#include "scheduler/service/fleet_shapes.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tupa::scheduler {

WorkerShape WorkerShape::Of(const v1::Worker& worker) {
  std::map<std::string, int> by_type;
  for (const v1::Device& d : worker.devices()) ++by_type[d.gpu_type()];
  WorkerShape shape;
  shape.gpus_by_type.assign(by_type.begin(), by_type.end());
  shape.cpu = worker.cpu();
  shape.memory_bytes = worker.memory_bytes();
  return shape;
}

bool WorkerShape::operator<(const WorkerShape& o) const {
  return std::tie(gpus_by_type, cpu, memory_bytes) <
         std::tie(o.gpus_by_type, o.cpu, o.memory_bytes);
}

bool WorkerShape::operator==(const WorkerShape& o) const {
  return std::tie(gpus_by_type, cpu, memory_bytes) ==
         std::tie(o.gpus_by_type, o.cpu, o.memory_bytes);
}

void FleetShapes::Add(const WorkerShape& shape) {
  ++count_[shape];
  ++workers_;
}

void FleetShapes::Remove(const WorkerShape& shape) {
  auto it = count_.find(shape);
  if (it == count_.end()) return;
  if (--it->second == 0) count_.erase(it);
  --workers_;
}

absl::Status FleetShapes::CouldEverFit(const v1::JobSpec& spec) const {
  // Every worker the cluster has had counts: a pool the idle policy
  // stopped can be scaled up again.
  if (workers_ == 0) return absl::OkStatus();  // nothing to judge by yet
  const auto& r = spec.resources();
  const int nodes = std::max(1, r.nodes());
  if (nodes > workers_)
    return absl::InvalidArgumentError(absl::StrCat(
        "resources.nodes: ", nodes, " nodes requested but the cluster has ",
        workers_, " worker(s)"));
  const auto type_allowed = [&r](const std::string& type) {
    return r.gpu_type().empty() ||
           std::find(r.gpu_type().begin(), r.gpu_type().end(), type) !=
               r.gpu_type().end();
  };
  if (!r.gpu_type().empty()) {
    std::set<std::string> types;
    for (const auto& [shape, count] : count_)
      for (const auto& [type, gpus] : shape.gpus_by_type) types.insert(type);
    bool any = false;
    for (const auto& t : types) any |= type_allowed(t);
    if (!any)
      return absl::InvalidArgumentError(absl::StrCat(
          "resources.gpu_type: no worker has ",
          absl::StrJoin(r.gpu_type(), "/"), " (the cluster has ",
          types.empty() ? "no GPUs" : absl::StrJoin(types, ", "), ")"));
  }
  const int need = static_cast<int>(std::ceil(r.gpus()));
  int fitting = 0;
  for (const auto& [shape, count] : count_) {
    bool ok = need == 0;
    for (const auto& [type, gpus] : shape.gpus_by_type)
      if (type_allowed(type) && gpus >= need) ok = true;
    if (ok && shape.cpu + 1e-9 >= r.cpu() &&
        (r.memory_bytes() == 0 || shape.memory_bytes >= r.memory_bytes()))
      fitting += count;
  }
  if (fitting >= nodes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "resources.gpus: no ", nodes, " worker(s) of this cluster can ever hold ",
      r.gpus(), " GPU(s), ", r.cpu(), " CPU(s) and the memory requested"));
}

}  // namespace tupa::scheduler

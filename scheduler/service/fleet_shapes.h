// FleetShapes: what every worker the scheduler has known looks like, as
// distinct shapes (GPUs per type, CPUs, memory) with how many workers have
// each. Admission asks it whether a job could ever fit the cluster: a
// submit then walks the few distinct shapes of the pools, not every worker.
// Counting every worker's devices afresh took ~150 µs per submit at 1,000
// workers x 8 GPUs, under the core's mutex; this takes ~0.2 µs
// (docs/benchmarks.md). Not thread-safe: the scheduler core guards it with
// its mutex.
#ifndef TUPA_SCHEDULER_SERVICE_FLEET_SHAPES_H_
#define TUPA_SCHEDULER_SERVICE_FLEET_SHAPES_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tupa/v1/cluster.pb.h"
#include "tupa/v1/job.pb.h"

namespace tupa::scheduler {

struct WorkerShape {
  // (GPU type, devices of that type), sorted by type; a device without a
  // type counts under "".
  std::vector<std::pair<std::string, int>> gpus_by_type;
  double cpu = 0;
  int64_t memory_bytes = 0;

  static WorkerShape Of(const v1::Worker& worker);
  bool operator<(const WorkerShape& o) const;
  bool operator==(const WorkerShape& o) const;
};

class FleetShapes {
 public:
  void Add(const WorkerShape& shape);
  // Forgets one worker of `shape`; one must have been added.
  void Remove(const WorkerShape& shape);
  int workers() const { return workers_; }

  // OK when `spec` could run on the known workers if they were all free,
  // or when no worker is known yet (nothing to judge by). Otherwise
  // InvalidArgument naming resources.nodes, resources.gpu_type or
  // resources.gpus.
  absl::Status CouldEverFit(const v1::JobSpec& spec) const;

 private:
  std::map<WorkerShape, int> count_;
  int workers_ = 0;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_FLEET_SHAPES_H_

// AllocationRecord: one allocation row (a node of a job attempt on a
// worker), as JobStore writes it (AssignJob, WriteBatch) and UsageStore
// reads it back (LoadOpenAllocations).
#ifndef TUPA_SCHEDULER_STORE_ALLOCATION_RECORD_H_
#define TUPA_SCHEDULER_STORE_ALLOCATION_RECORD_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tupa::scheduler {

struct AllocationRecord {
  int64_t job_id = 0;
  int32_t attempt = 0;
  std::string worker_id;
  int32_t node_rank = 0;
  std::vector<int32_t> device_indexes;
  double gpu_share = 1;
  int32_t master_port = 0;
  // What the allocation is priced as (from its worker) and since when.
  std::string region;
  std::string gpu_type;
  double gpus = 0;  // devices x share
  int64_t started_at_ms = 0;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_ALLOCATION_RECORD_H_

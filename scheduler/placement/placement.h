// Pure placement: decides which pending jobs start now and where.
//
// No I/O, no clocks, no globals: the scheduler's loop, the simulator
// (tupa-sim) and the unit tests all call PlaceJobs() with a snapshot and get
// a plan back. Not thread-safe per call object; the function itself is
// reentrant.
#ifndef TUPA_SCHEDULER_PLACEMENT_PLACEMENT_H_
#define TUPA_SCHEDULER_PLACEMENT_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tupa::scheduler {

// One device of a node. `free_share` is 1.0 when nothing runs on it, 0 when
// a whole-GPU job holds it, and in between when fractional jobs share it.
struct DeviceSlot {
  int index = 0;
  std::string gpu_type;
  double free_share = 1.0;
};

// What a node (worker) offers right now.
struct NodeView {
  std::string worker_id;
  std::string region;
  std::map<std::string, std::string> labels;
  std::vector<DeviceSlot> devices;
  double cpu_total = 0;  // cores
  double cpu_free = 0;
  int64_t memory_total = 0;  // bytes
  int64_t memory_free = 0;
  double price_per_gpu_hour = 0;  // now; ties among equal fits go cheapest
  bool schedulable = true;        // false while draining or lost
  // Stopped (or booting), and a scale-up can start it: never placed on
  // while so, but a long job may wait for it (PlacementOptions::boot_time_s).
  bool bootable = false;
};

// A pending job, reduced to what placement needs. Resources are per node.
struct JobRequest {
  int64_t job_id = 0;
  int priority = 0;  // 0..100, higher first
  std::string team;
  int64_t submitted_at_ms = 0;         // older first among equal priority
  double gpus = 0;                     // per node; < 1 is a share of one device
  int nodes = 1;                       // > 1 is a gang: all nodes or none
  std::vector<std::string> gpu_types;  // empty = any
  double cpu = 0;
  int64_t memory = 0;
  std::map<std::string, std::string> labels;  // must all match the node's
  int64_t max_runtime_s = 0;  // 0 = unknown (cannot be backfilled)
};

// A job that holds resources now, for reservations and backfill.
struct RunningJob {
  int64_t job_id = 0;
  std::vector<std::string> worker_ids;
  double gpus = 0;  // per node
  double cpu = 0;
  int64_t memory = 0;
  int64_t expected_end_ms = 0;  // start + max_runtime; 0 = unknown
  // Added for fair share and exact release in reservations; optional.
  std::string team;                 // counts toward the team's held GPUs
  std::vector<int> device_indexes;  // per node, when known
};

struct NodeAssignment {
  std::string worker_id;
  int node_rank = 0;
  std::vector<int> device_indexes;
  double share = 1.0;  // per device; < 1 only for fractional jobs
};

struct JobPlacement {
  int64_t job_id = 0;
  std::vector<NodeAssignment> nodes;  // node_rank order
};

enum class PendingReason {
  kNone,
  kNoFitNow,         // fits the cluster, not the free resources now
  kGangIncomplete,   // some but not all nodes of a gang could be found
  kBehindPriority,   // resources held for a higher-priority job
  kNoSuchGpuType,    // no node has (or could ever have) the type/size
  kNeverFits,        // larger than any node / the cluster
  kWaitsForBoot,     // a long job waits for a stopped node far cheaper to
                     // keep up than any free now (PendingInfo::boot_node)
  kWaitsForRelease,  // a long job waits for a live node cheaper to keep up
                     // that a job ending within the boot time frees
};

const char* PendingReasonName(PendingReason reason);

struct PendingInfo {
  PendingReason reason = PendingReason::kNone;
  int jobs_ahead = 0;
  int64_t estimated_start_ms = 0;  // 0 = unknown
  std::string boot_node;           // kWaitsForBoot: the node to start
};

// One entry of the request mix that the kTupa policy scores fragmentation
// against: a request shape and its relative frequency.
struct RequestShape {
  double gpus = 0;  // as JobRequest::gpus (per node)
  double cpu = 0;
  int64_t memory = 0;
  std::vector<std::string> gpu_types;  // empty = any
  double weight = 1;
};

struct PlacementOptions {
  // kFirstFit, kBestFit and kTupa are the scheduler's. kFgd and
  // kBestFitK8s are the FGD paper's FGD and BestFit as its Kubernetes
  // simulator runs them (integer 0..100 node score; ties to the first node
  // in the list for kFgd, cluster_state_fgd.cc, a random choice for
  // kBestFitK8s; plain FGD has no type pressure), kept so that tupa-sim
  // compares against them in the same simulator.
  enum class Policy { kFirstFit, kBestFit, kTupa, kFgd, kBestFitK8s };
  Policy policy = Policy::kTupa;
  bool backfill = true;
  int64_t now_ms = 0;
  // kTupa, kFgd: the recent request mix. Empty = derived from `pending`.
  std::vector<RequestShape> request_mix;
  // Unplaced jobs (in queue order) that get an estimated_start_ms; the
  // estimate costs a release simulation, so it is capped.
  int max_estimates = 64;
  // kTupa: a job whose max_runtime is at least this long is a long job. It
  // goes where keeping a node up for it adds least to the fleet's bill
  // (price x the node's GPUs x the part of its run that nothing already
  // on the node covers): onto a node held longer by other jobs when one
  // fits, else onto the node cheapest to keep up; fragmentation decides
  // among equals. A long job decides for its whole run which node stays
  // up, and what it costs. Shorter jobs: fragmentation first, price breaks
  // ties. Within a pass, the long jobs of the top priority choose their
  // nodes first (oldest first), before older jobs of that priority: they
  // may start ahead of them and take what one of those would have had in
  // this pass, but never a node reserved for the job at the head of the
  // queue. 0 turns all of this off.
  int64_t long_job_runtime_s = 86400;
  // kTupa: a single-node job of at least this max_runtime (and shorter than
  // long_job_runtime_s) whose fragmentation-first pick is a node nothing
  // else holds up (no running or placed job ends after now there) is placed
  // by keep-up cost instead, as a long job is (without waiting for a boot
  // or a release): it alone would decide how long that node stays up, so
  // an 8-GPU node is not kept up for hours by one small job while a node
  // that is cheaper to keep up, or one that others hold anyway, can take
  // it. Shorter jobs leave a node's up time to the idle policy's wait
  // after them; fragmentation decides. 0 turns it off.
  int64_t lone_job_runtime_s = 3600;
  // > 0: stopped nodes marked bootable come up this long after a scale-up
  // asks. A single-node long job that fits now waits for one instead when
  // keeping it up (booting included) costs less than keeping up the node
  // it would take now; it asks for that boot at once, and waits at most
  // until it has been pending twice this long. Likewise it waits for a
  // live node that costs at most 0.8x as much to keep up when a running
  // job's end frees it within this time (kWaitsForRelease). 0: never waits.
  int64_t boot_time_s = 0;
};

// Whether `policy` scores fragmentation against a request mix.
inline bool UsesRequestMix(PlacementOptions::Policy policy) {
  return policy == PlacementOptions::Policy::kTupa ||
         policy == PlacementOptions::Policy::kFgd;
}

struct PlacementPlan {
  std::vector<JobPlacement> placed;
  std::map<int64_t, PendingInfo> pending;  // every job not placed
};

// Orders `pending` (priority desc, then fair share: the team holding fewer
// GPUs first, then age, then job_id), places each job on the free
// resources of `nodes` (which it treats as a scratch copy), reserving for
// the first job that cannot start and backfilling only jobs that end before
// that reservation. Long jobs of the top priority go first (see
// PlacementOptions::long_job_runtime_s; that costs a second pass when one
// is pending beside others). Returns the jobs to start and why the others
// wait.
PlacementPlan PlaceJobs(std::vector<NodeView> nodes,
                        const std::vector<JobRequest>& pending,
                        const std::vector<RunningJob>& running,
                        const PlacementOptions& options);

// Whether `job` could ever run on the cluster if it were empty (used to
// refuse at admission jobs that never fit). Returns kNone when it could.
PendingReason CheckEverFits(const std::vector<NodeView>& nodes,
                            const JobRequest& job);

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_PLACEMENT_PLACEMENT_H_

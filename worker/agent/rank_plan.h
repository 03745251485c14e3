// RankPlan: what processes one node of an assigned job runs, with which
// argv and environment (DESIGN §4). Pure: the unit tests check the
// PyTorch-launcher environment without starting anything.
#ifndef TUPA_WORKER_AGENT_RANK_PLAN_H_
#define TUPA_WORKER_AGENT_RANK_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::worker {

struct RankProcess {
  int global_rank = 0;
  int local_rank = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to the worker's own
};

struct RankPlanOptions {
  std::string trainer_path;    // tupa-train, for `train:` jobs
  std::string spec_file;       // the job spec written for tupa-train
  std::string checkpoint_dir;  // TUPA_CHECKPOINT_DIR
  bool emulated_devices = false;
  int host_cpus = 1;  // splits BLAS/OpenMP threads among ranks
  // The worker's own CUDA_VISIBLE_DEVICES, split: device index i of the
  // worker is entry i here. Empty: indexes are the host's device numbers.
  std::vector<std::string> visible_devices;
  // Memory of each device by the worker's index (0 = unknown), for the
  // memory cap of fractional jobs.
  std::map<int, int64_t> device_memory_bytes;
  // The pipe directory of a running CUDA MPS control daemon, empty when
  // none runs (the worker detects it, never starts it).
  std::string mps_pipe_directory;
};

// One process per device (per-gpu, and always for train jobs) or one per
// node (per-node, for torchrun). Each gets the PyTorch launcher variables
// and TensorFlow's and Horovod's (framework_env.h).
//
// A fractional job (0 < gpus < 1) gets one device, shared (time-sliced)
// with other fractional jobs, and in its environment: TUPA_GPU_SHARE (the
// share), TUPA_GPU_MEMORY_LIMIT_BYTES (share x the device's memory, when
// known) and TUPA_GPU_MEMORY_FRACTION, for the job to enforce (e.g.
// torch.cuda.set_per_process_memory_fraction). When an MPS daemon runs,
// also CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (the
// share of SMs) and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, which MPS enforces.
std::vector<RankProcess> PlanRanks(const v1::Assign& assign,
                                   const RankPlanOptions& options);

// Whether the devices an Assign names are this worker's: each index one of
// `devices`, none twice, and as many as the job asks per node (one for a
// share, none for a CPU-only job). A scheduler whose view of the worker is
// wrong gets a FailedPrecondition naming the index instead of ranks that
// would run on another job's device or on none.
absl::Status CheckAssignedDevices(const v1::Assign& assign,
                                  const std::vector<v1::Device>& devices);

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_RANK_PLAN_H_

// RankPlan: what processes one node of an assigned job runs, with which
// argv and environment (DESIGN §4). Pure: the unit tests check the
// PyTorch-launcher environment without starting anything.
#ifndef TUPA_WORKER_AGENT_RANK_PLAN_H_
#define TUPA_WORKER_AGENT_RANK_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::worker {

struct RankProcess {
  int global_rank = 0;
  int local_rank = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to the worker's own
};

struct RankPlanOptions {
  std::string trainer_path;     // tupa-train, for `train:` jobs
  std::string spec_file;        // the job spec written for tupa-train
  std::string checkpoint_dir;   // TUPA_CHECKPOINT_DIR
  bool emulated_devices = false;
  int host_cpus = 1;            // splits BLAS/OpenMP threads among ranks
  // The worker's own CUDA_VISIBLE_DEVICES, split: device index i of the
  // worker is entry i here. Empty: indexes are the host's device numbers.
  std::vector<std::string> visible_devices;
};

// One process per device (per-gpu, and always for train jobs) or one per
// node (per-node, for torchrun).
std::vector<RankProcess> PlanRanks(const v1::Assign& assign,
                                   const RankPlanOptions& options);

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_RANK_PLAN_H_

#include "worker/agent/rank_plan.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "worker/agent/framework_env.h"

namespace tupa::worker {
namespace {

// The environment of a rank holding `share` (< 1) of one device.
void AddShareEnv(const v1::Assign& assign, double share,
                 const RankPlanOptions& options,
                 std::map<std::string, std::string>& env) {
  env["TUPA_GPU_SHARE"] = absl::StrCat(share);
  env["TUPA_GPU_MEMORY_FRACTION"] = absl::StrCat(share);
  int64_t memory = 0;
  if (assign.device_indexes_size() > 0) {
    auto it = options.device_memory_bytes.find(assign.device_indexes(0));
    if (it != options.device_memory_bytes.end()) memory = it->second;
  }
  const int64_t limit =
      static_cast<int64_t>(std::floor(share * static_cast<double>(memory)));
  if (limit > 0) env["TUPA_GPU_MEMORY_LIMIT_BYTES"] = absl::StrCat(limit);
  if (!options.mps_pipe_directory.empty()) {
    env["CUDA_MPS_PIPE_DIRECTORY"] = options.mps_pipe_directory;
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = absl::StrCat(
        std::clamp(static_cast<int>(std::ceil(share * 100)), 1, 100));
    // The rank sees its one device as device 0.
    if (limit > 0) {
      env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] =
          absl::StrCat("0=", std::max<int64_t>(1, limit >> 20), "M");
    }
  }
}

}  // namespace

absl::Status CheckAssignedDevices(const v1::Assign& assign,
                                  const std::vector<v1::Device>& devices) {
  std::set<int> have;
  for (const v1::Device& d : devices) have.insert(d.index());
  std::set<int> seen;
  for (int index : assign.device_indexes()) {
    if (!have.count(index)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "assigned device ", index, " is not one of this worker's ",
          have.size(), " device(s)"));
    }
    if (!seen.insert(index).second) {
      return absl::FailedPreconditionError(
          absl::StrCat("device ", index, " is assigned twice"));
    }
  }
  const double gpus = assign.spec().resources().gpus();
  const int want = gpus <= 0 ? 0 : gpus < 1 ? 1 : static_cast<int>(gpus);
  if (assign.device_indexes_size() != want) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the job asks for ", gpus, " GPU(s) per node but was assigned ",
        assign.device_indexes_size(), " device(s)"));
  }
  return absl::OkStatus();
}

std::vector<RankProcess> PlanRanks(const v1::Assign& assign,
                                   const RankPlanOptions& options) {
  const v1::JobSpec& spec = assign.spec();
  const bool train = spec.has_train();
  const bool per_node = !train && spec.launch() == v1::LAUNCH_MODE_PER_NODE;
  const int devices = assign.device_indexes_size();
  const int local_world = per_node ? 1 : std::max(1, devices);
  // A worker started with CUDA_VISIBLE_DEVICES=2,3 calls those devices 0
  // and 1; its ranks must see the host's numbers.
  auto host_device = [&](int index) -> std::string {
    if (index >= 0 && index < static_cast<int>(options.visible_devices.size()))
      return options.visible_devices[index];
    return absl::StrCat(index);
  };
  std::vector<std::string> all_devices;
  for (int d : assign.device_indexes()) all_devices.push_back(host_device(d));
  std::vector<RankProcess> ranks;
  for (int local = 0; local < local_world; ++local) {
    RankProcess r;
    r.local_rank = local;
    r.global_rank = assign.first_rank() + local;
    auto& env = r.env;
    for (const auto& [k, v] : spec.env()) env[k] = v;
    env["MASTER_ADDR"] = assign.master_addr();
    env["MASTER_PORT"] = absl::StrCat(assign.master_port());
    env["WORLD_SIZE"] = absl::StrCat(assign.world_size());
    env["RANK"] = absl::StrCat(r.global_rank);
    env["LOCAL_RANK"] = absl::StrCat(local);
    env["LOCAL_WORLD_SIZE"] = absl::StrCat(local_world);
    env["NODE_RANK"] = absl::StrCat(assign.node_rank());
    env["NNODES"] = absl::StrCat(assign.nnodes());
    env["GROUP_RANK"] = env["NODE_RANK"];
    if (per_node || devices == 0) {
      env["CUDA_VISIBLE_DEVICES"] = absl::StrJoin(all_devices, ",");
    } else {
      env["CUDA_VISIBLE_DEVICES"] = all_devices[local];
    }
    env["TUPA_JOB_ID"] = absl::StrCat(assign.job_id());
    env["TUPA_ATTEMPT"] = absl::StrCat(assign.attempt());
    env["TUPA_CHECKPOINT_DIR"] = options.checkpoint_dir;
    if (!spec.name().empty()) env["TUPA_JOB_NAME"] = spec.name();
    AddFrameworkEnv(assign, {r.global_rank, local, local_world}, env);
    const double share = spec.resources().gpus();
    if (share > 0 && share < 1) AddShareEnv(assign, share, options, env);
    if (options.emulated_devices) {
      env["TUPA_EMULATED_DEVICES"] = "1";
      // Emulated devices share the host's cores: split them among ranks.
      const std::string threads =
          absl::StrCat(std::max(1, options.host_cpus / local_world));
      env["OPENBLAS_NUM_THREADS"] = threads;
      env["OMP_NUM_THREADS"] = threads;
    }
    if (train) {
      // A rank on a real device trains on it or fails loudly; "auto" would
      // quietly fall back to the CPU while the job is billed for the GPU.
      const bool on_gpu = devices > 0 && !options.emulated_devices;
      r.argv = {options.trainer_path, "-f",
                options.spec_file,    "--json",
                "--backend",          on_gpu ? "cuda" : "cpu"};
    } else {
      r.argv.assign(spec.command().begin(), spec.command().end());
    }
    ranks.push_back(std::move(r));
  }
  return ranks;
}

}  // namespace tupa::worker

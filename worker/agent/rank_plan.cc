#include "worker/agent/rank_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tupa::worker {

std::vector<RankProcess> PlanRanks(const v1::Assign& assign,
                                   const RankPlanOptions& options) {
  const v1::JobSpec& spec = assign.spec();
  const bool train = spec.has_train();
  const bool per_node =
      !train && spec.launch() == v1::LAUNCH_MODE_PER_NODE;
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
    if (spec.resources().gpus() > 0 && spec.resources().gpus() < 1)
      env["TUPA_GPU_SHARE"] = absl::StrCat(spec.resources().gpus());
    if (options.emulated_devices) {
      env["TUPA_EMULATED_DEVICES"] = "1";
      // Emulated devices share the host's cores: split them among ranks.
      const std::string threads =
          absl::StrCat(std::max(1, options.host_cpus / local_world));
      env["OPENBLAS_NUM_THREADS"] = threads;
      env["OMP_NUM_THREADS"] = threads;
    }
    if (train) {
      r.argv = {options.trainer_path, "-f", options.spec_file, "--json",
                "--backend", options.emulated_devices ? "cpu" : "auto"};
    } else {
      r.argv.assign(spec.command().begin(), spec.command().end());
    }
    ranks.push_back(std::move(r));
  }
  return ranks;
}

}  // namespace tupa::worker

#include "worker/agent/rank_plan.h"

#include <gtest/gtest.h>

namespace tupa::worker {
namespace {

v1::Assign TwoNodeAssign(int node_rank) {
  v1::Assign a;
  a.set_job_id(7);
  a.set_attempt(2);
  a.mutable_spec()->add_command("python");
  a.mutable_spec()->add_command("train.py");
  a.mutable_spec()->mutable_env()->insert({"FOO", "bar"});
  a.set_node_rank(node_rank);
  a.set_nnodes(2);
  a.add_device_indexes(2);
  a.add_device_indexes(3);
  a.set_master_addr("10.0.0.5");
  a.set_master_port(29600);
  a.set_world_size(4);
  a.set_first_rank(node_rank * 2);
  return a;
}

TEST(PlanRanks, PerGpuGivesEachDeviceARankWithTheLauncherEnvironment) {
  RankPlanOptions options;
  options.checkpoint_dir = "/ckpt/job-7";
  auto ranks = PlanRanks(TwoNodeAssign(1), options);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].env.at("RANK"), "2");
  EXPECT_EQ(ranks[1].env.at("RANK"), "3");
  EXPECT_EQ(ranks[1].env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(ranks[1].env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(ranks[0].env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(ranks[0].env.at("NODE_RANK"), "1");
  EXPECT_EQ(ranks[0].env.at("NNODES"), "2");
  EXPECT_EQ(ranks[0].env.at("MASTER_ADDR"), "10.0.0.5");
  EXPECT_EQ(ranks[0].env.at("MASTER_PORT"), "29600");
  EXPECT_EQ(ranks[0].env.at("CUDA_VISIBLE_DEVICES"), "2");
  EXPECT_EQ(ranks[1].env.at("CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(ranks[0].env.at("TUPA_JOB_ID"), "7");
  EXPECT_EQ(ranks[0].env.at("TUPA_ATTEMPT"), "2");
  EXPECT_EQ(ranks[0].env.at("TUPA_CHECKPOINT_DIR"), "/ckpt/job-7");
  EXPECT_EQ(ranks[0].env.at("FOO"), "bar");
  EXPECT_EQ(ranks[0].argv, (std::vector<std::string>{"python", "train.py"}));
}

TEST(PlanRanks, PerNodeRunsOneProcessSeeingAllDevices) {
  v1::Assign a = TwoNodeAssign(0);
  a.mutable_spec()->set_launch(v1::LAUNCH_MODE_PER_NODE);
  a.set_world_size(2);
  auto ranks = PlanRanks(a, {});
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].env.at("CUDA_VISIBLE_DEVICES"), "2,3");
  EXPECT_EQ(ranks[0].env.at("LOCAL_WORLD_SIZE"), "1");
}

TEST(PlanRanks, MapsWorkerDeviceIndexesThroughItsOwnVisibleDevices) {
  RankPlanOptions options;
  options.visible_devices = {"4", "5", "6", "7"};
  auto ranks = PlanRanks(TwoNodeAssign(0), options);  // devices 2 and 3
  EXPECT_EQ(ranks[0].env.at("CUDA_VISIBLE_DEVICES"), "6");
  EXPECT_EQ(ranks[1].env.at("CUDA_VISIBLE_DEVICES"), "7");
}

TEST(PlanRanks, TrainJobsRunTheTrainerPerDeviceOnTheCpuBackendWhenEmulated) {
  v1::Assign a = TwoNodeAssign(0);
  a.mutable_spec()->clear_command();
  a.mutable_spec()->mutable_train()->set_batch_size(32);
  a.mutable_spec()->set_launch(v1::LAUNCH_MODE_PER_NODE);  // ignored
  RankPlanOptions options;
  options.trainer_path = "/bin/tupa-train";
  options.spec_file = "/w/job.json";
  options.emulated_devices = true;
  options.host_cpus = 4;
  auto ranks = PlanRanks(a, options);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].argv[0], "/bin/tupa-train");
  EXPECT_EQ(ranks[0].argv.back(), "cpu");
  EXPECT_EQ(ranks[0].env.at("OPENBLAS_NUM_THREADS"), "2");
  EXPECT_EQ(ranks[0].env.at("TUPA_EMULATED_DEVICES"), "1");
}

TEST(PlanRanks, TrainJobsOnRealDevicesAskForCudaAndCpuJobsForTheCpu) {
  v1::Assign a = TwoNodeAssign(0);
  a.mutable_spec()->clear_command();
  a.mutable_spec()->mutable_train()->set_batch_size(32);
  RankPlanOptions options;
  options.trainer_path = "/bin/tupa-train";
  auto ranks = PlanRanks(a, options);
  ASSERT_EQ(ranks.size(), 2u);
  // Never "auto": a CUDA start failure must fail the rank, not train on
  // the CPU of a node billed for its GPUs.
  EXPECT_EQ(ranks[1].argv.back(), "cuda");

  a.clear_device_indexes();  // a train job that asked for no GPU
  ranks = PlanRanks(a, options);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].argv.back(), "cpu");
  EXPECT_EQ(ranks[0].env.at("CUDA_VISIBLE_DEVICES"), "");
}

TEST(PlanRanks, FractionalJobGetsShareMemoryCapAndMpsWhenRunning) {
  v1::Assign a;
  a.set_job_id(9);
  a.mutable_spec()->add_command("true");
  a.mutable_spec()->mutable_resources()->set_gpus(0.25);
  a.add_device_indexes(1);
  a.set_world_size(1);
  RankPlanOptions options;
  options.device_memory_bytes[1] = 16LL << 30;
  auto ranks = PlanRanks(a, options);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].env.at("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(ranks[0].env.at("TUPA_GPU_SHARE"), "0.25");
  EXPECT_EQ(ranks[0].env.at("TUPA_GPU_MEMORY_FRACTION"), "0.25");
  EXPECT_EQ(ranks[0].env.at("TUPA_GPU_MEMORY_LIMIT_BYTES"),
            std::to_string(4LL << 30));
  EXPECT_EQ(ranks[0].env.count("CUDA_MPS_PIPE_DIRECTORY"), 0u);

  options.mps_pipe_directory = "/tmp/nvidia-mps";
  ranks = PlanRanks(a, options);
  EXPECT_EQ(ranks[0].env.at("CUDA_MPS_PIPE_DIRECTORY"), "/tmp/nvidia-mps");
  EXPECT_EQ(ranks[0].env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  EXPECT_EQ(ranks[0].env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=4096M");

  // Whole-GPU jobs get none of it.
  a.mutable_spec()->mutable_resources()->set_gpus(1);
  ranks = PlanRanks(a, options);
  EXPECT_EQ(ranks[0].env.count("TUPA_GPU_SHARE"), 0u);
  EXPECT_EQ(ranks[0].env.count("CUDA_MPS_PIPE_DIRECTORY"), 0u);
}

std::vector<v1::Device> FourDevices() {
  std::vector<v1::Device> devices(4);
  for (int i = 0; i < 4; ++i) devices[i].set_index(i);
  return devices;
}

TEST(CheckAssignedDevices, AcceptsTheWorkersOwnDevicesInTheAskedNumber) {
  v1::Assign a = TwoNodeAssign(0);  // devices 2 and 3
  a.mutable_spec()->mutable_resources()->set_gpus(2);
  EXPECT_TRUE(CheckAssignedDevices(a, FourDevices()).ok());

  v1::Assign share;
  share.mutable_spec()->mutable_resources()->set_gpus(0.25);
  share.add_device_indexes(1);
  EXPECT_TRUE(CheckAssignedDevices(share, FourDevices()).ok());

  v1::Assign cpu_only;
  cpu_only.mutable_spec()->mutable_resources()->set_gpus(0);
  EXPECT_TRUE(CheckAssignedDevices(cpu_only, {}).ok());
}

TEST(CheckAssignedDevices, RefusesUnknownRepeatedOrMiscountedDevices) {
  v1::Assign a = TwoNodeAssign(0);
  a.mutable_spec()->mutable_resources()->set_gpus(2);
  a.set_device_indexes(1, 7);
  absl::Status s = CheckAssignedDevices(a, FourDevices());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("device 7"), std::string::npos) << s;

  a.set_device_indexes(1, 2);
  s = CheckAssignedDevices(a, FourDevices());
  EXPECT_NE(s.message().find("device 2 is assigned twice"), std::string::npos)
      << s;

  a.set_device_indexes(1, 3);
  a.mutable_spec()->mutable_resources()->set_gpus(4);
  s = CheckAssignedDevices(a, FourDevices());
  EXPECT_NE(s.message().find("asks for 4 GPU(s)"), std::string::npos) << s;

  // A worker without devices takes no GPU job at all.
  a.mutable_spec()->mutable_resources()->set_gpus(2);
  EXPECT_FALSE(CheckAssignedDevices(a, {}).ok());
}

}  // namespace
}  // namespace tupa::worker

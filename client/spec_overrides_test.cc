#include "client/spec_overrides.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/job_spec.h"

namespace tupa::client {
namespace {

class SpecOverridesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(
        ::testing::TempDir(), "/spec_overrides_test_",
        ::testing::UnitTest::GetInstance()->current_test_info()->name(),
        ".yaml");
    std::ofstream(path_) << "name: from-file\n"
                            "team: vision\n"
                            "priority: 10\n"
                            "resources: {gpus: 2, nodes: 2, gpu_type: [A100], "
                            "cpu: 4, memory: 16Gi}\n"
                            "max_runtime: 2h\n"
                            "retries: 1\n"
                            "command: [python, train.py]\n"
                            "env: {A: file, B: file}\n";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  absl::StatusOr<v1::JobSpec> Build(std::vector<std::string> words) {
    FlagSet flags("test");
    AddSpecFlags(flags);
    auto args = flags.Parse(words);
    if (!args.ok()) return args.status();
    return BuildJobSpec(*args);
  }

  std::string path_;
};

TEST_F(SpecOverridesTest, FileAloneIsParsedWithDefaults) {
  auto spec = Build({"-f", path_});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "from-file");
  EXPECT_EQ(spec->resources().gpus(), 2);
  EXPECT_EQ(spec->resources().nodes(), 2);
  EXPECT_EQ(spec->launch(), v1::LAUNCH_MODE_PER_GPU);
  EXPECT_EQ(spec->max_runtime().seconds(), 7200);
}

TEST_F(SpecOverridesTest, FlagsOverrideFileFieldsAndKeepTheRest) {
  auto spec = Build({"-f",         path_,      "--name",        "from-flag",
                     "--gpus",     "1",        "--nodes",       "3",
                     "--priority", "90",       "--max-runtime", "30m",
                     "--memory",   "1Gi",      "--retries",     "0",
                     "--launch",   "per-node", "--max-cost",    "2.5"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "from-flag");
  EXPECT_EQ(spec->team(), "vision");  // untouched
  EXPECT_EQ(spec->priority(), 90);
  EXPECT_EQ(spec->resources().gpus(), 1);
  EXPECT_EQ(spec->resources().nodes(), 3);
  EXPECT_EQ(spec->resources().cpu(), 4);  // untouched
  EXPECT_EQ(spec->resources().memory_bytes(), int64_t{1} << 30);
  EXPECT_EQ(spec->max_runtime().seconds(), 1800);
  EXPECT_EQ(spec->retries(), 0);
  EXPECT_EQ(spec->launch(), v1::LAUNCH_MODE_PER_NODE);
  EXPECT_EQ(spec->max_cost(), "2.5");
  ASSERT_EQ(spec->command_size(), 2);  // untouched
}

TEST_F(SpecOverridesTest, GpuTypeFlagsReplaceTheFileList) {
  auto spec =
      Build({"-f", path_, "--gpu-type", "H100,H200", "--gpu-type", "L4"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->resources().gpu_type_size(), 3);
  EXPECT_EQ(spec->resources().gpu_type(0), "H100");
  EXPECT_EQ(spec->resources().gpu_type(1), "H200");
  EXPECT_EQ(spec->resources().gpu_type(2), "L4");
}

TEST_F(SpecOverridesTest, EnvFlagsMergeByKey) {
  auto spec = Build({"-f", path_, "--env", "B=flag", "--env", "C=x=y"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->env().at("A"), "file");
  EXPECT_EQ(spec->env().at("B"), "flag");
  EXPECT_EQ(spec->env().at("C"), "x=y");
}

TEST_F(SpecOverridesTest, CommandAfterSeparatorReplacesTheFileCommand) {
  auto spec = Build({"-f", path_, "--", "bash", "-c", "echo $RANK"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->command_size(), 3);
  EXPECT_EQ(spec->command(0), "bash");
  EXPECT_EQ(spec->command(2), "echo $RANK");
}

TEST_F(SpecOverridesTest, CommandReplacesATrainSection) {
  std::ofstream(path_) << "train: {epochs: 1}\n";
  auto spec = Build({"-f", path_, "--", "echo", "hi"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->has_train());
  EXPECT_EQ(spec->command_size(), 2);
}

TEST_F(SpecOverridesTest, FlagsAloneBuildACommandJob) {
  auto spec = Build({"--gpus", "2", "--nodes", "2", "--", "echo", "hi"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->resources().gpus(), 2);
  EXPECT_EQ(spec->resources().nodes(), 2);
  EXPECT_EQ(spec->command_size(), 2);
}

TEST_F(SpecOverridesTest, TensorParallelFlagSetsTrainParallel) {
  std::ofstream(path_) << "name: tp\nresources: {gpus: 2, nodes: 2}\n"
                          "train: {model: {layers: [784, 512, 10]}, "
                          "data: {format: synthetic}}\n";
  auto spec = Build({"-f", path_, "--tensor-parallel", "2"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->train().parallel().tensor(), 2);
  // 2 GPUs per node run 2 ranks: a group of 4 cannot fit on one node.
  auto four = Build({"-f", path_, "--tensor-parallel", "4"});
  ASSERT_FALSE(four.ok());
  EXPECT_TRUE(absl::StartsWith(
      four.status().message(),
      "--tensor-parallel (train.parallel.tensor): 4 does not divide the 2"))
      << four.status();
  auto command = Build({"--tensor-parallel", "2", "--", "echo", "hi"});
  ASSERT_FALSE(command.ok());
  EXPECT_TRUE(absl::StartsWith(command.status().message(),
                               "--tensor-parallel: is for jobs with a train:"))
      << command.status();
}

TEST_F(SpecOverridesTest, RangeErrorsNameTheFlagAndTheField) {
  auto spec = Build({"-f", path_, "--gpus", "2000"});
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      absl::StartsWith(spec.status().message(), "--gpus (resources.gpus): "))
      << spec.status();
}

TEST_F(SpecOverridesTest, FileErrorsNameTheFieldAndTheFile) {
  std::ofstream(path_) << "resources: {gpus: two}\ncommand: [x]\n";
  auto spec = Build({"-f", path_});
  ASSERT_FALSE(spec.ok());
  EXPECT_TRUE(absl::StartsWith(spec.status().message(), "resources.gpus"))
      << spec.status();
  EXPECT_NE(spec.status().message().find(path_), std::string::npos);
}

TEST_F(SpecOverridesTest, EnvErrorsNameTheFlagOnlyForAKeyItSet) {
  std::ofstream(path_) << "command: [x]\nenv: {\"1X\": a}\n";
  auto from_file = Build({"-f", path_, "--env", "B=1"});
  ASSERT_FALSE(from_file.ok());
  EXPECT_TRUE(absl::StartsWith(from_file.status().message(),
                               "env.1X: is not a valid variable name"))
      << from_file.status();
  std::ofstream(path_) << "command: [x]\nenv: {A: a}\n";
  auto from_flag = Build({"-f", path_, "--env", "B=1", "--env", "2Y=1"});
  ASSERT_FALSE(from_flag.ok());
  EXPECT_TRUE(absl::StartsWith(from_flag.status().message(),
                               "--env (env.2Y): is not a valid variable name"))
      << from_flag.status();
  auto not_utf8 = Build({"--env", "B=\xff", "--", "x"});
  ASSERT_FALSE(not_utf8.ok());
  EXPECT_EQ(not_utf8.status().message(), "--env: is not valid UTF-8");
}

TEST_F(SpecOverridesTest, ADirectoryIsNotASpecFile) {
  auto spec = Build({"-f", ::testing::TempDir()});
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(spec.status().message(), "-f: "))
      << spec.status();
  EXPECT_NE(spec.status().message().find("is a directory"), std::string::npos)
      << spec.status();
}

TEST_F(SpecOverridesTest, NoCommandAndNoTrainIsAnError) {
  auto spec = Build({"--gpus", "1"});
  ASSERT_FALSE(spec.ok());
  EXPECT_TRUE(absl::StartsWith(spec.status().message(), "command"))
      << spec.status();
}

}  // namespace
}  // namespace tupa::client

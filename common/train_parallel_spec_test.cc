// train.parallel: parsed from YAML, validated against the model and the
// ranks per node through ValidateJobSpec (what the scheduler runs), with
// errors naming the field.
#include "common/train_parallel_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/match.h"
#include "common/job_spec.h"

namespace tupa {
namespace {

absl::StatusOr<v1::JobSpec> Spec(const std::string& gpus,
                                 const std::string& layers,
                                 const std::string& parallel) {
  auto spec = ParseJobSpecYaml(
      "name: tp\nresources: {gpus: " + gpus + "}\ntrain:\n" +
      "  model: {type: mlp, layers: " + layers + "}\n" +
      "  data: {format: synthetic}\n  parallel: " + parallel + "\n");
  if (!spec.ok()) return spec;
  ApplyJobSpecDefaults(*spec);
  return spec;
}

TEST(TrainParallelSpec, ParsesAndValidatesATwoByTwoLayout) {
  auto spec = Spec("2", "[784, 512, 512, 512, 10]", "{tensor: 2}");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->train().parallel().tensor(), 2);
  EXPECT_EQ(TensorParallelOf(spec->train()), 2);
  EXPECT_TRUE(ValidateJobSpec(*spec).ok()) << ValidateJobSpec(*spec);
}

TEST(TrainParallelSpec, AbsentMeansOne) {
  v1::TrainSpec t;
  EXPECT_EQ(TensorParallelOf(t), 1);
  EXPECT_TRUE(ValidateTrainParallel(t, 1).ok());
}

TEST(TrainParallelSpec, BadYamlNamesTheField) {
  for (const char* bad : {"{tensor: two}", "{pipeline: 2}", "[2]"}) {
    auto spec = Spec("2", "[8, 4, 2]", bad);
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(spec.status().message(), "train.parallel"))
        << spec.status();
  }
}

TEST(TrainParallelSpec, SchedulerRefusesRanksPerNodeNotAMultipleOfT) {
  // 3 GPUs per node run 3 ranks: a group of 2 would straddle nodes.
  auto spec = Spec("3", "[8, 4, 2]", "{tensor: 2}");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const absl::Status s = ValidateJobSpec(*spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(s.message(),
                               "train.parallel.tensor: 2 does "
                               "not divide the 3 rank(s) per "
                               "node"))
      << s;
  // A CPU-only job runs one rank per node.
  auto cpu = Spec("0", "[8, 4, 2]", "{tensor: 2}");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_FALSE(ValidateJobSpec(*cpu).ok());
  auto four = Spec("4", "[8, 4, 2]", "{tensor: 2}");
  ASSERT_TRUE(four.ok());
  EXPECT_TRUE(ValidateJobSpec(*four).ok()) << ValidateJobSpec(*four);
}

TEST(TrainParallelSpec, TMustDivideTheWidthsItSplits) {
  // Pairs (0,1) and (2,3) split layers[1] = 8 and layers[3] = 6.
  auto spec = Spec("4", "[10, 8, 12, 6, 3]", "{tensor: 4}");
  ASSERT_TRUE(spec.ok());
  const absl::Status s = ValidateJobSpec(*spec);
  EXPECT_TRUE(absl::StartsWith(
      s.message(),
      "train.parallel.tensor: 4 does not divide train.model.layers[3] = 6"))
      << s;
  // The input, the odd layer's and the output widths are not split.
  auto fine = Spec("2", "[5, 8, 7, 6, 3, 9]", "{tensor: 2}");
  ASSERT_TRUE(fine.ok());
  EXPECT_TRUE(ValidateJobSpec(*fine).ok()) << ValidateJobSpec(*fine);
  EXPECT_EQ(TensorSplitWidthIndexes(5), (std::vector<int>{1, 3}));
}

TEST(TrainParallelSpec, RangeAndModelSize) {
  auto zero_layers = Spec("2", "[8, 4]", "{tensor: 2}");
  ASSERT_TRUE(zero_layers.ok());
  EXPECT_TRUE(absl::StartsWith(ValidateJobSpec(*zero_layers).message(),
                               "train.parallel.tensor: 2 needs at least 2"));
  auto negative = Spec("2", "[8, 4, 2]", "{tensor: -1}");
  ASSERT_TRUE(negative.ok());
  EXPECT_TRUE(absl::StartsWith(ValidateJobSpec(*negative).message(),
                               "train.parallel.tensor: must be between"));
}

}  // namespace
}  // namespace tupa

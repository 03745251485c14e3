// Tensor parallelism against the one-process reference (PyTorch's
// ColwiseParallel/RowwiseParallel tests, the Megatron split of
// tensor_split.h): the same model split over T CPU ranks (threads, real
// Gloo over loopback) gives the reference's loss and, gathered, its
// parameters, gradients and parameters after an AdamW step; the backend
// counts exactly one tensor all-reduce per column/row pair in the forward
// and one in the backward (none for the pair starting at layer 0, whose
// input needs no gradient).
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "worker/trainer/cpu/cpu_backend.h"
#include "worker/trainer/mlp.h"
#include "worker/trainer/tensor_parallel_test_util.h"

namespace tupa::trainer {
namespace {

using tp_testing::ExpectAllClose;
using tp_testing::Gather;
using tp_testing::Result;
using tp_testing::RunGroup;
using tp_testing::RunRank;

void CheckAgainstReference(const std::vector<int>& widths, int tensor) {
  SetBlasThreads(1);
  Result ref;
  CpuBackend reference;
  RunRank(reference, widths, 1, 0, 0, ref);
  ASSERT_EQ(ref.error, "");
  std::vector<Result> ranks = RunGroup(
      widths, tensor, [](int) -> absl::StatusOr<std::unique_ptr<Backend>> {
        return std::make_unique<CpuBackend>();
      });
  const int layers = static_cast<int>(widths.size()) - 1;
  const int pairs = layers / 2;
  for (int t = 0; t < tensor; ++t) {
    SCOPED_TRACE(::testing::Message() << "T=" << tensor << " rank " << t);
    ASSERT_EQ(ranks[t].error, "");
    // Summation order differs from the reference: fp32 rounding only.
    EXPECT_NEAR(ranks[t].loss, ref.loss, 1e-6 * std::fabs(ref.loss) + 1e-7);
    // Every rank of the group computes the same (all-reduced) logits.
    EXPECT_EQ(ranks[t].loss, ranks[0].loss);
    EXPECT_LT(ranks[t].params_init.size(), ref.params_init.size());
    EXPECT_EQ(ranks[t].tp_forward, pairs);
    EXPECT_EQ(ranks[t].tp_backward, pairs - 1);  // not for layer 0's input
    EXPECT_EQ(ranks[t].tp_total, ranks[t].tp_forward + ranks[t].tp_backward);
  }
  // The shards initialise to exactly the reference's values.
  EXPECT_EQ(Gather(ranks, ref, widths, &Result::params_init), ref.params_init);
  ExpectAllClose(Gather(ranks, ref, widths, &Result::grads), ref.grads, 1e-4,
                 "grads");
  ExpectAllClose(Gather(ranks, ref, widths, &Result::params_after),
                 ref.params_after, 1e-5, "params after AdamW");
}

TEST(TensorParallelTest, TwoColumnRowPairsOnTwoRanksMatchOneRank) {
  CheckAgainstReference({24, 32, 16, 12, 5}, 2);
}

TEST(TensorParallelTest, TwoColumnRowPairsOnFourRanksMatchOneRank) {
  CheckAgainstReference({24, 32, 16, 12, 5}, 4);
}

TEST(TensorParallelTest, OddLastLayerStaysReplicated) {
  CheckAgainstReference({24, 32, 16, 5}, 2);
}

TEST(TensorParallelTest, SplitAndShardsFollowMegatron) {
  const auto splits = SplitLayers(5, 2);
  EXPECT_EQ(splits,
            (std::vector<LayerSplit>{LayerSplit::kColumn, LayerSplit::kRow,
                                     LayerSplit::kColumn, LayerSplit::kRow,
                                     LayerSplit::kReplicated}));
  EXPECT_EQ(SplitLayers(3, 1),
            std::vector<LayerSplit>(3, LayerSplit::kReplicated));
  const LayerShard col = ShardOf(LayerSplit::kColumn, 10, 8, 4, 3);
  EXPECT_EQ(col.in, 10);
  EXPECT_EQ(col.out, 2);
  EXPECT_EQ(col.out_begin, 6);
  EXPECT_EQ(col.param_count(), 22u);
  const LayerShard row = ShardOf(LayerSplit::kRow, 8, 5, 4, 1);
  EXPECT_EQ(row.in, 2);
  EXPECT_EQ(row.in_begin, 2);
  EXPECT_EQ(row.out, 5);
  EXPECT_EQ(row.param_count(), 15u);  // W [5, 2] and the whole b [5]
}

TEST(TensorParallelTest, WidthNotDividedIsAnErrorNamingTheField) {
  CpuBackend backend;
  auto mlp = Mlp::Create(&backend, {8, 6, 4}, 4, 4, 0);
  ASSERT_FALSE(mlp.ok());
  EXPECT_NE(mlp.status().message().find("train.parallel.tensor"),
            std::string::npos)
      << mlp.status();
}

}  // namespace
}  // namespace tupa::trainer

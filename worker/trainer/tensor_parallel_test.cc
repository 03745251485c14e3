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
#include "worker/trainer/optimizer.h"
#include "worker/trainer/rng.h"
#include "worker/trainer/tcp_store.h"

namespace tupa::trainer {
namespace {

constexpr int kBatch = 16;
constexpr uint64_t kSeed = 17;

struct Result {
  float loss = 0;
  std::vector<float> params_init;
  std::vector<float> grads;
  std::vector<float> params_after;
  int64_t tp_forward = 0;
  int64_t tp_backward = 0;
  int64_t tp_total = 0;
  std::vector<LayerShard> shards;
  std::vector<size_t> w_offsets;
  std::vector<size_t> b_offsets;
  std::string error;
};

void MakeBatch(int features, int classes, std::vector<float>& x,
               std::vector<int32_t>& y) {
  Rng rng(5, 99);
  x.resize(static_cast<size_t>(kBatch) * features);
  y.resize(kBatch);
  for (float& v : x) v = rng.Uniform(-1.0f, 1.0f);
  for (int32_t& v : y) v = static_cast<int32_t>(rng.Below(classes));
}

// One rank: init, one train step, one AdamW step. Records into `out`.
void RunRank(const std::vector<int>& widths, int tensor, int tp_rank, int port,
             Result& out) {
  auto fail = [&](const absl::Status& s) { out.error = s.ToString(); };
  CpuBackend backend;
  std::unique_ptr<TcpStoreClient> store;
  if (tensor > 1) {
    auto client = TcpStoreClient::Connect("127.0.0.1", port, absl::Seconds(30));
    if (!client.ok()) return fail(client.status());
    store = *std::move(client);
    CollectiveOptions opts;
    opts.tensor_parallel = tensor;
    opts.timeout = absl::Seconds(30);
    if (auto s = backend.InitCollectives(*store, tp_rank, tensor, opts);
        !s.ok()) {
      return fail(s);
    }
  }
  auto mlp = Mlp::Create(&backend, widths, kBatch, tensor, tp_rank);
  if (!mlp.ok()) return fail(mlp.status());
  Mlp& m = **mlp;
  if (auto s = m.InitParams(kSeed); !s.ok()) return fail(s);
  const size_t n = m.num_params();
  out.params_init.assign(m.params(), m.params() + n);
  std::vector<float> x;
  std::vector<int32_t> y;
  MakeBatch(widths.front(), widths.back(), x, y);
  if (auto s = backend.LoadBatch(x.data(), y.data(), kBatch, widths.front(),
                                 m.input(), m.labels());
      !s.ok()) {
    return fail(s);
  }
  if (auto s = m.TrainStep(kBatch, 1.0f / kBatch,
                           [](int) { return absl::OkStatus(); });
      !s.ok()) {
    return fail(s);
  }
  out.loss = *m.loss_sum() / kBatch;
  out.grads.assign(m.grads(), m.grads() + n);
  OptimizerConfig oc;
  oc.lr = 0.01;
  auto opt = Optimizer::Create(&backend, oc, n);
  if (!opt.ok()) return fail(opt.status());
  if (auto s = (*opt)->Step(m.params(), m.grads(), 1, 10, 1.0f, -1.0);
      !s.ok()) {
    return fail(s);
  }
  out.params_after.assign(m.params(), m.params() + n);
  out.tp_forward = m.tensor_allreduces_forward();
  out.tp_backward = m.tensor_allreduces_backward();
  out.tp_total = backend.collective_counts().tensor_allreduces;
  for (int i = 0; i < m.num_layers(); ++i) {
    out.shards.push_back(m.shard(i));
    out.w_offsets.push_back(m.weight_offset(i));
    out.b_offsets.push_back(m.bias_offset(i));
  }
}

// Scatters each rank's shard of `field` into the full layout of `ref`.
std::vector<float> Gather(const std::vector<Result>& ranks, const Result& ref,
                          const std::vector<int>& widths,
                          std::vector<float> Result::*field) {
  std::vector<float> full((ref.*field).size(), NAN);
  for (const Result& r : ranks) {
    for (size_t i = 0; i < r.shards.size(); ++i) {
      const LayerShard& s = r.shards[i];
      const int in = widths[i];
      for (int o = 0; o < s.out; ++o) {
        for (int j = 0; j < s.in; ++j) {
          full[ref.w_offsets[i] + static_cast<size_t>(o + s.out_begin) * in +
               j + s.in_begin] =
              (r.*field)[r.w_offsets[i] + static_cast<size_t>(o) * s.in + j];
        }
        full[ref.b_offsets[i] + o + s.out_begin] =
            (r.*field)[r.b_offsets[i] + o];
      }
    }
  }
  return full;
}

void ExpectAllNear(const std::vector<float>& got,
                   const std::vector<float>& want, double rel,
                   const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double tol = rel * std::fabs(want[i]) + 1e-6;
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " vs " << want[i];
      ++bad;
    }
  }
}

void CheckAgainstReference(const std::vector<int>& widths, int tensor) {
  SetBlasThreads(1);
  Result ref;
  RunRank(widths, 1, 0, 0, ref);
  ASSERT_EQ(ref.error, "");
  auto server = TcpStoreServer::Start(0);
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<Result> ranks(tensor);
  std::vector<std::thread> threads;
  for (int t = 0; t < tensor; ++t) {
    threads.emplace_back(
        [&, t] { RunRank(widths, tensor, t, (*server)->port(), ranks[t]); });
  }
  for (std::thread& th : threads) th.join();
  const int layers = static_cast<int>(widths.size()) - 1;
  const int pairs = layers / 2;
  for (int t = 0; t < tensor; ++t) {
    SCOPED_TRACE(testing::Message() << "T=" << tensor << " rank " << t);
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
  ExpectAllNear(Gather(ranks, ref, widths, &Result::grads), ref.grads, 1e-4,
                "grads");
  ExpectAllNear(Gather(ranks, ref, widths, &Result::params_after),
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

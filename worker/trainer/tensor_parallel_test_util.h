// Test helpers for tensor parallelism (tensor_split.h): one rank's train
// step of an Mlp shard on any Backend, and the gathering of shards into the
// one-rank layout, so that the CPU (tensor_parallel_test.cc) and CUDA
// (cuda/tensor_parallel_cuda_test.cc) tests compare the same things.
// Test-only; RunRank may run concurrently in threads, one Backend each.
#ifndef TUPA_WORKER_TRAINER_TENSOR_PARALLEL_TEST_UTIL_H_
#define TUPA_WORKER_TRAINER_TENSOR_PARALLEL_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "worker/trainer/backend.h"
#include "worker/trainer/mlp.h"
#include "worker/trainer/optimizer.h"
#include "worker/trainer/rng.h"
#include "worker/trainer/tcp_store.h"

namespace tupa::trainer::tp_testing {

constexpr int kBatch = 16;
constexpr uint64_t kSeed = 17;

// What one rank saw in one step (its shard of everything).
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

inline void MakeBatch(int features, int classes, std::vector<float>& x,
                      std::vector<int32_t>& y) {
  Rng rng(5, 99);
  x.resize(static_cast<size_t>(kBatch) * features);
  y.resize(kBatch);
  for (float& v : x) v = rng.Uniform(-1.0f, 1.0f);
  for (int32_t& v : y) v = static_cast<int32_t>(rng.Below(classes));
}

// One rank: init, one train step, one AdamW step. Records into `out`.
inline void RunRank(Backend& backend, const std::vector<int>& widths,
                    int tensor, int tp_rank, int port, Result& out) {
  auto fail = [&](const absl::Status& s) { out.error = s.ToString(); };
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
  out.params_init.resize(n);
  if (auto s = backend.CopyToHost(out.params_init.data(), m.params(),
                                  n * sizeof(float));
      !s.ok()) {
    return fail(s);
  }
  std::vector<float> x;
  std::vector<int32_t> y;
  MakeBatch(widths.front(), widths.back(), x, y);
  auto hx = backend.AllocHost(x.size() * sizeof(float));
  auto hy = backend.AllocHost(y.size() * sizeof(int32_t));
  if (!hx.ok() || !hy.ok()) return fail(absl::InternalError("AllocHost"));
  std::copy(x.begin(), x.end(), static_cast<float*>(*hx));
  std::copy(y.begin(), y.end(), static_cast<int32_t*>(*hy));
  absl::Status loaded =
      backend.LoadBatch(static_cast<float*>(*hx), static_cast<int32_t*>(*hy),
                        kBatch, widths.front(), m.input(), m.labels());
  backend.FreeHost(*hx);
  backend.FreeHost(*hy);
  if (!loaded.ok()) return fail(loaded);
  if (auto s = m.TrainStep(kBatch, 1.0f / kBatch,
                           [](int) { return absl::OkStatus(); });
      !s.ok()) {
    return fail(s);
  }
  float loss_sum = 0;
  out.grads.resize(n);
  if (auto s = backend.CopyToHost(&loss_sum, m.loss_sum(), sizeof(float));
      !s.ok()) {
    return fail(s);
  }
  out.loss = loss_sum / kBatch;
  if (auto s =
          backend.CopyToHost(out.grads.data(), m.grads(), n * sizeof(float));
      !s.ok()) {
    return fail(s);
  }
  OptimizerConfig oc;
  oc.lr = 0.01;
  auto opt = Optimizer::Create(&backend, oc, n);
  if (!opt.ok()) return fail(opt.status());
  if (auto s = (*opt)->Step(m.params(), m.grads(), 1, 10, 1.0f, -1.0);
      !s.ok()) {
    return fail(s);
  }
  out.params_after.resize(n);
  if (auto s = backend.CopyToHost(out.params_after.data(), m.params(),
                                  n * sizeof(float));
      !s.ok()) {
    return fail(s);
  }
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
inline std::vector<float> Gather(const std::vector<Result>& ranks,
                                 const Result& ref,
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

inline void ExpectAllClose(const std::vector<float>& got,
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

// Runs `tensor` ranks in threads on backends from `make(rank)` (rank 0
// also takes the store's server) and returns their results.
template <typename MakeBackend>
std::vector<Result> RunGroup(const std::vector<int>& widths, int tensor,
                             MakeBackend make) {
  std::vector<Result> ranks(tensor);
  auto server = TcpStoreServer::Start(0);
  if (!server.ok()) {
    ranks[0].error = server.status().ToString();
    return ranks;
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < tensor; ++t) {
    threads.emplace_back([&, t] {
      absl::StatusOr<std::unique_ptr<Backend>> backend = make(t);
      if (!backend.ok()) {
        ranks[t].error = backend.status().ToString();
        return;
      }
      RunRank(**backend, widths, tensor, t, (*server)->port(), ranks[t]);
    });
  }
  for (std::thread& th : threads) th.join();
  return ranks;
}

}  // namespace tupa::trainer::tp_testing

#endif  // TUPA_WORKER_TRAINER_TENSOR_PARALLEL_TEST_UTIL_H_

// Gradient checks of every layer of the CPU backend against central finite
// differences, and the optimizer kernels against scalar references.
#include "worker/trainer/cpu/cpu_backend.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "worker/trainer/mlp.h"
#include "worker/trainer/rng.h"

namespace tupa::trainer {
namespace {

std::vector<float> RandomVector(size_t n, uint64_t stream, float lo = -1.0f,
                                float hi = 1.0f) {
  Rng rng(42, stream);
  std::vector<float> v(n);
  for (float& x : v) x = rng.Uniform(lo, hi);
  return v;
}

// Central difference of f around x[i] (x restored afterwards).
template <typename F>
double FiniteDifference(std::vector<float>& x, size_t i, float h, F f) {
  const float saved = x[i];
  x[i] = saved + h;
  const double plus = f();
  x[i] = saved - h;
  const double minus = f();
  x[i] = saved;
  return (plus - minus) / (2.0 * h);
}

void ExpectGradNear(double numeric, double analytic, const char* what,
                    size_t i) {
  EXPECT_NEAR(numeric, analytic, 2e-3 + 2e-2 * std::fabs(analytic))
      << what << "[" << i << "]";
}

// L = Σ y ⊙ r, so dL/dy = r; checks dW, db, dx of LinearBackward.
void CheckLinear(bool relu) {
  CpuBackend be;
  const int batch = 5, in = 7, out = 6;
  std::vector<float> x = RandomVector(batch * in, 1);
  std::vector<float> w = RandomVector(out * in, 2);
  std::vector<float> b = RandomVector(out, 3);
  const std::vector<float> r = RandomVector(batch * out, 4);
  std::vector<float> y(batch * out);
  auto loss = [&] {
    EXPECT_TRUE(be.LinearForward(x.data(), w.data(), b.data(), batch, in, out,
                                 relu, y.data())
                    .ok());
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += double{y[i]} * r[i];
    return l;
  };
  loss();
  std::vector<float> dy = r, dw(out * in), db(out), dx(batch * in);
  ASSERT_TRUE(be.LinearBackward(x.data(), w.data(), y.data(), dy.data(), batch,
                                in, out, relu, dw.data(), db.data(), dx.data())
                  .ok());
  const float h = 1e-3f;
  for (size_t i = 0; i < w.size(); ++i) {
    ExpectGradNear(FiniteDifference(w, i, h, loss), dw[i], "dW", i);
  }
  for (size_t i = 0; i < b.size(); ++i) {
    ExpectGradNear(FiniteDifference(b, i, h, loss), db[i], "db", i);
  }
  for (size_t i = 0; i < x.size(); ++i) {
    ExpectGradNear(FiniteDifference(x, i, h, loss), dx[i], "dx", i);
  }
}

TEST(CpuBackendTest, LinearGradientsMatchFiniteDifferences) {
  CheckLinear(/*relu=*/false);
}

TEST(CpuBackendTest, LinearReluGradientsMatchFiniteDifferences) {
  CheckLinear(/*relu=*/true);
}

TEST(CpuBackendTest, SoftmaxCrossEntropyGradientMatchesFiniteDifferences) {
  CpuBackend be;
  const int batch = 4, classes = 5;
  std::vector<float> logits = RandomVector(batch * classes, 5, -3.0f, 3.0f);
  const std::vector<int32_t> labels = {0, 3, 4, 2};
  std::vector<float> scratch(batch * classes);
  auto loss = [&] {
    float sum = 0;
    EXPECT_TRUE(be.SoftmaxCrossEntropy(logits.data(), labels.data(), batch,
                                       classes, 1.0f, scratch.data(), &sum)
                    .ok());
    return double{sum};
  };
  std::vector<float> grad(batch * classes);
  float sum = 0;
  ASSERT_TRUE(be.SoftmaxCrossEntropy(logits.data(), labels.data(), batch,
                                     classes, 1.0f, grad.data(), &sum)
                  .ok());
  // Reference loss in double.
  double ref = 0;
  for (int r = 0; r < batch; ++r) {
    double z = 0;
    for (int c = 0; c < classes; ++c)
      z += std::exp(double{logits[r * classes + c]});
    ref += std::log(z) - logits[r * classes + labels[r]];
  }
  EXPECT_NEAR(sum, ref, 1e-5 * ref);
  for (size_t i = 0; i < logits.size(); ++i) {
    ExpectGradNear(FiniteDifference(logits, i, 1e-3f, loss), grad[i], "dlogits",
                   i);
  }
}

TEST(CpuBackendTest, SoftmaxCrossEntropyIsStableForHugeLogits) {
  CpuBackend be;
  std::vector<float> logits = {1000.0f, -1000.0f, 0.0f};
  const int32_t label = 0;
  std::vector<float> grad(3);
  float sum = -1;
  ASSERT_TRUE(be.SoftmaxCrossEntropy(logits.data(), &label, 1, 3, 1.0f,
                                     grad.data(), &sum)
                  .ok());
  EXPECT_NEAR(sum, 0.0f, 1e-6);
  for (float g : grad) EXPECT_TRUE(std::isfinite(g));
}

// End to end: every parameter of a 3-layer MLP against finite differences
// of the mean loss.
TEST(CpuBackendTest, MlpGradientsOfEveryLayerMatchFiniteDifferences) {
  CpuBackend be;
  const int batch = 4;
  auto mlp = Mlp::Create(&be, {6, 8, 7, 3}, batch);
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  Mlp& m = **mlp;
  ASSERT_TRUE(m.InitParams(3).ok());
  const std::vector<float> x = RandomVector(batch * 6, 6);
  const std::vector<int32_t> labels = {2, 0, 1, 2};
  ASSERT_TRUE(
      be.LoadBatch(x.data(), labels.data(), batch, 6, m.input(), m.labels())
          .ok());
  const size_t n = m.num_params();
  std::vector<float> params(m.params(), m.params() + n);
  auto loss = [&] {
    std::copy(params.begin(), params.end(), m.params());
    EXPECT_TRUE(m.TrainStep(batch, 1.0f / batch, [](int) {
                   return absl::OkStatus();
                 }).ok());
    return double{*m.loss_sum()} / batch;
  };
  std::vector<int> layers_seen;
  ASSERT_TRUE(m.TrainStep(batch, 1.0f / batch, [&](int layer) {
                 layers_seen.push_back(layer);
                 return absl::OkStatus();
               }).ok());
  EXPECT_EQ(layers_seen, (std::vector<int>{2, 1, 0}));
  const std::vector<float> grads(m.grads(), m.grads() + n);
  for (size_t i = 0; i < n; ++i) {
    ExpectGradNear(FiniteDifference(params, i, 1e-3f, loss), grads[i], "param",
                   i);
  }
}

TEST(CpuBackendTest, AdamWStepMatchesScalarReference) {
  CpuBackend be;
  const size_t n = 37;
  std::vector<float> p = RandomVector(n, 7), g = RandomVector(n, 8);
  std::vector<float> m = RandomVector(n, 9, -0.1f, 0.1f);
  std::vector<float> v = RandomVector(n, 10, 0.0f, 0.01f);
  AdamWHyper h;
  h.lr = 0.01f;
  h.weight_decay = 0.1f;
  h.step = 3;
  h.grad_scale = 0.5f;
  std::vector<float> p2 = p, m2 = m, v2 = v;
  ASSERT_TRUE(
      be.AdamWStep(p2.data(), g.data(), m2.data(), v2.data(), n, h).ok());
  for (size_t i = 0; i < n; ++i) {
    double gi = 0.5 * g[i];
    double mi = 0.9 * m[i] + 0.1 * gi;
    double vi = 0.999 * v[i] + 0.001 * gi * gi;
    double pi = p[i] * (1 - 0.01 * 0.1);
    double bc1 = 1 - std::pow(0.9, 3), bc2 = 1 - std::pow(0.999, 3);
    pi -= 0.01 / bc1 * mi / (std::sqrt(vi) / std::sqrt(bc2) + 1e-8);
    EXPECT_NEAR(m2[i], mi, 1e-6);
    EXPECT_NEAR(v2[i], vi, 1e-7);
    EXPECT_NEAR(p2[i], pi, 1e-5);
  }
}

TEST(CpuBackendTest, SgdMomentumStepMatchesScalarReference) {
  CpuBackend be;
  std::vector<float> p = {1.0f, -2.0f}, g = {0.5f, 0.25f}, buf = {0, 0};
  SgdHyper h;
  h.lr = 0.1f;
  h.momentum = 0.9f;
  h.first_step = true;
  ASSERT_TRUE(be.SgdStep(p.data(), g.data(), buf.data(), 2, h).ok());
  EXPECT_FLOAT_EQ(p[0], 1.0f - 0.05f);
  h.first_step = false;
  ASSERT_TRUE(be.SgdStep(p.data(), g.data(), buf.data(), 2, h).ok());
  EXPECT_FLOAT_EQ(buf[0], 0.9f * 0.5f + 0.5f);
  EXPECT_FLOAT_EQ(p[0], 0.95f - 0.1f * 0.95f);
}

TEST(CpuBackendTest, SumOfSquaresDetectsOverflow) {
  CpuBackend be;
  std::vector<float> x(100, 2.0f);
  EXPECT_DOUBLE_EQ(*be.SumOfSquares(x.data(), x.size()), 400.0);
  x[57] = INFINITY;
  EXPECT_FALSE(std::isfinite(*be.SumOfSquares(x.data(), x.size())));
}

TEST(CpuBackendTest, CountCorrectAccumulates) {
  CpuBackend be;
  const std::vector<float> logits = {0.1f, 0.9f, 0.8f, 0.2f, 0.5f, 0.5f};
  const std::vector<int32_t> labels = {1, 1, 0};
  float correct = 1;
  ASSERT_TRUE(
      be.CountCorrect(logits.data(), labels.data(), 3, 2, &correct).ok());
  EXPECT_EQ(correct, 3.0f);  // rows 0 and 2 (tie -> index 0), plus 1 before
}

TEST(CpuBackendTest, OnlyFp32IsSupported) {
  EXPECT_TRUE(CreateBackend(BackendKind::kCpu, Precision::kFp32, 0).ok());
  EXPECT_EQ(
      CreateBackend(BackendKind::kCpu, Precision::kBf16, 0).status().code(),
      absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace tupa::trainer

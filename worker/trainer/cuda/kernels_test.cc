// Each kernel: a CPU-reference test that always runs (against finite
// differences or hand-computed values) and a CUDA test that compares the
// kernel with the reference (skipped without a device). Tolerances: fp32
// 1e-5 relative; bf16/fp16 inputs are rounded to their grid first and
// half-precision outputs compared at ~1e-2.
#include "worker/trainer/cuda/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "worker/trainer/cuda/gemm.h"
#include "worker/trainer/cuda/kernels_reference.h"
#include "worker/trainer/cuda/test_util.h"

namespace tupa::trainer::cuda {
namespace {

using testing::Download;
using testing::DownloadRaw;
using testing::ExpectAllNear;
using testing::HasCudaDevice;
using testing::RandomVector;
using testing::RoundTo;
using testing::Upload;
using testing::UploadRaw;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

float HalfTolerance(DType t) { return t == DType::kF32 ? 1e-5f : 1e-2f; }

// ------------------------------------------------ CPU reference self-checks

TEST(SoftmaxCrossEntropyReference, TwoEqualLogitsGiveLn2AndHalfGradients) {
  const std::vector<float> logits = {0.0f, 0.0f};
  const std::vector<int32_t> labels = {0};
  std::vector<float> dlogits(2), loss(1);
  std::vector<int32_t> correct(1);
  SoftmaxCrossEntropyReference(logits.data(), labels.data(), 1, 2, 1.0f,
                               dlogits.data(), loss.data(), correct.data());
  EXPECT_NEAR(loss[0], std::log(2.0f), 1e-6);
  EXPECT_NEAR(dlogits[0], -0.5f, 1e-6);
  EXPECT_NEAR(dlogits[1], 0.5f, 1e-6);
  EXPECT_EQ(correct[0], 1);  // Tie: the lowest index wins.
}

TEST(SoftmaxCrossEntropyReference, GradientMatchesFiniteDifferences) {
  const int64_t batch = 3, classes = 7;
  std::vector<float> logits = RandomVector(batch * classes, 1, -3, 3);
  const std::vector<int32_t> labels = {0, 6, 3};
  const float grad_scale = 0.5f;
  std::vector<float> dlogits(batch * classes), loss(batch);
  SoftmaxCrossEntropyReference(logits.data(), labels.data(), batch, classes,
                               grad_scale, dlogits.data(), loss.data(),
                               nullptr);
  auto total_loss = [&](const std::vector<float>& x) {
    std::vector<float> d(batch * classes), l(batch);
    SoftmaxCrossEntropyReference(x.data(), labels.data(), batch, classes, 1.0f,
                                 d.data(), l.data(), nullptr);
    double sum = 0;
    for (float v : l) sum += v;
    return sum;
  };
  const float h = 1e-2f;
  for (int64_t i = 0; i < batch * classes; ++i) {
    std::vector<float> plus = logits, minus = logits;
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (total_loss(plus) - total_loss(minus)) / (2 * h);
    EXPECT_NEAR(dlogits[i], grad_scale * numeric, 2e-4) << "element " << i;
  }
}

TEST(SoftmaxCrossEntropyReference, InvalidLabelGivesNanLossAndZeroGradient) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  const std::vector<int32_t> labels = {3};
  std::vector<float> dlogits(3, 1.0f), loss(1);
  SoftmaxCrossEntropyReference(logits.data(), labels.data(), 1, 3, 1.0f,
                               dlogits.data(), loss.data(), nullptr);
  EXPECT_TRUE(std::isnan(loss[0]));
  EXPECT_EQ(dlogits, std::vector<float>(3, 0.0f));
}

TEST(CountCorrectReference, CountsFirstArgmaxMatches) {
  const std::vector<float> logits = {1, 5, 5, /**/ 9, 0, 0, /**/ 0, 1, 2};
  const std::vector<int32_t> labels = {1, 0, 1};
  EXPECT_EQ(CountCorrectReference(logits.data(), labels.data(), 3, 3), 2);
}

TEST(AdamWReference, MatchesHandComputedSteps) {
  AdamWParams p;
  p.lr = 0.1f;
  p.weight_decay = 0.01f;
  std::vector<float> w = {1.0f}, m = {0.0f}, v = {0.0f};
  const std::vector<float> g = {0.5f};
  p.step = 1;
  AdamWReference(p, 1, w.data(), g.data(), m.data(), v.data());
  // Step 1: bias-corrected m/sqrt(v) = g/|g| = 1.
  const double w1 = 1.0 * (1 - 0.1 * 0.01) - 0.1 * 0.5 / (0.5 + 1e-8);
  EXPECT_NEAR(w[0], w1, 1e-6);
  EXPECT_NEAR(m[0], 0.05f, 1e-7);
  EXPECT_NEAR(v[0], 0.00025f, 1e-8);  // 1 - 0.999f is inexact.
  p.step = 2;
  const std::vector<float> g2 = {-1.0f};
  AdamWReference(p, 1, w.data(), g2.data(), m.data(), v.data());
  const double m2 = 0.9 * 0.05 + 0.1 * -1.0;
  const double v2 = 0.999 * 0.00025 + 0.001 * 1.0;
  const double w2 = w1 * (1 - 0.001) -
                    0.1 / (1 - 0.81) * m2 /
                        (std::sqrt(v2) / std::sqrt(1 - 0.999 * 0.999) + 1e-8);
  EXPECT_NEAR(w[0], w2, 1e-5);
}

TEST(SgdMomentumReference, MatchesHandComputedSteps) {
  SgdParams p;
  p.lr = 0.1f;
  p.momentum = 0.9f;
  p.weight_decay = 0.1f;
  p.first_step = true;
  std::vector<float> w = {1.0f}, buf = {123.0f};
  const std::vector<float> g = {2.0f};
  SgdMomentumReference(p, 1, w.data(), g.data(), buf.data());
  EXPECT_NEAR(buf[0], 2.1f, 1e-6);  // g + wd * w, ignoring the stale buffer.
  EXPECT_NEAR(w[0], 1.0f - 0.21f, 1e-6);
  p.first_step = false;
  SgdMomentumReference(p, 1, w.data(), g.data(), buf.data());
  const float d = 2.0f + 0.1f * 0.79f;
  EXPECT_NEAR(buf[0], 0.9f * 2.1f + d, 1e-6);
  EXPECT_NEAR(w[0], 0.79f - 0.1f * (0.9f * 2.1f + d), 1e-6);
}

TEST(UnscaleReference, UnscalesAndDetectsInfAndNan) {
  std::vector<float> g = {2.0f, -4.0f};
  EXPECT_FALSE(UnscaleAndCheckFiniteReference(g.data(), 2, 0.5f));
  EXPECT_EQ(g, (std::vector<float>{1.0f, -2.0f}));
  std::vector<float> inf = {1.0f, kInf};
  EXPECT_TRUE(UnscaleAndCheckFiniteReference(inf.data(), 2, 1.0f));
  std::vector<float> nan = {kNaN, 1.0f};
  EXPECT_TRUE(UnscaleAndCheckFiniteReference(nan.data(), 2, 1.0f));
}

TEST(GradNormReference, ClipCoefficientFollowsTorch) {
  const std::vector<float> g = {3.0f, 4.0f};
  const double norm_sq = GradNormSquaredReference(g.data(), 2);
  EXPECT_DOUBLE_EQ(norm_sq, 25.0);
  EXPECT_NEAR(ClipCoefficientReference(25.0f, 1.0f, 1.0f), 0.2f, 1e-6);
  EXPECT_FLOAT_EQ(ClipCoefficientReference(25.0f, 1.0f, 10.0f), 1.0f);
  EXPECT_FLOAT_EQ(ClipCoefficientReference(25.0f, 0.5f, 0.0f), 0.5f);
  // Scaled gradients (x4): the true norm is 5, clipped to 1 -> 0.25 * 0.2.
  EXPECT_NEAR(ClipCoefficientReference(400.0f, 0.25f, 1.0f), 0.05f, 1e-6);
}

TEST(EpilogueReference, ReluMaskUsesTransposedColumnMajorBits) {
  // m=2 rows, n=3 columns: ld = 128 bits, so row 1 starts at byte 16.
  std::vector<float> c = {-1, 2, 0, /**/ 3, -4, 5};
  const std::vector<float> bias = {0.5f, 0.0f, 1.0f};
  std::vector<uint8_t> aux(ReluMaskBytes(2, 3), 0xff);
  BiasActivationReference(c.data(), bias.data(), 2, 3, true, aux.data());
  EXPECT_EQ(c, (std::vector<float>{0, 2, 1, /**/ 3.5f, 0, 6}));
  EXPECT_EQ(aux[0], 0b110);
  EXPECT_EQ(aux[16], 0b101);
  EXPECT_EQ(aux[1], 0);
  std::vector<float> grad = {1, 1, 1, 1, 1, 1};
  ApplyReluMaskReference(grad.data(), aux.data(), 2, 3);
  EXPECT_EQ(grad, (std::vector<float>{0, 1, 1, 1, 0, 1}));
}

TEST(EpilogueReference, RowAndColumnSums) {
  const std::vector<float> x = {1, 2, 3, /**/ 4, 5, 6};
  EXPECT_EQ(ColumnSumReference(x.data(), 2, 3), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(RowSumReference(x.data(), 2, 3), (std::vector<float>{6, 15}));
  std::vector<float> dy = {1, 1, 1, 1, 1, 1};
  ReluGradFromOutputReference(dy.data(),
                              std::vector<float>{0, 1, -1, 2, 0, 3}.data(), 6);
  EXPECT_EQ(dy, (std::vector<float>{0, 1, 0, 1, 0, 1}));
}

// ------------------------------------------------------ CUDA vs reference

class KernelsCuda : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!HasCudaDevice()) GTEST_SKIP() << "no CUDA device";
  }
  DType type() const { return GetParam(); }
};

TEST_P(KernelsCuda, SoftmaxCrossEntropyMatchesReference) {
  const int64_t batch = 37, classes = 1000;
  const std::vector<float> logits =
      RoundTo(type(), RandomVector(batch * classes, 2, -4, 4));
  std::vector<int32_t> labels(batch);
  for (int64_t r = 0; r < batch; ++r) labels[r] = (r * 37) % classes;
  labels[5] = -1;  // Invalid label row.
  const float grad_scale = 1.0f / batch;
  std::vector<float> want_d(batch * classes), want_loss(batch);
  std::vector<int32_t> want_correct(batch);
  SoftmaxCrossEntropyReference(logits.data(), labels.data(), batch, classes,
                               grad_scale, want_d.data(), want_loss.data(),
                               want_correct.data());
  DeviceBuffer x = Upload(type(), logits);
  DeviceBuffer y = UploadRaw(labels);
  auto loss = DeviceBuffer::Create(batch * 4);
  auto correct = DeviceBuffer::Create(batch * 4);
  ASSERT_TRUE(loss.ok() && correct.ok());
  // In place: dlogits aliases logits.
  ASSERT_TRUE(SoftmaxCrossEntropy(
                  type(), x.data(), y.as<int32_t>(), batch, classes, grad_scale,
                  x.data(), loss->as<float>(), correct->as<int32_t>(), nullptr)
                  .ok());
  std::vector<float> got_loss = Download(DType::kF32, loss->data(), batch);
  EXPECT_TRUE(std::isnan(got_loss[5]));
  got_loss[5] = want_loss[5] = 0;
  ExpectAllNear(got_loss, want_loss, 1e-5f, 1e-5f);
  // Gradients are O(1/batch/classes): compare with a scale-aware floor.
  ExpectAllNear(Download(type(), x.data(), batch * classes), want_d,
                HalfTolerance(type()), 1e-7f);
  EXPECT_EQ(DownloadRaw<int32_t>(correct->data(), batch), want_correct);
}

TEST_P(KernelsCuda, CountCorrectMatchesReference) {
  const int64_t batch = 100, classes = 10;
  const std::vector<float> logits =
      RoundTo(type(), RandomVector(batch * classes, 3));
  std::vector<int32_t> labels(batch);
  for (int64_t r = 0; r < batch; ++r) labels[r] = r % classes;
  DeviceBuffer x = Upload(type(), logits);
  DeviceBuffer y = UploadRaw(labels);
  DeviceBuffer count = Upload(DType::kF32, {2.0f});
  ASSERT_TRUE(CountCorrect(type(), x.data(), y.as<int32_t>(), batch, classes,
                           count.as<float>(), nullptr)
                  .ok());
  EXPECT_EQ(Download(DType::kF32, count.data(), 1)[0],
            2.0f + CountCorrectReference(logits.data(), labels.data(), batch,
                                         classes));
}

TEST_P(KernelsCuda, AdamWMatchesReferenceAndWritesHalfCopy) {
  const int64_t n = 10007;
  std::vector<float> w = RandomVector(n, 4), m = RandomVector(n, 5, -0.1, 0.1),
                     v = RandomVector(n, 6, 0, 0.01);
  const std::vector<float> g = RoundTo(type(), RandomVector(n, 7));
  DeviceBuffer dw = Upload(DType::kF32, w), dm = Upload(DType::kF32, m),
               dv = Upload(DType::kF32, v), dg = Upload(type(), g),
               half = Upload(DType::kBF16, std::vector<float>(n)),
               coef = Upload(DType::kF32, {0.5f});
  AdamWParams p;
  p.step = 3;
  p.grad_scale = 2.0f;
  ASSERT_TRUE(AdamW(p, n, dw.as<float>(), type(), dg.data(), dm.as<float>(),
                    dv.as<float>(), DType::kBF16, half.data(), coef.as<float>(),
                    nullptr, nullptr)
                  .ok());
  AdamWReference(p, n, w.data(), g.data(), m.data(), v.data(), 0.5f);
  ExpectAllNear(Download(DType::kF32, dw.data(), n), w, 1e-5f, 1e-6f);
  ExpectAllNear(Download(DType::kF32, dm.data(), n), m, 1e-5f, 1e-7f);
  ExpectAllNear(Download(DType::kF32, dv.data(), n), v, 1e-5f, 1e-9f);
  ExpectAllNear(Download(DType::kBF16, half.data(), n),
                RoundTo(DType::kBF16, w), 1e-2f, 1e-6f);
}

TEST_P(KernelsCuda, OptimizersSkipWhenFlagSet) {
  const int64_t n = 64;
  const std::vector<float> w = RandomVector(n, 8);
  DeviceBuffer dw = Upload(DType::kF32, w),
               g = Upload(type(), RandomVector(n, 9)),
               m = Upload(DType::kF32, std::vector<float>(n)),
               v = Upload(DType::kF32, std::vector<float>(n));
  DeviceBuffer skip = UploadRaw(std::vector<int32_t>{1});
  ASSERT_TRUE(AdamW(AdamWParams{}, n, dw.as<float>(), type(), g.data(),
                    m.as<float>(), v.as<float>(), DType::kF32, nullptr, nullptr,
                    skip.as<int32_t>(), nullptr)
                  .ok());
  ASSERT_TRUE(SgdMomentum(SgdParams{}, n, dw.as<float>(), type(), g.data(),
                          m.as<float>(), DType::kF32, nullptr, nullptr,
                          skip.as<int32_t>(), nullptr)
                  .ok());
  EXPECT_EQ(Download(DType::kF32, dw.data(), n), w);
}

TEST_P(KernelsCuda, SgdMomentumMatchesReference) {
  const int64_t n = 5000;
  std::vector<float> w = RandomVector(n, 10), buf = RandomVector(n, 11);
  const std::vector<float> g = RoundTo(type(), RandomVector(n, 12));
  DeviceBuffer dw = Upload(DType::kF32, w), db = Upload(DType::kF32, buf),
               dg = Upload(type(), g);
  SgdParams p;
  p.weight_decay = 1e-4f;
  p.nesterov = true;
  ASSERT_TRUE(SgdMomentum(p, n, dw.as<float>(), type(), dg.data(),
                          db.as<float>(), DType::kF32, nullptr, nullptr,
                          nullptr, nullptr)
                  .ok());
  SgdMomentumReference(p, n, w.data(), g.data(), buf.data());
  ExpectAllNear(Download(DType::kF32, dw.data(), n), w, 1e-5f, 1e-6f);
  ExpectAllNear(Download(DType::kF32, db.data(), n), buf, 1e-5f, 1e-6f);
}

TEST_P(KernelsCuda, UnscaleMatchesReferenceAndFlagsOverflow) {
  const int64_t n = 3000;
  std::vector<float> g = RoundTo(type(), RandomVector(n, 13, -100, 100));
  DeviceBuffer dg = Upload(type(), g);
  DeviceBuffer flag = UploadRaw(std::vector<int32_t>{0});
  ASSERT_TRUE(UnscaleAndCheckFinite(type(), dg.data(), n, 0.25f,
                                    flag.as<int32_t>(), nullptr)
                  .ok());
  EXPECT_FALSE(UnscaleAndCheckFiniteReference(g.data(), n, 0.25f));
  ExpectAllNear(Download(type(), dg.data(), n), g, HalfTolerance(type()), 0);
  EXPECT_EQ(DownloadRaw<int32_t>(flag.data(), 1)[0], 0);
  g[1234] = kInf;
  DeviceBuffer bad = Upload(type(), g);
  ASSERT_TRUE(UnscaleAndCheckFinite(type(), bad.data(), n, 1.0f,
                                    flag.as<int32_t>(), nullptr)
                  .ok());
  EXPECT_EQ(DownloadRaw<int32_t>(flag.data(), 1)[0], 1);
}

TEST_P(KernelsCuda, GradNormAndClipCoefficientMatchReference) {
  const int64_t n = 1 << 20;
  const std::vector<float> g = RoundTo(type(), RandomVector(n, 14));
  DeviceBuffer dg = Upload(type(), g);
  auto scratch = DeviceBuffer::Create(kGradNormScratchFloats * 4);
  DeviceBuffer out = Upload(DType::kF32, {0.0f, 0.0f});
  ASSERT_TRUE(scratch.ok());
  float* norm_sq = out.as<float>();
  ASSERT_TRUE(GradNormSquared(type(), dg.data(), n, scratch->as<float>(),
                              norm_sq, nullptr)
                  .ok());
  ASSERT_TRUE(ClipCoefficient(norm_sq, 0.5f, 1.0f, norm_sq + 1, nullptr).ok());
  const std::vector<float> got = Download(DType::kF32, out.data(), 2);
  const double want = GradNormSquaredReference(g.data(), n);
  EXPECT_NEAR(got[0], want, 1e-5 * want);
  EXPECT_NEAR(got[1], ClipCoefficientReference(got[0], 0.5f, 1.0f), 1e-7);
}

TEST_P(KernelsCuda, CastRoundsToNearestEven) {
  const int64_t n = 4099;
  const std::vector<float> x = RandomVector(n, 15, -1000, 1000);
  DeviceBuffer src = Upload(DType::kF32, x);
  auto dst = DeviceBuffer::Create(n * SizeOf(type()));
  auto back = DeviceBuffer::Create(n * 4);
  ASSERT_TRUE(dst.ok() && back.ok());
  ASSERT_TRUE(
      Cast(DType::kF32, src.data(), type(), dst->data(), n, nullptr).ok());
  ASSERT_TRUE(
      Cast(type(), dst->data(), DType::kF32, back->data(), n, nullptr).ok());
  EXPECT_EQ(Download(DType::kF32, back->data(), n), RoundTo(type(), x));
}

TEST_P(KernelsCuda, EpilogueKernelsMatchReference) {
  const int64_t m = 33, n = 200;
  std::vector<float> c = RoundTo(type(), RandomVector(m * n, 16));
  const std::vector<float> bias = RoundTo(type(), RandomVector(n, 17));
  DeviceBuffer dc = Upload(type(), c), dbias = Upload(type(), bias);
  auto aux = DeviceBuffer::Create(ReluMaskBytes(m, n));
  ASSERT_TRUE(aux.ok());
  ASSERT_TRUE(BiasActivation(type(), dc.data(), dbias.data(), m, n, true,
                             aux->as<uint8_t>(), nullptr)
                  .ok());
  std::vector<uint8_t> want_aux(ReluMaskBytes(m, n));
  BiasActivationReference(c.data(), bias.data(), m, n, true, want_aux.data());
  const std::vector<float> got = Download(type(), dc.data(), m * n);
  ExpectAllNear(got, RoundTo(type(), c), HalfTolerance(type()), 1e-6f);
  const std::vector<uint8_t> got_aux =
      DownloadRaw<uint8_t>(aux->data(), ReluMaskBytes(m, n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(ReluMaskBit(got_aux.data(), n, i, j), got[i * n + j] > 0)
          << i << "," << j;
    }
  }
  std::vector<float> grad = RoundTo(type(), RandomVector(m * n, 18));
  DeviceBuffer dgrad = Upload(type(), grad);
  ASSERT_TRUE(
      ApplyReluMask(type(), dgrad.data(), aux->as<uint8_t>(), m, n, nullptr)
          .ok());
  ApplyReluMaskReference(grad.data(), got_aux.data(), m, n);
  EXPECT_EQ(Download(type(), dgrad.data(), m * n), grad);
  auto sums = DeviceBuffer::Create((m + n) * 4);
  ASSERT_TRUE(sums.ok());
  ASSERT_TRUE(
      ColumnSum(type(), dgrad.data(), m, n, DType::kF32, sums->data(), nullptr)
          .ok());
  ASSERT_TRUE(RowSum(type(), dgrad.data(), m, n, DType::kF32,
                     sums->as<float>() + n, nullptr)
                  .ok());
  const std::vector<float> got_sums =
      Download(DType::kF32, sums->data(), m + n);
  ExpectAllNear({got_sums.begin(), got_sums.begin() + n},
                ColumnSumReference(grad.data(), m, n), 1e-5f, 1e-5f);
  ExpectAllNear({got_sums.begin() + n, got_sums.end()},
                RowSumReference(grad.data(), m, n), 1e-5f, 1e-5f);
  std::vector<float> dy = RoundTo(type(), RandomVector(m * n, 19));
  DeviceBuffer ddy = Upload(type(), dy);
  ASSERT_TRUE(
      ReluGradFromOutput(type(), ddy.data(), dc.data(), m * n, nullptr).ok());
  ReluGradFromOutputReference(dy.data(), got.data(), m * n);
  EXPECT_EQ(Download(type(), ddy.data(), m * n), dy);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, KernelsCuda,
                         ::testing::Values(DType::kF32, DType::kBF16,
                                           DType::kF16),
                         [](const auto& info) {
                           return std::string(DTypeName(info.param));
                         });

}  // namespace
}  // namespace tupa::trainer::cuda

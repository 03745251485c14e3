// CudaBackend against the CPU backend (the reference engine): one MLP
// training step through the Backend interface only, compared tensor by
// tensor. fp32: 1e-4 relative (GEMM summation order differs); bf16/fp16:
// loss within 2e-2 and gradients with cosine similarity > 0.999.
#include "worker/trainer/cuda/cuda_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "worker/trainer/cpu/cpu_backend.h"
#include "worker/trainer/cuda/test_util.h"

namespace tupa::trainer::cuda {
namespace {

using testing::ExpectAllNear;
using testing::HasCudaDevice;
using testing::RandomVector;

constexpr int kBatch = 48, kIn = 64, kHidden = 96, kClasses = 10;
constexpr size_t kW1 = kHidden * kIn, kB1 = kHidden, kW2 = kClasses * kHidden,
                 kB2 = kClasses;
constexpr size_t kParams = kW1 + kB1 + kW2 + kB2;

struct StepResult {
  float loss = 0;
  float correct = 0;
  std::vector<float> grads;   // Flat, same layout as the parameters.
  std::vector<float> params;  // After one AdamW step.
};

// One forward/backward/AdamW step of a 2-layer MLP using only the Backend
// API; any failing call fails the test.
StepResult RunStep(Backend& be) {
  const size_t act = be.activation_bytes();
  const std::vector<float> params0 = RandomVector(kParams, 1, -0.2f, 0.2f);
  const std::vector<float> x = RandomVector(kBatch * kIn, 2);
  std::vector<int32_t> labels(kBatch);
  for (int i = 0; i < kBatch; ++i) labels[i] = (i * 7) % kClasses;

  auto alloc = [&](size_t bytes) {
    auto p = be.Alloc(bytes);
    EXPECT_TRUE(p.ok()) << p.status();
    return *p;
  };
  float* params = static_cast<float*>(alloc(kParams * 4));
  float* grads = static_cast<float*>(alloc(kParams * 4));
  float* m = static_cast<float*>(alloc(kParams * 4));
  float* v = static_cast<float*>(alloc(kParams * 4));
  void* dx = alloc(kBatch * kIn * act);
  void* h = alloc(kBatch * kHidden * act);
  void* logits = alloc(kBatch * kClasses * act);
  auto* dlabels = static_cast<int32_t*>(alloc(kBatch * 4));
  auto* scalars = static_cast<float*>(alloc(8));
  auto host_x = be.AllocHost(x.size() * 4);
  auto host_labels = be.AllocHost(kBatch * 4);
  EXPECT_TRUE(host_x.ok() && host_labels.ok());
  std::copy(x.begin(), x.end(), static_cast<float*>(*host_x));
  std::copy(labels.begin(), labels.end(), static_cast<int32_t*>(*host_labels));

  float* w1 = params;
  float* b1 = w1 + kW1;
  float* w2 = b1 + kB1;
  float* b2 = w2 + kW2;
  EXPECT_TRUE(be.CopyToDevice(params, params0.data(), kParams * 4).ok());
  EXPECT_TRUE(be.Zero(m, kParams * 4).ok());
  EXPECT_TRUE(be.Zero(v, kParams * 4).ok());
  EXPECT_TRUE(be.Zero(scalars, 8).ok());
  EXPECT_TRUE(be.OnParamsUpdated(params, kParams).ok());
  EXPECT_TRUE(be.LoadBatch(static_cast<float*>(*host_x),
                           static_cast<int32_t*>(*host_labels), kBatch, kIn, dx,
                           dlabels)
                  .ok());
  EXPECT_TRUE(be.LinearForward(dx, w1, b1, kBatch, kIn, kHidden, true, h).ok());
  EXPECT_TRUE(
      be.LinearForward(h, w2, b2, kBatch, kHidden, kClasses, false, logits)
          .ok());
  EXPECT_TRUE(
      be.CountCorrect(logits, dlabels, kBatch, kClasses, scalars + 1).ok());
  EXPECT_TRUE(be.SoftmaxCrossEntropy(logits, dlabels, kBatch, kClasses,
                                     1.0f / kBatch, logits, scalars)
                  .ok());
  void* dh = alloc(kBatch * kHidden * act);
  EXPECT_TRUE(be.LinearBackward(h, w2, logits, logits, kBatch, kHidden,
                                kClasses, false, grads + kW1 + kB1,
                                grads + kW1 + kB1 + kW2, dh)
                  .ok());
  EXPECT_TRUE(be.LinearBackward(dx, w1, h, dh, kBatch, kIn, kHidden, true,
                                grads, grads + kW1, nullptr)
                  .ok());
  AdamWHyper hyper;
  hyper.lr = 1e-2f;
  EXPECT_TRUE(be.AdamWStep(params, grads, m, v, kParams, hyper).ok());
  EXPECT_TRUE(be.OnParamsUpdated(params, kParams).ok());

  StepResult r;
  float host_scalars[2];
  r.grads.resize(kParams);
  r.params.resize(kParams);
  EXPECT_TRUE(be.CopyToHost(host_scalars, scalars, 8).ok());
  EXPECT_TRUE(be.CopyToHost(r.grads.data(), grads, kParams * 4).ok());
  EXPECT_TRUE(be.CopyToHost(r.params.data(), params, kParams * 4).ok());
  r.loss = host_scalars[0] / kBatch;
  r.correct = host_scalars[1];
  for (void* p :
       {static_cast<void*>(params), static_cast<void*>(grads),
        static_cast<void*>(m), static_cast<void*>(v), dx, h, logits,
        static_cast<void*>(dlabels), static_cast<void*>(scalars), dh}) {
    be.Free(p);
  }
  be.FreeHost(*host_x);
  be.FreeHost(*host_labels);
  return r;
}

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

TEST(CudaBackend, CreateWithoutDeviceIsFailedPrecondition) {
  if (HasCudaDevice()) GTEST_SKIP() << "needs a machine without a device";
  auto backend = CreateCudaBackend(Precision::kFp32, 0);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CudaBackendReference, CpuBackendStepIsDeterministicAndLearns) {
  // The CPU half of the comparison below: the reference step itself must be
  // reproducible and produce a sane loss (ln 10 at random init).
  CpuBackend cpu_a, cpu_b;
  const StepResult a = RunStep(cpu_a), b = RunStep(cpu_b);
  EXPECT_EQ(a.grads, b.grads);
  EXPECT_NEAR(a.loss, std::log(10.0f), 0.3f);
  EXPECT_GE(a.correct, 0.0f);
  EXPECT_LE(a.correct, kBatch);
}

class CudaBackendVsCpu : public ::testing::TestWithParam<Precision> {
 protected:
  void SetUp() override {
    if (!HasCudaDevice()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaBackendVsCpu, MlpStepMatchesCpuBackend) {
  CpuBackend cpu;
  const StepResult want = RunStep(cpu);
  auto gpu = CreateCudaBackend(GetParam(), 0);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const StepResult got = RunStep(**gpu);
  if (GetParam() == Precision::kFp32) {
    EXPECT_NEAR(got.loss, want.loss, 1e-5f * want.loss);
    EXPECT_EQ(got.correct, want.correct);
    ExpectAllNear(got.grads, want.grads, 1e-4f, 1e-6f);
    ExpectAllNear(got.params, want.params, 1e-4f, 1e-5f);
  } else {
    EXPECT_NEAR(got.loss, want.loss, 2e-2f * want.loss);
    EXPECT_GT(Cosine(got.grads, want.grads), 0.999);
    EXPECT_GT(Cosine(got.params, want.params), 0.9999);
  }
}

INSTANTIATE_TEST_SUITE_P(AllPrecisions, CudaBackendVsCpu,
                         ::testing::Values(Precision::kFp32, Precision::kBf16,
                                           Precision::kFp16),
                         [](const auto& info) {
                           return std::string(PrecisionName(info.param));
                         });

}  // namespace
}  // namespace tupa::trainer::cuda

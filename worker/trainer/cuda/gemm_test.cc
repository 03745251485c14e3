// GemmRunner against GemmReference. The reference is itself checked against
// explicitly transposed naive loops and hand-computed epilogues (always
// runs); the CUDA comparison covers every transpose pair, type and epilogue,
// fused and unfused (skipped without a device). Tolerances: fp32 1e-5
// relative (full fp32 compute, no TF32); bf16/fp16 1e-2.
#include "worker/trainer/cuda/gemm.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "worker/trainer/cuda/gemm_reference.h"
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

std::vector<float> Transpose(const std::vector<float>& x, int64_t rows,
                             int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = x[i * cols + j];
  }
  return t;
}

TEST(GemmReference, TransposesMatchNaiveLoops) {
  const int64_t m = 4, n = 5, k = 3;
  const std::vector<float> a = RandomVector(m * k, 1);  // [m,k]
  const std::vector<float> b = RandomVector(k * n, 2);  // [k,n]
  const std::vector<float> c0 = RandomVector(m * n, 3);
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
      want[i * n + j] = 2.0f * acc + 0.5f * c0[i * n + j];
    }
  }
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const std::vector<float> sa = ta ? Transpose(a, m, k) : a;
      const std::vector<float> sb = tb ? Transpose(b, k, n) : b;
      std::vector<float> c = c0;
      GemmReferenceArgs args;
      args.m = m, args.n = n, args.k = k, args.trans_a = ta, args.trans_b = tb;
      args.a = sa.data(), args.b = sb.data(), args.c = c.data();
      args.alpha = 2.0f, args.beta = 0.5f;
      GemmReference(args);
      ExpectAllNear(c, want, 1e-6f, 1e-6f);
    }
  }
}

TEST(GemmReference, BackwardEpiloguesMatchHandComputedValues) {
  // A = [[1,2],[3,4]], B = I: C = A.
  const std::vector<float> a = {1, -2, 3, 4}, b = {1, 0, 0, 1};
  std::vector<uint8_t> aux(ReluMaskBytes(2, 2), 0);
  aux[0] = 0b01;   // Row 0: keep column 0.
  aux[16] = 0b11;  // Row 1: keep both.
  std::vector<float> c(4), bias_grad(2);
  GemmReferenceArgs args;
  args.m = 2, args.n = 2, args.k = 2;
  args.a = a.data(), args.b = b.data(), args.c = c.data();
  args.epilogue = Epilogue::kDReluBiasGrad;
  args.aux = aux.data();
  args.bias_grad = bias_grad.data();
  GemmReference(args);
  EXPECT_EQ(c, (std::vector<float>{1, 0, 3, 4}));
  EXPECT_EQ(bias_grad, (std::vector<float>{4, 4}));
  // kBiasGradA with A transposed: sums of op(A) rows = columns of stored A.
  args.epilogue = Epilogue::kBiasGradA;
  args.trans_a = true;
  GemmReference(args);
  EXPECT_EQ(bias_grad, (std::vector<float>{4, 2}));
  EXPECT_EQ(c, (std::vector<float>{1, 3, -2, 4}));
}

TEST(GemmReference, ReluBiasEpilogueClampsAndMasks) {
  const std::vector<float> a = {1, 2}, b = {1, -1, 0.5f};  // [1,1]x... k=1
  std::vector<float> c(6);
  const std::vector<float> bias = {0, 0.5f, -1};
  std::vector<uint8_t> aux(ReluMaskBytes(2, 3));
  GemmReferenceArgs args;
  args.m = 2, args.n = 3, args.k = 1;
  args.a = a.data(), args.b = b.data(), args.c = c.data();
  args.bias = bias.data(), args.aux = aux.data();
  args.epilogue = Epilogue::kReluAuxBias;
  GemmReference(args);
  EXPECT_EQ(c, (std::vector<float>{1, 0, 0, 2, 0, 0}));
  EXPECT_EQ(aux[0], 0b001);
  EXPECT_EQ(aux[16], 0b001);
}

// (type, trans_a, trans_b, epilogue, force_unfused)
using GemmCase = std::tuple<DType, bool, bool, Epilogue, bool>;

std::string GemmCaseName(const ::testing::TestParamInfo<GemmCase>& info) {
  return std::string(DTypeName(std::get<0>(info.param))) +
         (std::get<1>(info.param) ? "_ta" : "_na") +
         (std::get<2>(info.param) ? "_tb" : "_nb") + "_" +
         EpilogueName(std::get<3>(info.param)) +
         (std::get<4>(info.param) ? "_unfused" : "_fused");
}

class GemmCuda : public ::testing::TestWithParam<GemmCase> {
 protected:
  void SetUp() override {
    if (!HasCudaDevice()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(GemmCuda, MatchesReference) {
  const auto [type, ta, tb, epilogue, unfused] = GetParam();
  const int64_t m = 96, n = 136, k = 72;  // n not a multiple of 128: mask pad.
  const std::vector<float> a = RoundTo(type, RandomVector(m * k, 21));
  const std::vector<float> b = RoundTo(type, RandomVector(k * n, 22));
  // The backward epilogues write fp32 weight gradients; the rest keep type.
  const DType c_type = epilogue == Epilogue::kBiasGradA ? DType::kF32 : type;
  const std::vector<float> bias = RoundTo(c_type, RandomVector(n, 23));
  std::vector<uint8_t> aux(ReluMaskBytes(m, n));
  for (size_t i = 0; i < aux.size(); ++i) aux[i] = (i * 37 + 11) & 0xff;

  auto runner = GemmRunner::Create();
  ASSERT_TRUE(runner.ok()) << runner.status();
  (*runner)->set_force_unfused(unfused);
  DeviceBuffer da = Upload(type, a), db = Upload(type, b);
  DeviceBuffer dc = Upload(c_type, std::vector<float>(m * n));
  DeviceBuffer dbias = Upload(c_type, bias);
  DeviceBuffer dgrad = Upload(c_type, std::vector<float>(std::max(m, n)));
  DeviceBuffer daux = UploadRaw(aux);
  GemmArgs args;
  args.m = m, args.n = n, args.k = k, args.trans_a = ta, args.trans_b = tb;
  args.ab_type = type, args.c_type = c_type;
  args.a = da.data(), args.b = db.data(), args.c = dc.data();
  args.epilogue = epilogue;
  args.bias = dbias.data(), args.bias_grad = dgrad.data(),
  args.aux = daux.data();
  ASSERT_TRUE((*runner)->Run(args, nullptr).ok());

  const std::vector<float> sa = ta ? Transpose(a, m, k) : a;
  const std::vector<float> sb = tb ? Transpose(b, k, n) : b;
  // Give the stored (transposed) data to the device too.
  if (ta || tb) {
    da = Upload(type, sa);
    db = Upload(type, sb);
    args.a = da.data(), args.b = db.data();
    daux = UploadRaw(aux);
    args.aux = daux.data();
    ASSERT_TRUE((*runner)->Run(args, nullptr).ok());
  }
  std::vector<float> want(m * n), want_grad(std::max(m, n));
  std::vector<uint8_t> want_aux = aux;
  GemmReferenceArgs ref;
  ref.m = m, ref.n = n, ref.k = k, ref.trans_a = ta, ref.trans_b = tb;
  ref.a = sa.data(), ref.b = sb.data(), ref.c = want.data();
  ref.epilogue = epilogue, ref.bias = bias.data();
  ref.bias_grad = want_grad.data(), ref.aux = want_aux.data();
  GemmReference(ref);

  const float tol = type == DType::kF32 ? 1e-5f : 1e-2f;
  const std::vector<float> got = Download(c_type, dc.data(), m * n);
  ExpectAllNear(got, RoundTo(c_type, want), tol, tol);
  if (epilogue == Epilogue::kDReluBiasGrad) {
    ExpectAllNear(Download(c_type, dgrad.data(), n),
                  {want_grad.begin(), want_grad.begin() + n}, tol, tol * 10);
  }
  if (epilogue == Epilogue::kBiasGradA) {
    ExpectAllNear(Download(c_type, dgrad.data(), m),
                  {want_grad.begin(), want_grad.begin() + m}, tol, tol * 10);
  }
  if (epilogue == Epilogue::kReluAuxBias) {
    const std::vector<uint8_t> got_aux =
        DownloadRaw<uint8_t>(daux.data(), aux.size());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (std::fabs(want[i * n + j]) < 0.05f) continue;  // Rounding ties.
        ASSERT_EQ(ReluMaskBit(got_aux.data(), n, i, j),
                  ReluMaskBit(want_aux.data(), n, i, j))
            << "mask bit " << i << "," << j
            << " fused=" << (*runner)->last_run_fused();
      }
    }
  }
  if (!unfused && epilogue != Epilogue::kNone) {
    // Not an error (the fallback is exact), but worth seeing in the log.
    std::cout << "[ fused    ] " << EpilogueName(epilogue) << " "
              << DTypeName(type) << ": " << (*runner)->last_run_fused() << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllCases, GemmCuda,
    ::testing::Combine(
        ::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
        ::testing::Bool(), ::testing::Bool(),
        ::testing::Values(Epilogue::kNone, Epilogue::kBias, Epilogue::kReluBias,
                          Epilogue::kReluAuxBias, Epilogue::kDReluBiasGrad,
                          Epilogue::kBiasGradA),
        ::testing::Bool()),
    GemmCaseName);

TEST(GemmRunner, RejectsEpilogueWithBetaAndMissingPointers) {
  if (!HasCudaDevice()) GTEST_SKIP() << "no CUDA device";
  auto runner = GemmRunner::Create();
  ASSERT_TRUE(runner.ok());
  DeviceBuffer buf = Upload(DType::kF32, std::vector<float>(64));
  GemmArgs args;
  args.m = args.n = args.k = 4;
  args.a = args.b = args.c = buf.data();
  args.beta = 1.0f;
  args.epilogue = Epilogue::kReluBias;
  args.bias = buf.data();
  EXPECT_EQ((*runner)->Run(args, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  args.beta = 0.0f;
  args.bias = nullptr;
  EXPECT_EQ((*runner)->Run(args, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GemmRunner, CreateFailsCleanlyWithoutDevice) {
  if (HasCudaDevice()) GTEST_SKIP() << "needs a machine without a device";
  auto runner = GemmRunner::Create();
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tupa::trainer::cuda

// Tensor parallelism on the CUDA backend against the CPU reference. The
// CPU halves always run (the split pieces and a T=2 group on CPU against
// the 1-rank CPU step); the CUDA halves skip without a device, and the
// NCCL group (one rank per device: NCCL will not put two ranks of a
// communicator on one device) without two.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "worker/trainer/cpu/cpu_backend.h"
#include "worker/trainer/cuda/cuda_backend.h"
#include "worker/trainer/cuda/test_util.h"
#include "worker/trainer/tensor_parallel_test_util.h"

namespace tupa::trainer::cuda {
namespace {

using testing::HasCudaDevice;
using testing::RandomVector;

constexpr int kRows = 24, kIn = 40, kOut = 36;

// Row-parallel pieces: y = x·Wᵀ without bias, then BiasActivation, equals
// the fused LinearForward with the bias (fp32 up to rounding).
std::vector<float> RowPieces(Backend& be, bool fused, bool relu) {
  const std::vector<float> x = RandomVector(kRows * kIn, 3);
  const std::vector<float> p = RandomVector(kOut * kIn + kOut, 4, -0.3f, 0.3f);
  const size_t act = be.activation_bytes();
  auto params = be.Alloc(p.size() * 4);
  auto dx = be.Alloc(kRows * kIn * act);
  auto dy = be.Alloc(kRows * kOut * act);
  auto labels = be.Alloc(kRows * 4);
  auto hx = be.AllocHost(x.size() * 4);
  auto hl = be.AllocHost(kRows * 4);
  EXPECT_TRUE(params.ok() && dx.ok() && dy.ok() && labels.ok() && hx.ok() &&
              hl.ok());
  std::copy(x.begin(), x.end(), static_cast<float*>(*hx));
  std::fill_n(static_cast<int32_t*>(*hl), kRows, 0);
  float* w = static_cast<float*>(*params);
  float* b = w + kOut * kIn;
  EXPECT_TRUE(be.CopyToDevice(w, p.data(), p.size() * 4).ok());
  EXPECT_TRUE(be.OnParamsUpdated(w, p.size()).ok());
  EXPECT_TRUE(be.LoadBatch(static_cast<float*>(*hx), static_cast<int32_t*>(*hl),
                           kRows, kIn, *dx, static_cast<int32_t*>(*labels))
                  .ok());
  if (fused) {
    EXPECT_TRUE(be.LinearForward(*dx, w, b, kRows, kIn, kOut, relu, *dy).ok());
  } else {
    EXPECT_TRUE(
        be.LinearForward(*dx, w, nullptr, kRows, kIn, kOut, false, *dy).ok());
    EXPECT_TRUE(be.BiasActivation(*dy, b, kRows, kOut, relu).ok());
  }
  // Back to fp32 through a logits-sized buffer: reuse CountCorrect-free
  // path by copying raw activations and widening on the host.
  std::vector<float> out(kRows * kOut);
  if (act == 4) {
    EXPECT_TRUE(be.CopyToHost(out.data(), *dy, out.size() * 4).ok());
  } else {
    std::vector<uint16_t> raw(out.size());
    EXPECT_TRUE(be.CopyToHost(raw.data(), *dy, raw.size() * 2).ok());
    for (size_t i = 0; i < raw.size(); ++i) {
      out[i] = be.precision() == Precision::kBf16
                   ? testing::FromBf16Bits(raw[i])
                   : testing::FromF16Bits(raw[i]);
    }
  }
  for (void* q : {*params, *dx, *dy, *labels}) be.Free(q);
  be.FreeHost(*hx);
  be.FreeHost(*hl);
  return out;
}

TEST(TensorParallelCpuHalf, RowPiecesEqualTheFusedLayer) {
  for (bool relu : {false, true}) {
    CpuBackend a, b;
    testing::ExpectAllNear(RowPieces(a, false, relu), RowPieces(b, true, relu),
                           0.0f, 0.0f);
  }
}

TEST(TensorParallelCuda, RowPiecesMatchTheCpuBackend) {
  if (!HasCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    for (bool relu : {false, true}) {
      CpuBackend cpu;
      auto gpu = CreateCudaBackend(p, 0);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      const float rel = p == Precision::kFp32 ? 1e-4f : 2e-2f;
      testing::ExpectAllNear(RowPieces(**gpu, false, relu),
                             RowPieces(cpu, true, relu), rel, rel);
    }
  }
}

const std::vector<int> kWidths = {24, 32, 16, 12, 5};

void ExpectGroupMatchesReference(const std::vector<tp_testing::Result>& ranks,
                                 double rel) {
  SetBlasThreads(1);
  CpuBackend reference;
  tp_testing::Result ref;
  tp_testing::RunRank(reference, kWidths, 1, 0, 0, ref);
  ASSERT_EQ(ref.error, "");
  for (const tp_testing::Result& r : ranks) {
    ASSERT_EQ(r.error, "");
    EXPECT_NEAR(r.loss, ref.loss, rel * std::fabs(ref.loss));
    EXPECT_EQ(r.tp_forward, 2);
    EXPECT_EQ(r.tp_backward, 1);
  }
  tp_testing::ExpectAllClose(
      tp_testing::Gather(ranks, ref, kWidths, &tp_testing::Result::grads),
      ref.grads, rel, "grads");
  tp_testing::ExpectAllClose(
      tp_testing::Gather(ranks, ref, kWidths,
                         &tp_testing::Result::params_after),
      ref.params_after, rel, "params after AdamW");
}

TEST(TensorParallelCpuHalf, TwoRankGroupMatchesOneRank) {
  ExpectGroupMatchesReference(
      tp_testing::RunGroup(kWidths, 2,
                           [](int) -> absl::StatusOr<std::unique_ptr<Backend>> {
                             return std::make_unique<CpuBackend>();
                           }),
      1e-5);
}

TEST(TensorParallelCuda, TwoDeviceNcclGroupMatchesCpuReference) {
  if (CudaDeviceCount() < 2) {
    GTEST_SKIP() << "needs 2 CUDA devices (" << CudaDeviceCount()
                 << " visible): NCCL puts one rank per device";
  }
  ExpectGroupMatchesReference(
      tp_testing::RunGroup(
          kWidths, 2,
          [](int t) { return CreateCudaBackend(Precision::kFp32, t); }),
      1e-4);
}

}  // namespace
}  // namespace tupa::trainer::cuda

#include "worker/trainer/cuda/gemm_reference.h"

#include <vector>

#include "worker/trainer/cuda/kernels_reference.h"

namespace tupa::trainer::cuda {

void GemmReference(const GemmReferenceArgs& args) {
  const int64_t m = args.m, n = args.n, k = args.k;
  auto a_at = [&](int64_t i, int64_t p) {
    return args.trans_a ? args.a[p * m + i] : args.a[i * k + p];
  };
  auto b_at = [&](int64_t p, int64_t j) {
    return args.trans_b ? args.b[j * k + p] : args.b[p * n + j];
  };
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) acc += double{a_at(i, p)} * b_at(p, j);
      float& c = args.c[i * n + j];
      c = static_cast<float>(args.alpha * acc +
                             (args.beta != 0.0f ? args.beta * c : 0.0));
    }
  }
  switch (args.epilogue) {
    case Epilogue::kNone:
      break;
    case Epilogue::kBias:
      BiasActivationReference(args.c, args.bias, m, n, false, nullptr);
      break;
    case Epilogue::kReluBias:
      BiasActivationReference(args.c, args.bias, m, n, true, nullptr);
      break;
    case Epilogue::kReluAuxBias:
      BiasActivationReference(args.c, args.bias, m, n, true, args.aux);
      break;
    case Epilogue::kDReluBiasGrad: {
      ApplyReluMaskReference(args.c, args.aux, m, n);
      std::vector<float> sums = ColumnSumReference(args.c, m, n);
      for (int64_t j = 0; j < n; ++j) args.bias_grad[j] = sums[j];
      break;
    }
    case Epilogue::kBiasGradA:
      for (int64_t i = 0; i < m; ++i) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p) sum += a_at(i, p);
        args.bias_grad[i] = static_cast<float>(sum);
      }
      break;
  }
}

}  // namespace tupa::trainer::cuda

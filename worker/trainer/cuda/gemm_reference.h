// CPU reference for GemmRunner::Run (gemm.h): the same row-major semantics
// and epilogues on fp32 data, with naive triple loops accumulating in double.
// Pure function; no CUDA calls.
#ifndef TUPA_WORKER_TRAINER_CUDA_GEMM_REFERENCE_H_
#define TUPA_WORKER_TRAINER_CUDA_GEMM_REFERENCE_H_

#include <cstdint>

#include "worker/trainer/cuda/gemm.h"

namespace tupa::trainer::cuda {

struct GemmReferenceArgs {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false;
  bool trans_b = false;
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;
  Epilogue epilogue = Epilogue::kNone;
  const float* bias = nullptr;
  float* bias_grad = nullptr;
  uint8_t* aux = nullptr;  // ReluMaskBytes(m, n) bytes.
};

void GemmReference(const GemmReferenceArgs& args);

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_GEMM_REFERENCE_H_

// Element types of tensors in the CUDA backend and their mapping onto the
// CUDA, cuBLASLt and NCCL type enums. Accumulation is always fp32.
#ifndef TUPA_WORKER_TRAINER_CUDA_DTYPE_H_
#define TUPA_WORKER_TRAINER_CUDA_DTYPE_H_

#include <library_types.h>
#include <nccl.h>

#include <cstddef>

namespace tupa::trainer::cuda {

enum class DType { kF32, kBF16, kF16 };

constexpr size_t SizeOf(DType t) { return t == DType::kF32 ? 4 : 2; }

constexpr cudaDataType_t ToCudaDataType(DType t) {
  switch (t) {
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kF16:
      return CUDA_R_16F;
    default:
      return CUDA_R_32F;
  }
}

constexpr ncclDataType_t ToNcclDataType(DType t) {
  switch (t) {
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kF16:
      return ncclFloat16;
    default:
      return ncclFloat32;
  }
}

constexpr const char* DTypeName(DType t) {
  switch (t) {
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "fp16";
    default:
      return "fp32";
  }
}

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_DTYPE_H_

#include "worker/trainer/backend.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "worker/trainer/cpu/cpu_backend.h"

namespace tupa::trainer {

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  if (name.empty() || name == "fp32") return Precision::kFp32;
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp16") return Precision::kFp16;
  return absl::InvalidArgumentError(
      absl::StrCat("precision: want fp32|bf16|fp16, got \"", name, "\""));
}

absl::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
  }
  return "fp32";
}

absl::StatusOr<BackendKind> ParseBackendKind(absl::string_view name) {
  if (name == "cpu") return BackendKind::kCpu;
  if (name == "cuda") return BackendKind::kCuda;
  return absl::InvalidArgumentError(
      absl::StrCat("backend: want cpu|cuda, got \"", name, "\""));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(BackendKind kind,
                                                       Precision precision,
                                                       int local_rank) {
  if (kind == BackendKind::kCuda) {
#ifdef TUPA_WITH_CUDA
    // CUDA backend is created here when TUPA_WITH_CUDA.
    return CreateCudaBackend(precision, local_rank);
#else
    return absl::UnimplementedError("this build has no CUDA backend");
#endif
  }
  if (precision != Precision::kFp32) {
    return absl::UnimplementedError(absl::StrCat(
        "the CPU backend supports fp32 only, not ", PrecisionName(precision)));
  }
  return std::make_unique<CpuBackend>();
}

}  // namespace tupa::trainer

#include "worker/trainer/cuda/gemm.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/cuda/cuda_status.h"
#include "worker/trainer/cuda/kernels.h"

namespace tupa::trainer::cuda {

struct GemmRunner::Plan {
  ~Plan() {
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (c != nullptr) cublasLtMatrixLayoutDestroy(c);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
  cublasLtMatmulDesc_t desc = nullptr;
  // Layouts in cuBLASLt's column-major view: a is the row-major B, b the
  // row-major A (see Run()).
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  bool has_algo = false;
};

namespace {

// Largest power of two (<= 256) dividing the address; 256 for null.
int Alignment(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  int alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

cublasLtEpilogue_t ToCublasEpilogue(Epilogue e) {
  switch (e) {
    case Epilogue::kBias:
      return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::kReluBias:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::kReluAuxBias:
      return CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    case Epilogue::kDReluBiasGrad:
      return CUBLASLT_EPILOGUE_DRELU_BGRAD;
    case Epilogue::kBiasGradA:
      // Row-major A is cuBLASLt's B operand (we compute C^T = B^T A^T).
      return CUBLASLT_EPILOGUE_BGRADB;
    case Epilogue::kNone:
      break;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool UsesBias(Epilogue e) {
  return e == Epilogue::kBias || e == Epilogue::kReluBias ||
         e == Epilogue::kReluAuxBias;
}
bool UsesBiasGrad(Epilogue e) {
  return e == Epilogue::kDReluBiasGrad || e == Epilogue::kBiasGradA;
}
bool UsesAux(Epilogue e) {
  return e == Epilogue::kReluAuxBias || e == Epilogue::kDReluBiasGrad;
}

template <typename T>
absl::Status SetAttr(cublasLtMatmulDesc_t desc,
                     cublasLtMatmulDescAttributes_t attr, const T& value) {
  return CublasStatus(
      cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)),
      "cublasLtMatmulDescSetAttribute");
}

absl::Status Validate(const GemmArgs& args) {
  if (args.m < 0 || args.n < 0 || args.k <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gemm: bad shape m=", args.m, " n=", args.n, " k=", args.k));
  }
  if (args.a == nullptr || args.b == nullptr || args.c == nullptr) {
    return absl::InvalidArgumentError("gemm: null matrix pointer");
  }
  if (args.c_type != DType::kF32 && args.c_type != args.ab_type) {
    return absl::InvalidArgumentError("gemm: c_type must be fp32 or ab_type");
  }
  const Epilogue e = args.epilogue;
  if (e != Epilogue::kNone && e != Epilogue::kBias && args.beta != 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("gemm: epilogue ", EpilogueName(e), " needs beta == 0"));
  }
  if (UsesBias(e) && args.bias == nullptr) {
    return absl::InvalidArgumentError("gemm: epilogue needs bias");
  }
  if (UsesBiasGrad(e) && args.bias_grad == nullptr) {
    return absl::InvalidArgumentError("gemm: epilogue needs bias_grad");
  }
  if (UsesAux(e) && (args.aux == nullptr || Alignment(args.aux) < 4)) {
    return absl::InvalidArgumentError("gemm: epilogue needs 4-aligned aux");
  }
  return absl::OkStatus();
}

}  // namespace

const char* EpilogueName(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return "none";
    case Epilogue::kBias:
      return "bias";
    case Epilogue::kReluBias:
      return "relu_bias";
    case Epilogue::kReluAuxBias:
      return "relu_aux_bias";
    case Epilogue::kDReluBiasGrad:
      return "drelu_bgrad";
    case Epilogue::kBiasGradA:
      return "bgrad_a";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<GemmRunner>> GemmRunner::Create(
    size_t workspace_bytes) {
  if (CudaDeviceCount() == 0) {
    return absl::FailedPreconditionError("GemmRunner: no CUDA device");
  }
  ASSIGN_OR_RETURN(DeviceBuffer workspace,
                   DeviceBuffer::Create(workspace_bytes));
  cublasLtHandle_t handle = nullptr;
  RETURN_IF_ERROR(CublasStatus(cublasLtCreate(&handle), "cublasLtCreate"));
  return std::unique_ptr<GemmRunner>(
      new GemmRunner(handle, std::move(workspace)));
}

GemmRunner::GemmRunner(cublasLtHandle_t handle, DeviceBuffer workspace)
    : handle_(handle), workspace_(std::move(workspace)) {}

GemmRunner::~GemmRunner() {
  plans_.clear();
  cublasLtDestroy(handle_);
}

absl::StatusOr<GemmRunner::Plan*> GemmRunner::GetPlan(const GemmArgs& args,
                                                      Epilogue epilogue) {
  const int matrix_alignment =
      std::min({Alignment(args.a), Alignment(args.b), Alignment(args.c)});
  const int vector_alignment =
      std::min(Alignment(args.bias),
               Alignment(UsesBiasGrad(epilogue) ? args.bias_grad : nullptr));
  const PlanKey key{args.m,
                    args.n,
                    args.k,
                    args.trans_a,
                    args.trans_b,
                    static_cast<int>(args.ab_type),
                    static_cast<int>(args.c_type),
                    static_cast<int>(epilogue),
                    args.beta != 0.0f,
                    matrix_alignment,
                    vector_alignment};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();

  auto plan = std::make_unique<Plan>();
  RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
      "cublasLtMatmulDescCreate"));
  // C^T[n,m] = op(B)^T · op(A)^T in cuBLASLt's column-major terms, where the
  // row-major B (A) read column-major is already B^T (A^T).
  const int32_t op_a = args.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t op_b = args.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  RETURN_IF_ERROR(SetAttr(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, op_a));
  RETURN_IF_ERROR(SetAttr(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, op_b));
  const uint32_t cublas_epilogue = ToCublasEpilogue(epilogue);
  RETURN_IF_ERROR(
      SetAttr(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, cublas_epilogue));
  if (UsesBias(epilogue)) {
    RETURN_IF_ERROR(
        SetAttr(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias));
  }
  if (UsesBiasGrad(epilogue)) {
    RETURN_IF_ERROR(
        SetAttr(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias_grad));
  }
  if (UsesAux(epilogue)) {
    RETURN_IF_ERROR(SetAttr(
        plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, args.aux));
    const int64_t aux_ld = ReluMaskLd(args.n);
    RETURN_IF_ERROR(
        SetAttr(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux_ld));
  }

  const cudaDataType_t ab = ToCudaDataType(args.ab_type);
  const cudaDataType_t c = ToCudaDataType(args.c_type);
  const int64_t m = args.m, n = args.n, k = args.k;
  RETURN_IF_ERROR(CublasStatus(
      args.trans_b ? cublasLtMatrixLayoutCreate(&plan->a, ab, k, n, k)
                   : cublasLtMatrixLayoutCreate(&plan->a, ab, n, k, n),
      "cublasLtMatrixLayoutCreate(A)"));
  RETURN_IF_ERROR(CublasStatus(
      args.trans_a ? cublasLtMatrixLayoutCreate(&plan->b, ab, m, k, m)
                   : cublasLtMatrixLayoutCreate(&plan->b, ab, k, m, k),
      "cublasLtMatrixLayoutCreate(B)"));
  RETURN_IF_ERROR(CublasStatus(cublasLtMatrixLayoutCreate(&plan->c, c, n, m, n),
                               "cublasLtMatrixLayoutCreate(C)"));

  cublasLtMatmulPreference_t preference = nullptr;
  RETURN_IF_ERROR(CublasStatus(cublasLtMatmulPreferenceCreate(&preference),
                               "cublasLtMatmulPreferenceCreate"));
  const uint64_t workspace_bytes = workspace_.bytes();
  const uint32_t align_bytes = static_cast<uint32_t>(matrix_alignment);
  cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
      sizeof(workspace_bytes));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    cublasLtMatmulPreferenceSetAttribute(preference, attr, &align_bytes,
                                         sizeof(align_bytes));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle_, plan->desc, plan->a, plan->b, plan->c, plan->c, preference, 1,
      &result, &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS &&
      status != CUBLAS_STATUS_NOT_SUPPORTED) {
    return CublasStatus(status, "cublasLtMatmulAlgoGetHeuristic");
  }
  plan->has_algo = status == CUBLAS_STATUS_SUCCESS && returned > 0;
  if (plan->has_algo) plan->algo = result.algo;
  Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

absl::Status GemmRunner::RunPlan(Plan& plan, const GemmArgs& args,
                                 Epilogue epilogue, cudaStream_t stream) {
  if (UsesBias(epilogue)) {
    RETURN_IF_ERROR(
        SetAttr(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias));
  }
  if (UsesBiasGrad(epilogue)) {
    RETURN_IF_ERROR(
        SetAttr(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias_grad));
  }
  if (UsesAux(epilogue)) {
    RETURN_IF_ERROR(SetAttr(
        plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, args.aux));
  }
  return CublasStatus(
      cublasLtMatmul(handle_, plan.desc, &args.alpha, args.b, plan.a, args.a,
                     plan.b, &args.beta, args.c, plan.c, args.c, plan.c,
                     &plan.algo, workspace_.data(), workspace_.bytes(), stream),
      absl::StrCat("cublasLtMatmul(", args.m, "x", args.n, "x", args.k, ", ",
                   DTypeName(args.ab_type), ", ", EpilogueName(epilogue), ")"));
}

absl::Status GemmRunner::RunUnfusedEpilogue(const GemmArgs& args,
                                            cudaStream_t stream) {
  const DType t = args.c_type;
  auto* aux = static_cast<uint8_t*>(args.aux);
  switch (args.epilogue) {
    case Epilogue::kNone:
      return absl::OkStatus();
    case Epilogue::kBias:
      return BiasActivation(t, args.c, args.bias, args.m, args.n, false,
                            nullptr, stream);
    case Epilogue::kReluBias:
      return BiasActivation(t, args.c, args.bias, args.m, args.n, true, nullptr,
                            stream);
    case Epilogue::kReluAuxBias:
      return BiasActivation(t, args.c, args.bias, args.m, args.n, true, aux,
                            stream);
    case Epilogue::kDReluBiasGrad:
      RETURN_IF_ERROR(ApplyReluMask(t, args.c, aux, args.m, args.n, stream));
      return ColumnSum(t, args.c, args.m, args.n, t, args.bias_grad, stream);
    case Epilogue::kBiasGradA:
      // sum_k op(A)[i,k]: A is stored [k,m] when transposed, else [m,k].
      return args.trans_a ? ColumnSum(args.ab_type, args.a, args.k, args.m, t,
                                      args.bias_grad, stream)
                          : RowSum(args.ab_type, args.a, args.m, args.k, t,
                                   args.bias_grad, stream);
  }
  return absl::OkStatus();
}

absl::Status GemmRunner::Run(const GemmArgs& args, cudaStream_t stream) {
  RETURN_IF_ERROR(Validate(args));
  last_run_fused_ = false;
  if (args.m == 0 || args.n == 0) return absl::OkStatus();
  if (args.epilogue != Epilogue::kNone && !force_unfused_) {
    ASSIGN_OR_RETURN(Plan * fused, GetPlan(args, args.epilogue));
    if (fused->has_algo) {
      last_run_fused_ = true;
      return RunPlan(*fused, args, args.epilogue, stream);
    }
  }
  ASSIGN_OR_RETURN(Plan * plain, GetPlan(args, Epilogue::kNone));
  if (!plain->has_algo) {
    return absl::UnimplementedError(absl::StrCat(
        "cuBLASLt has no algorithm for ", args.m, "x", args.n, "x", args.k, " ",
        DTypeName(args.ab_type), "->", DTypeName(args.c_type)));
  }
  RETURN_IF_ERROR(RunPlan(*plain, args, Epilogue::kNone, stream));
  return RunUnfusedEpilogue(args, stream);
}

}  // namespace tupa::trainer::cuda

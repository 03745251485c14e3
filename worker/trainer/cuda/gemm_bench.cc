// tupa-gemm-bench: GPU throughput figures, one JSON line each.
//
//   tupa-gemm-bench gemm [M N K] [--iters N]
//       Raw cuBLASLt bf16 GEMM (fp32 accumulate) through GemmRunner: the
//       ceiling a training step can approach.
//   tupa-gemm-bench mlp [--layers 8192,8192,...] [--batch B]
//                       [--precision bf16] [--iters N]
//       Full training steps (forward, softmax-CE, backward, AdamW) of an
//       MLP through the CUDA backend, the batch resident on the device.
//
// TFLOP/s count 2*m*n*k per GEMM; "fraction_of_peak" is against 989 TFLOP/s
// (H100/H200 SXM dense bf16).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "worker/trainer/cuda/cuda_backend.h"
#include "worker/trainer/cuda/cuda_status.h"
#include "worker/trainer/cuda/gemm.h"

namespace tupa::trainer::cuda {
namespace {

constexpr double kPeakTflops = 989.0;

struct Options {
  std::string mode = "gemm";
  int64_t m = 8192, n = 8192, k = 8192;
  std::vector<int> layers = {8192, 8192, 8192, 8192, 8192};
  int batch = 8192;
  std::string precision = "bf16";
  int iters = 50;
};

double ElapsedMs(cudaEvent_t start, cudaEvent_t stop) {
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  return ms;
}

void PrintFigure(const char* bench, const std::string& extra, double ms,
                 double flops) {
  const double tflops = flops / (ms * 1e-3) / 1e12;
  std::printf(
      "{\"bench\": \"%s\", %s, \"ms\": %.4f, \"tflops\": %.1f, "
      "\"fraction_of_peak\": %.3f, \"peak_tflops\": %.0f}\n",
      bench, extra.c_str(), ms, tflops, tflops / kPeakTflops, kPeakTflops);
  std::fflush(stdout);
}

absl::Status RunGemm(const Options& o) {
  ASSIGN_OR_RETURN(auto runner, GemmRunner::Create());
  ASSIGN_OR_RETURN(auto a, DeviceBuffer::Create(o.m * o.k * 2));
  ASSIGN_OR_RETURN(auto b, DeviceBuffer::Create(o.k * o.n * 2));
  ASSIGN_OR_RETURN(auto c, DeviceBuffer::Create(o.m * o.n * 2));
  RETURN_IF_ERROR(CudaStatus(cudaMemset(a.data(), 0, a.bytes()), "memset"));
  RETURN_IF_ERROR(CudaStatus(cudaMemset(b.data(), 0, b.bytes()), "memset"));
  ASSIGN_OR_RETURN(auto stream, Stream::Create());
  GemmArgs args;
  args.m = o.m, args.n = o.n, args.k = o.k;
  args.trans_b = true;  // The forward-pass layout (x · Wᵀ).
  args.ab_type = args.c_type = DType::kBF16;
  args.a = a.data(), args.b = b.data(), args.c = c.data();
  for (int i = 0; i < 5; ++i) RETURN_IF_ERROR(runner->Run(args, stream.get()));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, stream.get());
  for (int i = 0; i < o.iters; ++i) {
    RETURN_IF_ERROR(runner->Run(args, stream.get()));
  }
  cudaEventRecord(stop, stream.get());
  RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(stop), "gemm bench"));
  const double ms = ElapsedMs(start, stop) / o.iters;
  char extra[160];
  std::snprintf(extra, sizeof(extra),
                "\"dtype\": \"bf16\", \"m\": %lld, \"n\": %lld, \"k\": %lld",
                static_cast<long long>(o.m), static_cast<long long>(o.n),
                static_cast<long long>(o.k));
  PrintFigure("cublaslt_gemm", extra, ms, 2.0 * o.m * o.n * o.k);
  return absl::OkStatus();
}

absl::Status RunMlp(const Options& o) {
  ASSIGN_OR_RETURN(Precision precision, ParsePrecision(o.precision));
  ASSIGN_OR_RETURN(auto be, CudaBackend::Create(precision, 0));
  const size_t act = be->activation_bytes();
  const int layers = static_cast<int>(o.layers.size()) - 1;
  std::vector<size_t> w_off, b_off;
  size_t n_params = 0;
  double flops = 0;
  for (int l = 0; l < layers; ++l) {
    const double mnk =
        static_cast<double>(o.batch) * o.layers[l] * o.layers[l + 1];
    flops += 2 * mnk * (l == 0 ? 2 : 3);  // fwd, dW, dX (not for layer 0)
    w_off.push_back(n_params);
    n_params += size_t(o.layers[l]) * o.layers[l + 1];
    b_off.push_back(n_params);
    n_params += o.layers[l + 1];
  }
  ASSIGN_OR_RETURN(void* params_raw, be->Alloc(n_params * 4));
  ASSIGN_OR_RETURN(void* grads_raw, be->Alloc(n_params * 4));
  ASSIGN_OR_RETURN(void* m, be->Alloc(n_params * 4));
  ASSIGN_OR_RETURN(void* v, be->Alloc(n_params * 4));
  auto* params = static_cast<float*>(params_raw);
  auto* grads = static_cast<float*>(grads_raw);
  std::vector<void*> acts(layers + 1), dacts(layers + 1);
  for (int l = 0; l <= layers; ++l) {
    ASSIGN_OR_RETURN(acts[l], be->Alloc(size_t(o.batch) * o.layers[l] * act));
    ASSIGN_OR_RETURN(dacts[l], be->Alloc(size_t(o.batch) * o.layers[l] * act));
    RETURN_IF_ERROR(be->Zero(acts[l], size_t(o.batch) * o.layers[l] * act));
  }
  ASSIGN_OR_RETURN(void* labels_raw, be->Alloc(o.batch * 4));
  ASSIGN_OR_RETURN(void* loss_raw, be->Alloc(4));
  RETURN_IF_ERROR(be->Zero(labels_raw, o.batch * 4));
  RETURN_IF_ERROR(be->Zero(params, n_params * 4));
  RETURN_IF_ERROR(be->Zero(m, n_params * 4));
  RETURN_IF_ERROR(be->Zero(v, n_params * 4));
  RETURN_IF_ERROR(be->OnParamsUpdated(params, n_params));
  auto* labels = static_cast<int32_t*>(labels_raw);
  auto* loss = static_cast<float*>(loss_raw);

  int64_t step = 0;
  auto train_step = [&]() -> absl::Status {
    for (int l = 0; l < layers; ++l) {
      RETURN_IF_ERROR(be->LinearForward(
          acts[l], params + w_off[l], params + b_off[l], o.batch, o.layers[l],
          o.layers[l + 1], l + 1 < layers, acts[l + 1]));
    }
    RETURN_IF_ERROR(be->SoftmaxCrossEntropy(acts[layers], labels, o.batch,
                                            o.layers[layers], 1.0f / o.batch,
                                            dacts[layers], loss));
    for (int l = layers - 1; l >= 0; --l) {
      RETURN_IF_ERROR(be->LinearBackward(
          acts[l], params + w_off[l], acts[l + 1], dacts[l + 1], o.batch,
          o.layers[l], o.layers[l + 1], l + 1 < layers, grads + w_off[l],
          grads + b_off[l], l == 0 ? nullptr : dacts[l]));
    }
    AdamWHyper hyper;
    hyper.step = ++step;
    RETURN_IF_ERROR(be->AdamWStep(params, grads, static_cast<float*>(m),
                                  static_cast<float*>(v), n_params, hyper));
    return be->OnParamsUpdated(params, n_params);
  };
  for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(train_step());
  RETURN_IF_ERROR(be->Synchronize());
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, be->compute_stream());
  for (int i = 0; i < o.iters; ++i) RETURN_IF_ERROR(train_step());
  cudaEventRecord(stop, be->compute_stream());
  RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(stop), "mlp bench"));
  const double ms = ElapsedMs(start, stop) / o.iters;
  std::string layer_list;
  for (size_t i = 0; i < o.layers.size(); ++i) {
    layer_list += (i ? "," : "") + std::to_string(o.layers[i]);
  }
  char extra[256];
  std::snprintf(extra, sizeof(extra),
                "\"precision\": \"%s\", \"layers\": [%s], \"batch\": %d, "
                "\"samples_per_s\": %.0f",
                o.precision.c_str(), layer_list.c_str(), o.batch,
                o.batch / (ms * 1e-3));
  PrintFigure("mlp_train_step", extra, ms, flops);
  return absl::OkStatus();
}

bool ParseArgs(int argc, char** argv, Options& o) {
  if (argc < 2) return false;
  o.mode = argv[1];
  std::vector<int64_t> positional;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--iters" && has_value) {
      if (!absl::SimpleAtoi(argv[++i], &o.iters)) return false;
    } else if (arg == "--batch" && has_value) {
      if (!absl::SimpleAtoi(argv[++i], &o.batch)) return false;
    } else if (arg == "--precision" && has_value) {
      o.precision = argv[++i];
    } else if (arg == "--layers" && has_value) {
      o.layers.clear();
      for (absl::string_view s : absl::StrSplit(argv[++i], ',')) {
        int w;
        if (!absl::SimpleAtoi(s, &w) || w <= 0) return false;
        o.layers.push_back(w);
      }
      if (o.layers.size() < 2) return false;
    } else {
      int64_t value;
      if (!absl::SimpleAtoi(arg, &value) || value <= 0) return false;
      positional.push_back(value);
    }
  }
  if (positional.size() == 3) {
    o.m = positional[0], o.n = positional[1], o.k = positional[2];
  } else if (!positional.empty()) {
    return false;
  }
  return o.mode == "gemm" || o.mode == "mlp";
}

}  // namespace
}  // namespace tupa::trainer::cuda

int main(int argc, char** argv) {
  tupa::trainer::cuda::Options options;
  if (!tupa::trainer::cuda::ParseArgs(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: tupa-gemm-bench gemm [M N K] [--iters N]\n"
                 "       tupa-gemm-bench mlp [--layers a,b,...] [--batch B] "
                 "[--precision fp32|bf16|fp16] [--iters N]\n");
    return 2;
  }
  const absl::Status status = options.mode == "gemm"
                                  ? tupa::trainer::cuda::RunGemm(options)
                                  : tupa::trainer::cuda::RunMlp(options);
  if (!status.ok()) {
    std::fprintf(stderr, "tupa-gemm-bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

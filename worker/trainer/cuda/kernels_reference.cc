#include "worker/trainer/cuda/kernels_reference.h"

#include <cmath>
#include <limits>

#include "worker/trainer/cuda/gemm.h"

namespace tupa::trainer::cuda {

void SoftmaxCrossEntropyReference(const float* logits, const int32_t* labels,
                                  int64_t batch, int64_t classes,
                                  float grad_scale, float* dlogits,
                                  float* losses, int32_t* correct) {
  for (int64_t r = 0; r < batch; ++r) {
    const float* x = logits + r * classes;
    float* dx = dlogits + r * classes;
    float mx = -std::numeric_limits<float>::infinity();
    int64_t best = 0;
    for (int64_t c = 0; c < classes; ++c) {
      if (x[c] > x[best]) best = c;
      mx = std::fmax(mx, x[c]);
    }
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(double{x[c]} - mx);
    const int32_t label = labels[r];
    const bool valid = label >= 0 && label < classes;
    losses[r] = valid ? static_cast<float>(std::log(sum) + mx - x[label])
                      : std::numeric_limits<float>::quiet_NaN();
    if (correct != nullptr) correct[r] = valid && best == label;
    for (int64_t c = 0; c < classes; ++c) {
      const double p = std::exp(double{x[c]} - mx) / sum;
      dx[c] = valid ? static_cast<float>((p - (c == label)) * grad_scale) : 0;
    }
  }
}

int64_t CountCorrectReference(const float* logits, const int32_t* labels,
                              int64_t batch, int64_t classes) {
  int64_t count = 0;
  for (int64_t r = 0; r < batch; ++r) {
    const float* x = logits + r * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (x[c] > x[best]) best = c;
    }
    count += best == labels[r];
  }
  return count;
}

void ReluGradFromOutputReference(float* dy, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!(y[i] > 0.0f)) dy[i] = 0.0f;
  }
}

void AdamWReference(const AdamWParams& params, int64_t n, float* master,
                    const float* grads, float* m, float* v,
                    float device_grad_scale) {
  const double bc1 = 1.0 - std::pow(double{params.beta1}, params.step);
  const double bc2 = 1.0 - std::pow(double{params.beta2}, params.step);
  const float step_size = static_cast<float>(params.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float decay_factor = 1.0f - params.lr * params.weight_decay;
  const float scale = params.grad_scale * device_grad_scale;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grads[i] * scale;
    m[i] = m[i] + (1.0f - params.beta1) * (g - m[i]);
    v[i] = params.beta2 * v[i] + (1.0f - params.beta2) * g * g;
    const float denom = std::sqrt(v[i]) / bc2_sqrt + params.eps;
    master[i] = master[i] * decay_factor - step_size * (m[i] / denom);
  }
}

void SgdMomentumReference(const SgdParams& params, int64_t n, float* master,
                          const float* grads, float* momentum_buf,
                          float device_grad_scale) {
  const float scale = params.grad_scale * device_grad_scale;
  for (int64_t i = 0; i < n; ++i) {
    float g = grads[i] * scale + params.weight_decay * master[i];
    if (params.momentum != 0.0f) {
      momentum_buf[i] = params.first_step ? g
                                          : params.momentum * momentum_buf[i] +
                                                (1 - params.dampening) * g;
      g = params.nesterov ? g + params.momentum * momentum_buf[i]
                          : momentum_buf[i];
    }
    master[i] -= params.lr * g;
  }
}

bool UnscaleAndCheckFiniteReference(float* grads, int64_t n, float inv_scale) {
  bool found = false;
  for (int64_t i = 0; i < n; ++i) {
    grads[i] *= inv_scale;
    found |= !std::isfinite(grads[i]);
  }
  return found;
}

double GradNormSquaredReference(const float* grads, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += double{grads[i]} * grads[i];
  return sum;
}

float ClipCoefficientReference(float norm_sq, float pre_scale, float max_norm) {
  if (max_norm <= 0.0f) return pre_scale;
  const float norm = std::sqrt(norm_sq) * pre_scale;
  return pre_scale * std::fmin(1.0f, max_norm / (norm + 1e-6f));
}

bool ReluMaskBit(const uint8_t* aux, int64_t n, int64_t i, int64_t j) {
  const int64_t bit = i * ReluMaskLd(n) + j;
  return (aux[bit / 8] >> (bit % 8)) & 1;
}

void BiasActivationReference(float* c, const float* bias, int64_t m, int64_t n,
                             bool relu, uint8_t* aux) {
  if (aux != nullptr) {
    for (int64_t b = 0; b < ReluMaskBytes(m, n); ++b) aux[b] = 0;
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float out = c[i * n + j] + (bias != nullptr ? bias[j] : 0.0f);
      if (relu && out < 0.0f) out = 0.0f;
      c[i * n + j] = out;
      if (aux != nullptr && out > 0.0f) {
        const int64_t bit = i * ReluMaskLd(n) + j;
        aux[bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
      }
    }
  }
}

void ApplyReluMaskReference(float* c, const uint8_t* aux, int64_t m,
                            int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (!ReluMaskBit(aux, n, i, j)) c[i * n + j] = 0.0f;
    }
  }
}

std::vector<float> ColumnSumReference(const float* x, int64_t rows,
                                      int64_t cols) {
  std::vector<double> sum(cols, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) sum[j] += x[i * cols + j];
  }
  return std::vector<float>(sum.begin(), sum.end());
}

std::vector<float> RowSumReference(const float* x, int64_t rows, int64_t cols) {
  std::vector<float> out(rows);
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0.0;
    for (int64_t j = 0; j < cols; ++j) sum += x[i * cols + j];
    out[i] = static_cast<float>(sum);
  }
  return out;
}

}  // namespace tupa::trainer::cuda

// Helpers shared by the CUDA backend tests: host rounding to the half
// grids, seeded random data, tolerance checks and device upload/download.
#ifndef TUPA_WORKER_TRAINER_CUDA_TEST_UTIL_H_
#define TUPA_WORKER_TRAINER_CUDA_TEST_UTIL_H_

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "worker/trainer/cuda/device_memory.h"
#include "worker/trainer/cuda/dtype.h"

namespace tupa::trainer::cuda::testing {

inline uint16_t ToBf16Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (std::isnan(x)) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);  // Round to nearest even.
  return static_cast<uint16_t>(u >> 16);
}
inline float FromBf16Bits(uint16_t b) {
  uint32_t u = uint32_t{b} << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
inline uint16_t ToF16Bits(float x) {
  __half h = __float2half_rn(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
inline float FromF16Bits(uint16_t b) {
  __half h;
  std::memcpy(&h, &b, 2);
  return __half2float(h);
}

// x rounded to the grid of `type` (identity for fp32).
inline float RoundTo(DType type, float x) {
  switch (type) {
    case DType::kBF16:
      return FromBf16Bits(ToBf16Bits(x));
    case DType::kF16:
      return FromF16Bits(ToF16Bits(x));
    default:
      return x;
  }
}
inline std::vector<float> RoundTo(DType type, std::vector<float> v) {
  for (float& x : v) x = RoundTo(type, x);
  return v;
}

inline std::vector<float> RandomVector(size_t n, uint32_t seed, float lo = -1,
                                       float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Every |got - want| <= abs_tol + rel_tol * |want|; reports the first misses.
inline void ExpectAllNear(const std::vector<float>& got,
                          const std::vector<float>& want, float rel_tol,
                          float abs_tol) {
  ASSERT_EQ(got.size(), want.size());
  int misses = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float bound = abs_tol + rel_tol * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= bound) && ++misses <= 5) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want "
                    << want[i] << " (bound " << bound << ")";
    }
  }
  EXPECT_EQ(misses, 0);
}

inline bool HasCudaDevice() { return CudaDeviceCount() > 0; }

// Uploads `v` converted to `type`.
inline DeviceBuffer Upload(DType type, const std::vector<float>& v) {
  auto buffer =
      DeviceBuffer::Create(std::max<size_t>(1, v.size()) * SizeOf(type));
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  if (type == DType::kF32) {
    cudaMemcpy(buffer->data(), v.data(), v.size() * 4, cudaMemcpyHostToDevice);
  } else {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      bits[i] = type == DType::kBF16 ? ToBf16Bits(v[i]) : ToF16Bits(v[i]);
    }
    cudaMemcpy(buffer->data(), bits.data(), v.size() * 2,
               cudaMemcpyHostToDevice);
  }
  return std::move(buffer).value();
}

// Downloads `n` elements of `type` as floats (synchronises the device).
inline std::vector<float> Download(DType type, const void* p, size_t n) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> out(n);
  if (type == DType::kF32) {
    cudaMemcpy(out.data(), p, n * 4, cudaMemcpyDeviceToHost);
  } else {
    std::vector<uint16_t> bits(n);
    cudaMemcpy(bits.data(), p, n * 2, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < n; ++i) {
      out[i] =
          type == DType::kBF16 ? FromBf16Bits(bits[i]) : FromF16Bits(bits[i]);
    }
  }
  return out;
}

template <typename T>
DeviceBuffer UploadRaw(const std::vector<T>& v) {
  auto buffer = DeviceBuffer::Create(std::max<size_t>(1, v.size()) * sizeof(T));
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  cudaMemcpy(buffer->data(), v.data(), v.size() * sizeof(T),
             cudaMemcpyHostToDevice);
  return std::move(buffer).value();
}

template <typename T>
std::vector<T> DownloadRaw(const void* p, size_t n) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<T> out(n);
  cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return out;
}

}  // namespace tupa::trainer::cuda::testing

#endif  // TUPA_WORKER_TRAINER_CUDA_TEST_UTIL_H_

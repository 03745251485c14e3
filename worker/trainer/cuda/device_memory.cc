#include "worker/trainer/cuda/device_memory.h"

#include "common/status_macros.h"
#include "worker/trainer/cuda/cuda_status.h"

namespace tupa::trainer::cuda {

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // Clear the sticky "no driver" error.
    return 0;
  }
  return count;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Create(size_t bytes) {
  DeviceBuffer buffer;
  if (bytes == 0) return buffer;
  RETURN_IF_ERROR(CudaStatus(cudaMalloc(&buffer.data_, bytes), "cudaMalloc"));
  buffer.bytes_ = bytes;
  return buffer;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

absl::StatusOr<PinnedBuffer> PinnedBuffer::Create(size_t bytes) {
  PinnedBuffer buffer;
  if (bytes == 0) return buffer;
  RETURN_IF_ERROR(
      CudaStatus(cudaHostAlloc(&buffer.data_, bytes, cudaHostAllocPortable),
                 "cudaHostAlloc"));
  buffer.bytes_ = bytes;
  return buffer;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

absl::StatusOr<Stream> Stream::Create() {
  Stream stream;
  RETURN_IF_ERROR(CudaStatus(
      cudaStreamCreateWithFlags(&stream.stream_, cudaStreamNonBlocking),
      "cudaStreamCreate"));
  return stream;
}

Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

absl::StatusOr<Event> Event::Create() {
  Event event;
  RETURN_IF_ERROR(CudaStatus(
      cudaEventCreateWithFlags(&event.event_, cudaEventDisableTiming),
      "cudaEventCreate"));
  return event;
}

Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

}  // namespace tupa::trainer::cuda

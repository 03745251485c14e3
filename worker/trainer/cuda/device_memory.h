// Owning handles for device memory, pinned host memory, streams and events,
// plus device discovery for tests.
//
// All types are move-only; destruction frees the resource and ignores errors
// (a destructor cannot report them; a poisoned context reports on the next
// checked call instead). Allocation goes through the Create() factories,
// which return ResourceExhausted when memory runs out. Not thread-safe.
#ifndef TUPA_WORKER_TRAINER_CUDA_DEVICE_MEMORY_H_
#define TUPA_WORKER_TRAINER_CUDA_DEVICE_MEMORY_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "absl/status/statusor.h"

namespace tupa::trainer::cuda {

// Number of usable CUDA devices; 0 when there is no driver or no device (the
// error is swallowed: this is the question "can GPU tests run here?").
int CudaDeviceCount();

// A cudaMalloc'd block of `bytes` bytes on the current device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static absl::StatusOr<DeviceBuffer> Create(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// A cudaHostAlloc'd (page-locked) host block, so host->device copies on a
// stream are truly asynchronous.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static absl::StatusOr<PinnedBuffer> Create(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept { *this = std::move(other); }
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// A non-blocking stream (does not synchronise with the legacy default stream).
class Stream {
 public:
  Stream() = default;
  static absl::StatusOr<Stream> Create();
  ~Stream();
  Stream(Stream&& other) noexcept { *this = std::move(other); }
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// An event without timing, for ordering work between streams.
class Event {
 public:
  Event() = default;
  static absl::StatusOr<Event> Create();
  ~Event();
  Event(Event&& other) noexcept { *this = std::move(other); }
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace tupa::trainer::cuda

#endif  // TUPA_WORKER_TRAINER_CUDA_DEVICE_MEMORY_H_

// GPU discovery for tupa-worker: real devices through the CUDA driver API
// (libcuda loaded with dlopen, so the worker runs on machines without a
// driver), or emulated devices backed by the CPU trainer backend. A worker
// never claims emulated devices unless told to. Thread-safe.
#ifndef TUPA_WORKER_DEVICES_DEVICES_H_
#define TUPA_WORKER_DEVICES_DEVICES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tupa/v1/cluster.pb.h"

namespace tupa::worker {

struct DeviceOptions {
  int emulated_gpus = 0;  // > 0: advertise this many emulated devices
  std::string emulated_gpu_type = "EMU";
  std::string gpu_type_override;  // replaces the type derived from the name
};

// Returns the devices to advertise. With emulated_gpus > 0 they are
// emulated; otherwise whatever the CUDA driver reports (none without one).
absl::StatusOr<std::vector<v1::Device>> DiscoverDevices(
    const DeviceOptions& options);

// "NVIDIA A100-SXM4-80GB" -> "A100-80GB", "NVIDIA H200" -> "H200",
// "Tesla T4" -> "T4": the scheduling type users write in gpu_type.
std::string GpuTypeFromName(const std::string& name, int64_t memory_bytes);

}  // namespace tupa::worker

#endif  // TUPA_WORKER_DEVICES_DEVICES_H_

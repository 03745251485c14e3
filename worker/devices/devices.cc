#include "worker/devices/devices.h"

#include <dlfcn.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace tupa::worker {
namespace {

// The few driver API entry points used, resolved at run time.
struct CudaDriver {
  using Init = int (*)(unsigned);
  using GetCount = int (*)(int*);
  using Get = int (*)(int*, int);
  using GetName = int (*)(char*, int, int);
  using TotalMem = int (*)(size_t*, int);
  using GetAttribute = int (*)(int*, int, int);
  Init init = nullptr;
  GetCount get_count = nullptr;
  Get get = nullptr;
  GetName get_name = nullptr;
  TotalMem total_mem = nullptr;
  GetAttribute get_attribute = nullptr;

  bool Load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
    get_count = reinterpret_cast<GetCount>(dlsym(lib, "cuDeviceGetCount"));
    get = reinterpret_cast<Get>(dlsym(lib, "cuDeviceGet"));
    get_name = reinterpret_cast<GetName>(dlsym(lib, "cuDeviceGetName"));
    total_mem = reinterpret_cast<TotalMem>(dlsym(lib, "cuDeviceTotalMem_v2"));
    get_attribute =
        reinterpret_cast<GetAttribute>(dlsym(lib, "cuDeviceGetAttribute"));
    return init && get_count && get && get_name && total_mem && get_attribute;
  }
};

constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_*
constexpr int kComputeCapabilityMinor = 76;

}  // namespace

std::string GpuTypeFromName(const std::string& name, int64_t memory_bytes) {
  std::string type(absl::StripPrefix(
      absl::StripPrefix(absl::StripPrefix(name, "NVIDIA "), "Tesla "),
      "GeForce "));
  type = absl::StrReplaceAll(type, {{"-SXM4", ""},
                                    {"-SXM5", ""},
                                    {"-SXM", ""},
                                    {"-PCIE", ""},
                                    {" PCIe", ""},
                                    {" NVL", ""},
                                    {" ", "-"}});
  if (type.rfind("A100", 0) == 0 && type.find("GB") == std::string::npos) {
    const double gib = static_cast<double>(memory_bytes) / (1LL << 30);
    type = absl::StrCat("A100-", gib > 60 ? "80GB" : "40GB");
  }
  return type;
}

absl::StatusOr<std::vector<v1::Device>> DiscoverDevices(
    const DeviceOptions& options) {
  std::vector<v1::Device> devices;
  if (options.emulated_gpus > 0) {
    const std::string type = options.gpu_type_override.empty()
                                 ? options.emulated_gpu_type
                                 : options.gpu_type_override;
    for (int i = 0; i < options.emulated_gpus; ++i) {
      v1::Device d;
      d.set_index(i);
      d.set_name(absl::StrCat("emulated ", type, " (CPU backend)"));
      d.set_gpu_type(type);
      d.set_memory_bytes(16LL << 30);
      d.set_emulated(true);
      devices.push_back(std::move(d));
    }
    return devices;
  }
  CudaDriver cuda;
  if (!cuda.Load() || cuda.init(0) != 0) return devices;  // no driver: none
  int count = 0;
  if (cuda.get_count(&count) != 0) return devices;
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    if (cuda.get(&dev, i) != 0) continue;
    char name[256] = {};
    size_t memory = 0;
    int major = 0, minor = 0;
    cuda.get_name(name, sizeof(name), dev);
    cuda.total_mem(&memory, dev);
    cuda.get_attribute(&major, kComputeCapabilityMajor, dev);
    cuda.get_attribute(&minor, kComputeCapabilityMinor, dev);
    v1::Device d;
    d.set_index(i);
    d.set_name(name);
    d.set_memory_bytes(static_cast<int64_t>(memory));
    d.set_compute_capability(absl::StrCat(major, ".", minor));
    d.set_gpu_type(options.gpu_type_override.empty()
                       ? GpuTypeFromName(name, static_cast<int64_t>(memory))
                       : options.gpu_type_override);
    devices.push_back(std::move(d));
  }
  return devices;
}

}  // namespace tupa::worker

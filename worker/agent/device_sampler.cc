#include "worker/agent/device_sampler.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace tupa::worker {
namespace {

// NVML's ABI (nvml.h), declared here so the build needs no CUDA headers.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
using InitFn = nvmlReturn_t (*)();
using HandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using UtilFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using MemFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using PowerFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using ShutdownFn = nvmlReturn_t (*)();

}  // namespace

std::map<int, GroupUsage> ReadGroupUsage(const std::vector<int>& groups) {
  std::map<int, GroupUsage> out;
  if (groups.empty()) return out;
  const std::set<int> wanted(groups.begin(), groups.end());
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  static const int64_t page = sysconf(_SC_PAGESIZE);
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    // Fields after "(comm)": state ppid pgrp ... utime(14) stime(15) ...
    // rss(24), numbered as in proc(5).
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream in(line.substr(paren + 2));
    std::vector<std::string> fields;
    for (std::string w; in >> w && fields.size() < 22;) fields.push_back(w);
    if (fields.size() < 22) continue;
    const int pgrp = std::atoi(fields[2].c_str());
    if (!wanted.count(pgrp)) continue;
    GroupUsage& u = out[pgrp];
    u.cpu_seconds +=
        (std::atof(fields[11].c_str()) + std::atof(fields[12].c_str())) / ticks;
    u.rss_bytes += std::atoll(fields[21].c_str()) * page;
  }
  closedir(proc);
  return out;
}

NvmlPoller::NvmlPoller() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return;
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  get_handle_ = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  get_utilization_ = dlsym(lib, "nvmlDeviceGetUtilizationRates");
  get_memory_ = dlsym(lib, "nvmlDeviceGetMemoryInfo");
  get_power_ = dlsym(lib, "nvmlDeviceGetPowerUsage");
  shutdown_ = dlsym(lib, "nvmlShutdown");
  if (init == nullptr || get_handle_ == nullptr ||
      get_utilization_ == nullptr || get_memory_ == nullptr ||
      init() != kNvmlSuccess) {
    dlclose(lib);
    return;
  }
  lib_ = lib;
}

NvmlPoller::~NvmlPoller() {
  if (lib_ == nullptr) return;
  if (shutdown_ != nullptr) reinterpret_cast<ShutdownFn>(shutdown_)();
  dlclose(lib_);
}

bool NvmlPoller::healthy(int nvml_index) const {
  auto it = consecutive_failures_.find(nvml_index);
  return it == consecutive_failures_.end() || it->second < kMaxNvmlFailures;
}

int64_t NvmlPoller::failures(int nvml_index) const {
  auto it = total_failures_.find(nvml_index);
  return it == total_failures_.end() ? 0 : it->second;
}

std::optional<NvmlSample> NvmlPoller::Sample(int nvml_index) {
  if (lib_ == nullptr || !healthy(nvml_index)) return std::nullopt;
  auto fail = [&]() -> std::optional<NvmlSample> {
    ++consecutive_failures_[nvml_index];
    ++total_failures_[nvml_index];
    return std::nullopt;
  };
  nvmlDevice_t dev = nullptr;
  if (reinterpret_cast<HandleFn>(get_handle_)(nvml_index, &dev) != kNvmlSuccess)
    return fail();
  nvmlUtilization_t util{};
  nvmlMemory_t mem{};
  if (reinterpret_cast<UtilFn>(get_utilization_)(dev, &util) != kNvmlSuccess ||
      reinterpret_cast<MemFn>(get_memory_)(dev, &mem) != kNvmlSuccess)
    return fail();
  consecutive_failures_[nvml_index] = 0;
  NvmlSample s;
  s.utilization = util.gpu / 100.0;
  s.memory_used_bytes = static_cast<int64_t>(mem.used);
  s.memory_total_bytes = static_cast<int64_t>(mem.total);
  unsigned int milliwatts = 0;
  if (get_power_ != nullptr &&
      reinterpret_cast<PowerFn>(get_power_)(dev, &milliwatts) == kNvmlSuccess)
    s.power_watts = milliwatts / 1000.0;
  return s;
}

}  // namespace tupa::worker

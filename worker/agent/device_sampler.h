// Device samplers for tupa-worker's metrics and heartbeats.
//
// Emulated devices have no counters of their own: a device's utilisation is
// the CPU activity of the rank processes that hold it (utime+stime of every
// process in their process groups, from /proc, per second of wall time,
// divided by the cores each rank may use, capped at 1) and its memory is
// their resident set. Real GPUs are read through NVML, loaded with
// dlopen("libnvidia-ml.so.1") so the worker runs without a driver; a device
// that fails kMaxNvmlFailures samples in a row is no longer polled (the
// worker degrades instead of failing). Not thread-safe: one sampling
// thread owns each object.
#ifndef TUPA_WORKER_AGENT_DEVICE_SAMPLER_H_
#define TUPA_WORKER_AGENT_DEVICE_SAMPLER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tupa::worker {

// Per process group: CPU time (seconds) and resident memory (bytes) summed
// over its live processes.
struct GroupUsage {
  double cpu_seconds = 0;
  int64_t rss_bytes = 0;
};

// Reads /proc once; only groups in `groups` are kept.
std::map<int, GroupUsage> ReadGroupUsage(const std::vector<int>& groups);

struct NvmlSample {
  double utilization = 0;  // 0..1
  int64_t memory_used_bytes = 0;
  int64_t memory_total_bytes = 0;
  std::optional<double> power_watts;  // not every board reports power
};

class NvmlPoller {
 public:
  static constexpr int kMaxNvmlFailures = 5;

  NvmlPoller();  // loads and initialises NVML when present
  ~NvmlPoller();
  NvmlPoller(const NvmlPoller&) = delete;
  NvmlPoller& operator=(const NvmlPoller&) = delete;

  bool available() const { return lib_ != nullptr; }
  // nullopt when NVML is absent, the device failed, or it is disabled.
  std::optional<NvmlSample> Sample(int nvml_index);
  // False once the device failed kMaxNvmlFailures times in a row.
  bool healthy(int nvml_index) const;
  int64_t failures(int nvml_index) const;

 private:
  void* lib_ = nullptr;
  void* get_handle_ = nullptr;
  void* get_utilization_ = nullptr;
  void* get_memory_ = nullptr;
  void* get_power_ = nullptr;
  void* shutdown_ = nullptr;
  std::map<int, int> consecutive_failures_;
  std::map<int, int64_t> total_failures_;
};

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_DEVICE_SAMPLER_H_

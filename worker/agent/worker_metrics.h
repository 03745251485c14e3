// WorkerMetrics: every Prometheus family tupa-worker exports, declared in
// one place, and the thread that samples its devices once per `interval`.
//
// Each sample labels a device with the job (`job_id`) whose ranks hold it;
// the label is absent while the device is free. The latest samples also go
// up in heartbeats (FillHeartbeat) so `tupa workers` shows the numbers
// /metrics carries. Thread-safe; the sampling thread stops in the
// destructor.
#ifndef TUPA_WORKER_AGENT_WORKER_METRICS_H_
#define TUPA_WORKER_AGENT_WORKER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "tupa/v1/cluster.pb.h"
#include "tupa/v1/worker_protocol.pb.h"
#include "worker/agent/device_sampler.h"

namespace tupa::worker {

// Which rank processes hold a device now.
struct DeviceUse {
  int32_t device = 0;
  int64_t job_id = 0;
  std::vector<int> process_groups;  // rank process groups on this device
  double share = 1;  // of those groups' CPU time that counts for it
  double cores = 1;  // cores the ranks on it may use (emulated devices)
};

struct WorkerMetricsOptions {
  std::string worker_id;
  std::vector<v1::Device> devices;
  std::vector<std::string> visible_devices;  // NVML index of device i
  absl::Duration interval = absl::Seconds(1);
  std::function<std::vector<DeviceUse>()> device_uses;
};

class WorkerMetrics {
 public:
  explicit WorkerMetrics(WorkerMetricsOptions options);
  ~WorkerMetrics();
  WorkerMetrics(const WorkerMetrics&) = delete;
  WorkerMetrics& operator=(const WorkerMetrics&) = delete;

  // Starts the sampling thread.
  void Start();
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables() const;
  // Adds every device with its latest utilisation and memory used.
  void FillHeartbeat(v1::Heartbeat* heartbeat);
  // One sampling round (the thread's body; tests call it directly).
  void SampleOnce();

 private:
  struct Sample {
    int64_t job_id = 0;
    double utilization = 0;
    int64_t memory_used = 0;
    int64_t memory_total = 0;
    std::optional<double> power_watts;
    bool healthy = true;
  };

  void Loop();

  const WorkerMetricsOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<GaugeSnapshot> gauges_;
  prometheus::Family<prometheus::Counter>& failures_;
  NvmlPoller nvml_;  // used by the sampling thread only
  // (device, job) -> CPU seconds at the previous sample, and when.
  std::map<std::pair<int32_t, int64_t>, std::pair<double, absl::Time>> cpu_;

  absl::Mutex mu_;
  std::map<int32_t, Sample> latest_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_WORKER_METRICS_H_

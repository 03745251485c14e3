#include "worker/agent/worker_metrics.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace tupa::worker {

WorkerMetrics::WorkerMetrics(WorkerMetricsOptions options)
    : options_(std::move(options)),
      registry_(std::make_shared<prometheus::Registry>()),
      gauges_(std::make_shared<GaugeSnapshot>()),
      failures_(prometheus::BuildCounter()
                    .Name("tupa_device_sample_failures_total")
                    .Help("NVML samples of a device that failed; after "
                          "repeated failures the device is no longer polled.")
                    .Register(*registry_)) {}

WorkerMetrics::~WorkerMetrics() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void WorkerMetrics::Start() {
  SampleOnce();
  thread_ = std::thread([this] { Loop(); });
}

std::vector<std::weak_ptr<prometheus::Collectable>>
WorkerMetrics::collectables() const {
  return {registry_, gauges_};
}

void WorkerMetrics::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stop = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stop), options_.interval))
        return;
    }
    SampleOnce();
  }
}

void WorkerMetrics::SampleOnce() {
  const absl::Time now = absl::Now();
  std::vector<DeviceUse> uses;
  if (options_.device_uses) uses = options_.device_uses();
  std::vector<int> groups;
  for (const DeviceUse& u : uses)
    groups.insert(groups.end(), u.process_groups.begin(),
                  u.process_groups.end());
  const std::map<int, GroupUsage> usage = ReadGroupUsage(groups);

  std::map<int32_t, Sample> samples;
  std::map<std::pair<int32_t, int64_t>, std::pair<double, absl::Time>> cpu;
  for (const v1::Device& d : options_.devices) {
    Sample& s = samples[d.index()];
    s.memory_total = d.memory_bytes();
    const DeviceUse* use = nullptr;
    for (const DeviceUse& u : uses)
      if (u.device == d.index()) use = &u;
    if (use != nullptr) s.job_id = use->job_id;
    if (!d.emulated()) {
      int nvml_index = d.index();
      if (d.index() < static_cast<int>(options_.visible_devices.size())) {
        char* end = nullptr;
        const std::string& v = options_.visible_devices[d.index()];
        const long physical = std::strtol(v.c_str(), &end, 10);
        if (end != v.c_str() && *end == '\0') nvml_index = physical;
      }
      const bool was_healthy = nvml_.healthy(nvml_index);
      const int64_t failed_before = nvml_.failures(nvml_index);
      if (auto n = nvml_.Sample(nvml_index)) {
        s.utilization = n->utilization;
        s.memory_used = n->memory_used_bytes;
        if (n->memory_total_bytes > 0) s.memory_total = n->memory_total_bytes;
        s.power_watts = n->power_watts;
      }
      if (nvml_.failures(nvml_index) > failed_before)
        failures_
            .Add({{"worker", options_.worker_id},
                  {"device", absl::StrCat(d.index())}})
            .Increment();
      s.healthy = nvml_.available() && was_healthy && nvml_.healthy(nvml_index);
      continue;
    }
    if (use == nullptr) continue;
    double seconds = 0;
    for (int g : use->process_groups) {
      auto it = usage.find(g);
      if (it == usage.end()) continue;
      seconds += it->second.cpu_seconds * use->share;
      s.memory_used += static_cast<int64_t>(it->second.rss_bytes * use->share);
    }
    const auto key = std::make_pair(d.index(), use->job_id);
    cpu[key] = {seconds, now};
    auto prev = cpu_.find(key);
    if (prev != cpu_.end() && now > prev->second.second) {
      const double wall = absl::ToDoubleSeconds(now - prev->second.second);
      const double busy = std::max(0.0, seconds - prev->second.first);
      s.utilization = std::min(1.0, busy / wall / std::max(1e-9, use->cores));
    }
  }
  cpu_.swap(cpu);

  GaugeFamily util("tupa_device_utilization_ratio",
                   "Device utilisation 0..1 (NVML; for emulated devices the "
                   "CPU activity of the ranks holding it).");
  GaugeFamily mem("tupa_device_memory_used_bytes",
                  "Device memory used (NVML; for emulated devices the "
                  "ranks' resident memory).");
  GaugeFamily total("tupa_device_memory_capacity_bytes", "Device memory size.");
  GaugeFamily power("tupa_device_power_watts",
                    "Board power draw (NVML devices that report it).");
  GaugeFamily up("tupa_device_sampler_up",
                 "1 while the device is sampled; 0 once NVML is missing or "
                 "the device failed repeatedly.");
  GaugeFamily ranks("tupa_worker_rank_process_groups",
                    "Rank process groups running on this worker.");
  for (const v1::Device& d : options_.devices) {
    const Sample& s = samples[d.index()];
    std::vector<std::pair<std::string, std::string>> labels = {
        {"worker", options_.worker_id},
        {"device", absl::StrCat(d.index())},
        {"gpu_type", d.gpu_type()}};
    total.Add(labels, static_cast<double>(s.memory_total));
    up.Add(labels, s.healthy ? 1 : 0);
    if (!s.healthy) continue;
    if (s.job_id != 0) labels.emplace_back("job_id", absl::StrCat(s.job_id));
    util.Add(labels, s.utilization);
    mem.Add(labels, static_cast<double>(s.memory_used));
    if (s.power_watts) power.Add(labels, *s.power_watts);
  }
  ranks.Add({{"worker", options_.worker_id}},
            static_cast<double>(groups.size()));
  std::vector<prometheus::MetricFamily> families;
  for (GaugeFamily* f : {&util, &mem, &total, &power, &up, &ranks})
    families.push_back(f->Take());
  gauges_->Replace(std::move(families));
  absl::MutexLock lock(&mu_);
  latest_ = std::move(samples);
}

void WorkerMetrics::FillHeartbeat(v1::Heartbeat* heartbeat) {
  absl::MutexLock lock(&mu_);
  for (const v1::Device& d : options_.devices) {
    v1::Device* sample = heartbeat->add_devices();
    sample->set_index(d.index());
    auto it = latest_.find(d.index());
    if (it == latest_.end()) continue;
    sample->set_utilization(it->second.utilization);
    sample->set_memory_used_bytes(it->second.memory_used);
  }
}

}  // namespace tupa::worker

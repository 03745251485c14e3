// Helpers shared by the scheduler's and the worker's Prometheus endpoints.
//
// GaugeSnapshot is a prometheus::Collectable that serves whatever families
// were last handed to Replace(): gauges that describe a current view (jobs
// by state, GPUs per worker, devices with the job holding them) are rebuilt
// as a whole, so series of jobs or workers that went away disappear
// instead of lingering at their last value. Thread-safe.
//
// StartExposer() starts the /metrics HTTP endpoint (prometheus-cpp's
// civetweb exposer) without letting its exceptions escape.
#ifndef TUPA_COMMON_METRICS_H_
#define TUPA_COMMON_METRICS_H_

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace tupa {

class GaugeSnapshot : public prometheus::Collectable {
 public:
  // Replaces every family served from now on.
  void Replace(std::vector<prometheus::MetricFamily> families);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable absl::Mutex mu_;
  std::vector<prometheus::MetricFamily> families_ ABSL_GUARDED_BY(mu_);
};

// A gauge family under construction: Add() one sample per label set.
class GaugeFamily {
 public:
  GaugeFamily(std::string name, std::string help);
  GaugeFamily& Add(std::vector<std::pair<std::string, std::string>> labels,
                   double value);
  prometheus::MetricFamily Take() { return std::move(family_); }

 private:
  prometheus::MetricFamily family_;
};

// ":9464" -> "0.0.0.0:9464"; anything else unchanged.
std::string MetricsBindAddress(const std::string& listen);

// Starts /metrics on `listen` serving `collectables`. Returns nullptr for
// an empty `listen` (metrics disabled); Unavailable when the address cannot
// be bound.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartExposer(
    const std::string& listen,
    const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables);

}  // namespace tupa

#endif  // TUPA_COMMON_METRICS_H_

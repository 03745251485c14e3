#include "common/metrics.h"

#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tupa {

void GaugeSnapshot::Replace(std::vector<prometheus::MetricFamily> families) {
  absl::MutexLock lock(&mu_);
  families_ = std::move(families);
}

std::vector<prometheus::MetricFamily> GaugeSnapshot::Collect() const {
  absl::MutexLock lock(&mu_);
  return families_;
}

GaugeFamily::GaugeFamily(std::string name, std::string help) {
  family_.name = std::move(name);
  family_.help = std::move(help);
  family_.type = prometheus::MetricType::Gauge;
}

GaugeFamily& GaugeFamily::Add(
    std::vector<std::pair<std::string, std::string>> labels, double value) {
  prometheus::ClientMetric m;
  for (auto& [name, v] : labels)
    m.label.push_back({std::move(name), std::move(v)});
  m.gauge.value = value;
  family_.metric.push_back(std::move(m));
  return *this;
}

std::string MetricsBindAddress(const std::string& listen) {
  if (absl::StartsWith(listen, ":")) return absl::StrCat("0.0.0.0", listen);
  return listen;
}

absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartExposer(
    const std::string& listen,
    const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables) {
  if (listen.empty()) return std::unique_ptr<prometheus::Exposer>();
  std::unique_ptr<prometheus::Exposer> exposer;
  try {  // civetweb reports a port in use by throwing
    exposer = std::make_unique<prometheus::Exposer>(MetricsBindAddress(listen));
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", listen, ": ", e.what()));
  }
  for (const auto& c : collectables) exposer->RegisterCollectable(c);
  return exposer;
}

}  // namespace tupa

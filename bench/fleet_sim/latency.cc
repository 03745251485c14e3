#include "bench/fleet_sim/latency.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tupa::fleet_sim {

void LatencySamples::Add(double ms) {
  absl::MutexLock lock(&mu_);
  samples_.push_back(ms);
}

std::vector<double> LatencySamples::Sorted() const {
  std::vector<double> out;
  {
    absl::MutexLock lock(&mu_);
    out = samples_;
  }
  std::sort(out.begin(), out.end());
  return out;
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return -1;
  const size_t rank =
      static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

void ErrorCounts::Add(grpc::StatusCode code) {
  absl::MutexLock lock(&mu_);
  ++counts_[StatusCodeName(code)];
}

std::map<std::string, long> ErrorCounts::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

long ErrorCounts::Total() const {
  absl::MutexLock lock(&mu_);
  long total = 0;
  for (const auto& [code, n] : counts_) total += n;
  return total;
}

std::string StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return absl::StrCat("CODE_", static_cast<int>(code));
  }
}

}  // namespace tupa::fleet_sim

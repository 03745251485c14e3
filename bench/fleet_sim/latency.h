// LatencySamples: a thread-safe bag of latency samples (milliseconds) and
// their percentiles. ErrorCounts: failed RPCs counted by status code name.
// Both are written from gRPC callback threads and read once at the end.
#ifndef TUPA_BENCH_FLEET_SIM_LATENCY_H_
#define TUPA_BENCH_FLEET_SIM_LATENCY_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tupa::fleet_sim {

class LatencySamples {
 public:
  void Add(double ms);
  // A sorted copy of every sample so far.
  std::vector<double> Sorted() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<double> samples_ ABSL_GUARDED_BY(mu_);
};

// The q-quantile (0..1) of sorted samples by the nearest-rank rule; -1 when
// there are none (printed as null).
double Percentile(const std::vector<double>& sorted, double q);

class ErrorCounts {
 public:
  void Add(grpc::StatusCode code);
  std::map<std::string, long> Snapshot() const;
  long Total() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, long> counts_ ABSL_GUARDED_BY(mu_);
};

// "UNAVAILABLE" for grpc::StatusCode::UNAVAILABLE, and so on.
std::string StatusCodeName(grpc::StatusCode code);

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_LATENCY_H_

// Prober: the reads a user makes while the fleet runs, each at `hz` on one
// shared channel: GetJob of a random acknowledged job (or, before any job
// of this process was acknowledged, of a random job the ListJobs probes
// returned: a reader that submits nothing), ListJobs (limit 100) and
// ListWorkers. Every call has `deadline`; its latency is recorded
// whatever the outcome (a call that ran into its deadline counts as the
// deadline), failures are counted by code. Calls are independent: a slow
// one does not delay the next. Thread-safe.
//
// ListWorkers is received as bytes and not decoded (a generic call): its
// latency is the scheduler's answer arriving whole. Decoding 1,000 workers
// with their devices 20 times a second in each of two probing processes
// took ~6 % of the 2-core machine that the scheduler under test shares,
// a cost a user's `tupa workers` on another machine never puts on it.
//
// CompletionPoller (for runs without simulated workers): every 100 ms it
// GetJobs the `batch` oldest acknowledged, unfinished jobs and marks
// terminal ones completed at their finished_at. Kept small (16: at most
// 160 GetJob/s), so the poll is a load like the probes, not the load.
#ifndef TUPA_BENCH_FLEET_SIM_PROBER_H_
#define TUPA_BENCH_FLEET_SIM_PROBER_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/fleet_sim/job_tracker.h"
#include "bench/fleet_sim/latency.h"
#include "bench/fleet_sim/timer_queue.h"
#include "tupa/v1/cluster.grpc.pb.h"
#include "tupa/v1/job_service.grpc.pb.h"

namespace tupa::fleet_sim {

struct ProbeLatencies {
  LatencySamples get_job, list_jobs, list_workers;
  // The same reads split at Prober::MarkHeld(): those begun before it
  // (under the submissions' load) and after it (the queue as the
  // submissions left it, without their load).
  LatencySamples load_get_job, load_list_jobs, load_list_workers;
  LatencySamples held_get_job, held_list_jobs, held_list_workers;
  ErrorCounts get_job_errors, list_jobs_errors, list_workers_errors;
};

class Prober {
 public:
  Prober(const std::string& scheduler, double hz, absl::Duration deadline,
         JobTracker* tracker, TimerQueue* timers, ErrorCounts* errors,
         ProbeLatencies* out);
  void Start();
  // Probes begun from now on are also recorded as held (ProbeLatencies).
  void MarkHeld() { held_ = true; }
  // No new probes afterwards; waits (up to the deadline) for those in
  // flight.
  void Stop();

 private:
  enum class Kind { kGetJob, kListJobs, kListWorkers };
  void Fire(Kind kind);
  void Finished();

  const double hz_;
  const absl::Duration deadline_;
  JobTracker* const tracker_;
  TimerQueue* const timers_;
  ErrorCounts* const errors_;
  ProbeLatencies* const out_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
  std::unique_ptr<grpc::GenericStub> raw_;  // ListWorkers, undecoded
  std::atomic<bool> stop_{false};
  std::atomic<bool> held_{false};
  absl::Mutex mu_;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_){42};
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // Job ids the last ListJobs probe returned.
  std::vector<int64_t> listed_ids_ ABSL_GUARDED_BY(mu_);
};

class CompletionPoller {
 public:
  CompletionPoller(const std::string& scheduler, size_t batch,
                   JobTracker* tracker, TimerQueue* timers,
                   ErrorCounts* errors);
  void Start();
  void Stop();

 private:
  void Poll();

  const size_t batch_;
  JobTracker* const tracker_;
  TimerQueue* const timers_;
  ErrorCounts* const errors_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
  std::atomic<bool> stop_{false};
  std::atomic<int> in_flight_{0};
};

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_PROBER_H_

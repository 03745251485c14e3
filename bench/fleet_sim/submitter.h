// Submitter: submits jobs 0..jobs-1 of a JobMix from `clients` concurrent
// clients, each with its own channel (own TCP connection) and one call
// outstanding at a time (callback API: no thread per client). Every submit
// carries an idempotency key (key_prefix + index); UNAVAILABLE and
// DEADLINE_EXCEEDED are retried with the same key, so a job is created at
// most once; other errors give the job up. Acks go to the JobTracker. With
// a rate, submissions are paced (clients still bound what is in flight).
// Thread-safe; must outlive its calls (Wait() returns once all ended).
#ifndef TUPA_BENCH_FLEET_SIM_SUBMITTER_H_
#define TUPA_BENCH_FLEET_SIM_SUBMITTER_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/fleet_sim/job_mix.h"
#include "bench/fleet_sim/job_tracker.h"
#include "bench/fleet_sim/latency.h"
#include "bench/fleet_sim/timer_queue.h"
#include "tupa/v1/job_service.grpc.pb.h"

namespace tupa::fleet_sim {

struct SubmitterOptions {
  std::string scheduler;
  int clients = 32;
  long jobs = 0;
  std::string key_prefix;
  absl::Duration deadline = absl::Seconds(30);
  int max_tries = 30;  // per job, for retryable errors
  // Jobs per second over all clients (job i is due i / rate s after the
  // start); 0: each client submits as soon as its last call ended.
  double rate = 0;
};

class Submitter {
 public:
  Submitter(SubmitterOptions options, const JobMix* mix, JobTracker* tracker,
            TimerQueue* timers, ErrorCounts* errors, LatencySamples* acks);
  ~Submitter();

  void Start();
  // Stops taking new jobs (calls in flight finish).
  void Stop();
  // True once every client finished; waits until `deadline`.
  bool Wait(absl::Time deadline);
  absl::Time first_start() const { return first_start_; }
  absl::Time last_ack();

 private:
  class Client;
  void ClientDone();

  const SubmitterOptions options_;
  const JobMix* const mix_;
  JobTracker* const tracker_;
  TimerQueue* const timers_;
  ErrorCounts* const errors_;
  LatencySamples* const acks_;
  std::atomic<long> next_{0};
  std::atomic<bool> stop_{false};
  absl::Time first_start_;
  absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_ack_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Client>> clients_;
};

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_SUBMITTER_H_

// JobTracker: what the simulator knows about each job it submitted: when
// its submit was acknowledged, when a simulated worker first received an
// Assign for it, and when it completed (every node of one attempt exited
// and was acked, or a poller saw it terminal). Thread-safe; written from
// gRPC callback and timer threads.
#ifndef TUPA_BENCH_FLEET_SIM_JOB_TRACKER_H_
#define TUPA_BENCH_FLEET_SIM_JOB_TRACKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/fleet_sim/latency.h"

namespace tupa::fleet_sim {

class JobTracker {
 public:
  // The submit of job_id was acknowledged at `at` (once per job; a retried
  // submit that returned the same job is not counted again).
  void Acked(int64_t job_id, absl::Time at);
  // A submit that was given up on (a non-retryable error).
  void SubmitFailed();
  // An Assign of any attempt of the job reached a simulated worker.
  void Assigned(int64_t job_id, absl::Time at);
  // One node of (job, attempt) exited and the scheduler acked it; the job
  // completes when all `nnodes` nodes of one attempt have.
  void NodeAcked(int64_t job_id, int32_t attempt, int nnodes, absl::Time at);
  // The job was seen terminal (polling mode), finished at `at`.
  void Completed(int64_t job_id, absl::Time at);

  // A random acknowledged job id, or nullopt before the first ack.
  std::optional<int64_t> RandomAcked(std::mt19937_64& rng);
  // Up to `max` acknowledged, not yet completed jobs, the oldest acks
  // first (jobs tend to finish in the order they were submitted).
  std::vector<int64_t> Outstanding(size_t max);

  // Blocks until `done()` holds or `deadline` passes; true when it held.
  // done() sees (acked, failed, completed).
  bool WaitFor(absl::Time deadline,
               const std::function<bool(long, long, long)>& done);

  long acked();
  long failed();
  long completed();
  // Ack -> first Assign, ms (0 when the Assign arrived before the ack).
  std::vector<double> AssignLatencies();
  // Completion times, sorted.
  std::vector<absl::Time> CompletionTimes();

 private:
  struct Entry {
    std::optional<absl::Time> acked;
    std::optional<absl::Time> assigned;
    std::optional<absl::Time> completed;
    std::map<int32_t, int> nodes_acked;  // attempt -> nodes
  };
  void Complete(Entry& e, absl::Time at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::unordered_map<int64_t, Entry> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> acked_ids_ ABSL_GUARDED_BY(mu_);
  size_t oldest_ ABSL_GUARDED_BY(mu_) = 0;  // acked_ids_[< oldest_] done
  long failed_ ABSL_GUARDED_BY(mu_) = 0;
  long completed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_JOB_TRACKER_H_

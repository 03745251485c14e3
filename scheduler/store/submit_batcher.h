// SubmitBatcher: group commit for job submissions.
//
// Concurrent submissions that arrive while a commit is in flight are
// written together in the next transaction (one autocommit statement per
// batch, JobStore::SubmitJobs), so N clients cost about one fsync per batch
// instead of one each. The committer hands a committed batch to a
// completion thread and starts the next one at once: answering a batch's
// callers (gRPC writes) overlaps the next commit instead of delaying it
// (BENCHMARKS.md: durable submissions/s against pgbench's single-row INSERT
// tps). A submission completes only after the transaction holding its job
// committed; when a batch fails, every submission in it gets the error
// (Unavailable: retry with the same idempotency key). Thread-safe.
#ifndef TUPA_SCHEDULER_STORE_SUBMIT_BATCHER_H_
#define TUPA_SCHEDULER_STORE_SUBMIT_BATCHER_H_

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/store/job_store.h"

namespace tupa::scheduler {

class SubmitBatcher {
 public:
  using Done = std::function<void(absl::StatusOr<SubmitResult>)>;

  // `committers` transactions may be in flight at once; each takes up to
  // `max_batch` queued submissions. The destructor commits what is queued.
  SubmitBatcher(JobStore* store, int committers = 1, int max_batch = 256);
  ~SubmitBatcher();

  // Queues one submission and returns at once. `done` runs exactly once:
  // on the completion thread after the batch's transaction ended, or inline
  // (Unavailable) once the batcher is being destroyed. It must not block
  // for long: the answers of later batches wait for it.
  void SubmitAsync(v1::JobSpec spec, std::string idempotency_key, Done done);

  // The same, waiting for the result.
  absl::StatusOr<SubmitResult> Submit(const v1::JobSpec& spec,
                                      const std::string& idempotency_key);

 private:
  struct Request {
    v1::JobSpec spec;
    std::string key;
    Done done;
  };
  struct Finished {
    std::vector<Request> batch;
    absl::StatusOr<std::vector<SubmitResult>> results;
  };
  void CommitLoop();
  void CompleteLoop();

  JobStore* const store_;
  const int max_batch_;
  absl::Mutex mu_;
  std::deque<Request> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Committed batches whose callers are not answered yet.
  absl::Mutex done_mu_;
  std::deque<Finished> finished_ ABSL_GUARDED_BY(done_mu_);
  bool committers_done_ ABSL_GUARDED_BY(done_mu_) = false;
  std::vector<std::thread> committers_;
  std::thread completer_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_SUBMIT_BATCHER_H_

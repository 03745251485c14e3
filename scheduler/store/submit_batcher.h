// SubmitBatcher: group commit for job submissions.
//
// Concurrent Submit() calls that arrive while a commit is in flight are
// written together in the next transaction, so N clients cost about one
// fsync per batch instead of one each (BENCHMARKS.md: durable submissions/s
// against pgbench's single-row INSERT tps). Submit() returns only after
// the transaction holding its job committed; when a batch fails, every
// caller in it gets the error (Unavailable: retry with the same
// idempotency key). Thread-safe.
#ifndef TUPA_SCHEDULER_STORE_SUBMIT_BATCHER_H_
#define TUPA_SCHEDULER_STORE_SUBMIT_BATCHER_H_

#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/store/job_store.h"

namespace tupa::scheduler {

class SubmitBatcher {
 public:
  // `committers` transactions may be in flight at once; each takes up to
  // `max_batch` queued submissions.
  SubmitBatcher(JobStore* store, int committers = 2, int max_batch = 256);
  ~SubmitBatcher();

  absl::StatusOr<SubmitResult> Submit(const v1::JobSpec& spec,
                                      const std::string& idempotency_key);

 private:
  struct Request;
  void CommitLoop();

  JobStore* const store_;
  const int max_batch_;
  absl::Mutex mu_;
  std::deque<Request*> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> committers_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_SUBMIT_BATCHER_H_

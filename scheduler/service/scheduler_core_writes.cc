// SchedulerCore: the round's batch of job state writes (group commit).
// Changes are queued by whatever decides them, under mu_; the loop commits
// them in one transaction per round and only then runs what depends on
// them (an Assign to a worker, an exit ack).
#include <glog/logging.h>

#include "scheduler/service/scheduler_core.h"

namespace tupa::scheduler {

void SchedulerCore::Write(std::string what,
                          const std::function<size_t(WriteBatch&)>& add,
                          std::function<absl::Status()> single,
                          std::function<void(const absl::Status&)> done) {
  const size_t index = add(batch_);
  if (batch_writes_.size() <= index) batch_writes_.resize(index + 1);
  batch_writes_[index] = {std::move(what), std::move(single), std::move(done)};
}

void SchedulerCore::CommitQueuedWrites(bool release_lock) {
  // One commit at a time: a later batch must not land before an earlier.
  AwaitNoCommit();
  if (batch_.empty()) return;
  WriteBatch batch = std::move(batch_);
  batch_.Clear();
  std::vector<QueuedWrite> writes = std::move(batch_writes_);
  batch_writes_.clear();
  // Every change to these jobs so far is in this batch or committed.
  std::vector<std::shared_ptr<const ReadView::JobEntry>> reads =
      TakeDirtyReads();
  // Writes deferred while the database was down go first, in order: a
  // later change must not land before an earlier one.
  const bool earlier_deferred = !deferred_.empty();
  committing_ = true;
  if (release_lock) mu_.Unlock();
  absl::StatusOr<std::vector<absl::Status>> results =
      earlier_deferred
          ? absl::UnavailableError("earlier writes are still deferred")
          : job_store_->CommitBatch(batch);
  if (release_lock) mu_.Lock();
  committing_ = false;
  for (QueuedWrite& w : writes) {
    if (results.ok()) break;
    if (!w.single) continue;
    // The transaction failed as a whole: each change on its own, unless
    // the database is down (then all wait, in order).
    absl::Status s =
        absl::IsUnavailable(results.status()) ? results.status() : w.single();
    if (absl::IsUnavailable(s)) {
      Defer(w.what, [single = w.single, done = w.done] {
        absl::Status later = single();
        if (!absl::IsUnavailable(later) && done) done(later);
        return later;
      });
      w.done = nullptr;
    } else {
      w.single = nullptr;
      if (w.done) w.done(s);
      w.done = nullptr;
    }
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    if (!writes[i].done) continue;
    writes[i].done(results.ok() ? (*results)[i] : results.status());
  }
  metrics_->BatchCommitted(batch.size());
  reads_.PutJobs(std::move(reads));
}

}  // namespace tupa::scheduler

// WriteBatch: job state changes of many jobs, committed by
// JobStore::CommitBatch in ONE transaction (group commit) with one
// set-based statement per kind of change (unnest of arrays), so a batch of
// a thousand changes costs about as much as one.
//
// Each change keeps the fence of its single-row JobStore method: it touches
// only a row whose current attempt (and state) matches, and its result is
// FailedPrecondition otherwise; a fenced change does not undo the others.
// Within the transaction the kinds run in lifecycle order: assignments,
// RUNNING marks, allocation closes, job ends, progress. A batch must not
// hold two changes of the same kind for one job attempt (node, for closes);
// progress is the exception (the last one per job wins).
//
// A plain value: not thread-safe; build it, commit it, Clear() it.
#ifndef TUPA_SCHEDULER_STORE_WRITE_BATCH_H_
#define TUPA_SCHEDULER_STORE_WRITE_BATCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/pricing/money.h"
#include "scheduler/store/allocation_record.h"
#include "scheduler/store/job_store.h"
#include "tupa/v1/job.pb.h"

namespace tupa::scheduler {

class WriteBatch {
 public:
  // Each method queues one change and returns its index in the results of
  // CommitBatch. Their meaning is that of the JobStore method of the same
  // name (FinishJob never closes allocations here), or for CloseAllocation
  // UsageStore's (cost: none when unpriced).
  size_t AssignJob(int64_t id, int32_t attempt,
                   std::vector<AllocationRecord> nodes);
  size_t MarkRunning(int64_t id, int32_t attempt);
  size_t CloseAllocation(int64_t id, int32_t attempt, int32_t node_rank,
                         int64_t ended_at_ms,
                         std::optional<pricing::Money> cost,
                         std::string currency,
                         std::optional<int32_t> exit_code);
  size_t FinishJob(int64_t id, int32_t attempt, v1::JobState state,
                   int32_t exit_code, std::string message);
  size_t UpdateProgress(int64_t id, int32_t attempt,
                        const v1::Progress& progress);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void Clear() { *this = WriteBatch(); }

  // The queued changes, as JobStore::CommitBatch reads them.
  struct JobAttempt {
    size_t index;
    int64_t id;
    int32_t attempt;
  };
  struct Assign {
    JobAttempt job;
    std::vector<AllocationRecord> nodes;
  };
  struct Close {
    size_t index;
    int64_t id;
    int32_t attempt;
    int32_t node_rank;
    int64_t ended_at_ms;
    std::optional<pricing::Money> cost;
    std::string currency;
    std::optional<int32_t> exit_code;
  };
  struct Finish {
    JobAttempt job;
    v1::JobState state;
    int32_t exit_code;
    std::string message;
  };
  struct Progress {
    JobAttempt job;
    std::string json;
  };

 private:
  friend class JobStore;
  size_t size_ = 0;
  std::vector<Assign> assigns_;
  std::vector<JobAttempt> running_;
  std::vector<Close> closes_;
  std::vector<Finish> finishes_;
  std::vector<Progress> progress_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_WRITE_BATCH_H_

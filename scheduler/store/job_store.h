// JobStore: the jobs of the scheduler's PostgreSQL store: submission (one
// statement per batch), reads, and every job state change, one at a time or
// many in one transaction (CommitBatch, write_batch.h). The rows it touches:
// jobs, job_events, and the allocations a job's assignment opens.
//
// Every method is one transaction on the shared Database (database.h); a
// method that returns OK has committed. Errors follow pg_errors.h
// (Unavailable: retry the call; Aborted: retry). State-changing methods are
// fenced by attempt: they only touch a row whose current attempt matches,
// and return FailedPrecondition otherwise. A stored job whose spec or
// progress cannot be decoded is DataLoss (naming the job and the column),
// for the read that meets it: GetJob, ListJobs, LoadActiveJobs. Thread-safe.
#ifndef TUPA_SCHEDULER_STORE_JOB_STORE_H_
#define TUPA_SCHEDULER_STORE_JOB_STORE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/job_array.h"
#include "scheduler/store/allocation_record.h"
#include "tupa/v1/job.pb.h"

namespace tupa::scheduler {

class Database;    // database.h
class UsageStore;  // usage_store.h
class WriteBatch;  // write_batch.h

struct SubmitResult {
  v1::Job job;
  bool created = false;  // false: the idempotency key named an existing job
};

// One submission of a batch (pointers owned by the caller).
struct SubmitRequest {
  const v1::JobSpec* spec;
  const std::string* idempotency_key;
};

// A job array as committed: its id and its tasks in index order.
struct ArraySubmitResult {
  int64_t array_id = 0;
  std::vector<SubmitResult> tasks;
  bool created = false;  // false: the key named an array already stored
};

struct JobFilter {
  std::vector<v1::JobState> states;
  std::string user;
  std::string team;
  int limit = 500;
  int64_t array_id = 0;  // 0: any; else only this array's tasks
};

class JobStore {
 public:
  // `db` outlives the store. A batch that closes allocations tells `usage`
  // (when given) that costs changed (UsageStore::CostsChanged).
  explicit JobStore(Database* db, UsageStore* usage = nullptr);

  // Inserts a PENDING job (attempt 1); the row itself records the
  // submission (view job_history, 0012). With a non-empty key, a second
  // call by the same user (spec.user) with the same key returns the first
  // job; another user's call with that key creates its own.
  absl::StatusOr<SubmitResult> SubmitJob(const v1::JobSpec& spec,
                                         const std::string& idempotency_key);

  // Several submissions in ONE statement, committed on its own (group
  // commit); results are in request order and are returned only after the
  // commit. Duplicate keys within the batch resolve to one job.
  absl::StatusOr<std::vector<SubmitResult>> SubmitJobs(
      const std::vector<SubmitRequest>& requests);

  // A job array: draws its id, marks every task (MarkArrayTask: spec.array,
  // TUPA_ARRAY_* env) and inserts all tasks in ONE statement, so they
  // commit together or not at all. `tasks[i]` is the task of
  // `array.indexes[i]`. With a non-empty key, task i is stored under
  // "KEY#INDEX", and a retry returns the array stored the first time.
  absl::StatusOr<ArraySubmitResult> SubmitArray(
      std::vector<v1::JobSpec> tasks, const ArrayIndexes& array,
      const std::string& expression, const std::string& idempotency_key);

  // The job with the placements of its current attempt. NotFound; DataLoss.
  absl::StatusOr<v1::Job> GetJob(int64_t id);
  // Whether `user` stored a job under this idempotency key (keys are per
  // user: another user's job under the same key does not count).
  absl::StatusOr<bool> HasIdempotencyKey(const std::string& user,
                                         const std::string& key);
  absl::StatusOr<std::vector<v1::Job>> ListJobs(const JobFilter& filter);
  // PENDING, ASSIGNED and RUNNING jobs (without placements: their open
  // allocations are UsageStore::LoadOpenAllocations). Used to rebuild the
  // scheduler's view at start.
  absl::StatusOr<std::vector<v1::Job>> LoadActiveJobs();

  // PENDING -> ASSIGNED with one allocation row per node.
  absl::Status AssignJob(int64_t id, int32_t attempt,
                         const std::vector<AllocationRecord>& nodes);
  // Commits every change of `batch` in one transaction (write_batch.h).
  // Returns one status per change, in the order they were queued: OK, or
  // FailedPrecondition for a change its attempt fence refused. An error of
  // the whole transaction (Unavailable, ...) is returned instead: then
  // nothing, or with a commit in doubt everything, was written.
  absl::StatusOr<std::vector<absl::Status>> CommitBatch(
      const WriteBatch& batch);
  // ASSIGNED -> RUNNING.
  absl::Status MarkRunning(int64_t id, int32_t attempt);
  // Any active state -> SUCCEEDED | FAILED | CANCELLED; closes the
  // attempt's open allocations (unpriced, now) only when
  // `close_allocations`.
  absl::Status FinishJob(int64_t id, int32_t attempt, v1::JobState state,
                         int32_t exit_code, const std::string& message,
                         bool close_allocations);
  // Active -> PENDING with attempt + 1. The old attempt's allocations stay
  // open until each is closed (its ranks gone). Returns the new attempt.
  absl::StatusOr<int32_t> RequeueJob(int64_t id, int32_t attempt,
                                     const std::string& message);
  // ASSIGNED -> PENDING with attempt + 1 for an assignment that was stored
  // but never started (its commit was in doubt): its open allocations are
  // closed at their start (zero length, no cost) in the same transaction.
  // Returns the new attempt; FailedPrecondition unless ASSIGNED at
  // `attempt`.
  absl::StatusOr<int32_t> RequeueUnstartedAssignment(
      int64_t id, int32_t attempt, const std::string& message);
  absl::Status UpdateProgress(int64_t id, int32_t attempt,
                              const v1::Progress& progress);

 private:
  Database* const db_;
  UsageStore* const usage_;
};

// "PENDING" <-> JOB_STATE_PENDING, as stored in the jobs.state column.
std::string StateName(v1::JobState state);
v1::JobState StateFromName(const std::string& name);

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_JOB_STORE_H_

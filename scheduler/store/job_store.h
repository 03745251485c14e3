// JobStore: the scheduler's PostgreSQL persistence (libpqxx), the source of
// truth for jobs, their events, workers and allocations.
//
// Every method is one transaction; a method that returns OK has committed.
// Errors follow pg_errors.h (Unavailable: retry the call; Aborted: retry).
// State-changing job methods are fenced by attempt: they only touch a row
// whose current attempt matches, and return FailedPrecondition otherwise.
// Thread-safe: a small pool of connections, reconnected on demand.
#ifndef TUPA_SCHEDULER_STORE_JOB_STORE_H_
#define TUPA_SCHEDULER_STORE_JOB_STORE_H_

#include <map>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/job_array.h"
#include "tupa/v1/cluster.pb.h"
#include "tupa/v1/job.pb.h"

namespace tupa::scheduler {

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

// A node of a job's current attempt whose allocation is closed.
struct EndedNode {
  int64_t job_id = 0;
  int32_t node_rank = 0;
  std::optional<int32_t> exit_code;  // none: closed without an EXITED report
};

// One open (or just closed) allocation row.
struct AllocationRecord {
  int64_t job_id = 0;
  int32_t attempt = 0;
  std::string worker_id;
  int32_t node_rank = 0;
  std::vector<int32_t> device_indexes;
  double gpu_share = 1;
  int32_t master_port = 0;
  // What the allocation is priced as (from its worker) and since when.
  std::string region;
  std::string gpu_type;
  double gpus = 0;  // devices x share
  int64_t started_at_ms = 0;
};

// One span a worker was up, priced like allocations.
struct UptimeRecord {
  int64_t id = 0;
  std::string worker_id;
  std::string region;
  std::string gpu_type;
  std::string offering;
  double gpus = 0;
  int64_t started_at_ms = 0;
};

// Usage of one job: all attempts, allocations closed so far.
struct JobUsage {
  double gpu_seconds = 0;   // open allocations counted up to now
  std::string closed_cost;  // decimal sum of closed allocations; "" if none
  std::string currency;
};

// One group of the cost report.
struct CostGroup {
  std::string key;
  double gpu_seconds = 0;
  std::string cost;  // decimal
};

// The money of closed allocations ever, per label set of
// tupa_cost_accrued_total.
struct CostTotal {
  std::string team;
  std::string user;
  std::string gpu_type;
  std::string currency;
  std::string cost;  // decimal
};

// A closed allocation or uptime span that a cost report's window cuts (it
// crosses the window's bounds or, grouped by day, a UTC midnight): the
// report counts only its part inside (pricing/usage_window.h).
struct UsageRow {
  std::string key;  // its group (allocations) or worker id (uptime)
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
  double gpus = 0;
  std::string cost;  // as billed; "" when unpriced
  std::string region;
  std::string gpu_type;
  std::string offering;
};

// One API token row (the token itself is never stored, only its SHA-256).
struct ApiTokenRecord {
  int64_t id = 0;
  std::string user;
  std::string team;
  bool admin = false;
  int64_t created_at_ms = 0;
  int64_t revoked_at_ms = 0;  // 0: active
};

class WriteBatch;  // write_batch.h

class JobStore {
 public:
  // Connects `pool_size` connections to `url` (libpq URI). Unavailable when
  // the server cannot be reached.
  static absl::StatusOr<std::unique_ptr<JobStore>> Connect(
      const std::string& url, int pool_size = 4);
  ~JobStore();

  // Applies the embedded migrations that are not yet applied, in order,
  // under an advisory lock (several schedulers may start at once).
  absl::Status Migrate();

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

  absl::StatusOr<v1::Job> GetJob(int64_t id);
  // Whether `user` stored a job under this idempotency key (keys are per
  // user: another user's job under the same key does not count).
  absl::StatusOr<bool> HasIdempotencyKey(const std::string& user,
                                         const std::string& key);
  absl::StatusOr<std::vector<v1::Job>> ListJobs(const JobFilter& filter);
  // PENDING, ASSIGNED and RUNNING jobs, with their open allocations as
  // placements. Used to rebuild the scheduler's view at start.
  absl::StatusOr<std::vector<v1::Job>> LoadActiveJobs();
  absl::StatusOr<std::vector<AllocationRecord>> LoadOpenAllocations();

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
  // attempt's open allocations only when `close_allocations`.
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
  // Closes one node's allocation of an attempt (its processes are gone) at
  // `ended_at_ms`, with its cost (decimal; "" when unpriced) and, when the
  // worker reported the node EXITED, its exit code.
  absl::Status CloseAllocation(int64_t id, int32_t attempt, int32_t node_rank,
                               int64_t ended_at_ms, const std::string& cost,
                               const std::string& currency,
                               std::optional<int32_t> exit_code = std::nullopt);
  // The closed allocations of the current attempts of ASSIGNED and RUNNING
  // jobs: the nodes that ended before a scheduler restart.
  absl::StatusOr<std::vector<EndedNode>> LoadEndedNodesOfActiveJobs();
  absl::Status UpdateProgress(int64_t id, int32_t attempt,
                              const v1::Progress& progress);

  // Usage and cost (job_store_usage.cc).
  absl::StatusOr<JobUsage> GetJobUsage(int64_t id);
  absl::StatusOr<std::map<int64_t, JobUsage>> GetJobsUsage(
      const std::vector<int64_t>& ids);
  // Sum of closed allocation costs of `team`'s jobs started since `since_ms`.
  // Answered from memory while no allocation was closed through this store
  // since the last read of the same (team, since_ms): only CloseAllocation
  // writes costs, and budgeted submits ask on every submit. A cost written
  // by hand in SQL shows after the next close or a restart.
  absl::StatusOr<std::string> TeamSpend(const std::string& team,
                                        int64_t since_ms);
  // Closed allocations wholly inside [since, until) (and, by day, within
  // one UTC day), grouped by `group_by` (team, user, gpu-type, region, day,
  // job). The closed ones that overlap the window otherwise are
  // CrossingAllocations, one row each.
  // What every closed, priced allocation cost, summed per team, user, GPU
  // type and currency: where a restarted scheduler's cost counter resumes.
  absl::StatusOr<std::vector<CostTotal>> ClosedCostTotals();
  absl::StatusOr<std::vector<CostGroup>> CostByGroup(
      const std::string& group_by, int64_t since_ms, int64_t until_ms);
  absl::StatusOr<std::vector<UsageRow>> CrossingAllocations(
      const std::string& group_by, int64_t since_ms, int64_t until_ms);
  // Closed uptime spans wholly inside [since, until): GPU-seconds and cost;
  // those that overlap it otherwise are CrossingUptime, one row each.
  absl::StatusOr<CostGroup> UptimeTotals(int64_t since_ms, int64_t until_ms);
  absl::StatusOr<std::vector<UsageRow>> CrossingUptime(int64_t since_ms,
                                                       int64_t until_ms);
  // Money the idle policy saved in [since, until), as a decimal in the
  // catalog currency: for each uptime span an idle SHUTDOWN ended (and no
  // SHUTDOWN_CANCELLED undid), the event's saved_per_hour over the time the
  // worker stayed down, until it registered again or `until`.
  absl::StatusOr<std::string> IdleShutdownSavings(int64_t since_ms,
                                                  int64_t until_ms);
  absl::StatusOr<int64_t> OpenUptime(const UptimeRecord& record);
  absl::Status CloseUptime(int64_t id, int64_t ended_at_ms,
                           const std::string& cost,
                           const std::string& currency);
  absl::StatusOr<std::vector<UptimeRecord>> LoadOpenUptime();

  // Cluster events (idle shutdowns, scale-ups, zombies, hook results);
  // empty worker_id / job_id 0 are stored as NULL, saved_per_hour "" too.
  absl::Status RecordClusterEvent(const std::string& kind,
                                  const std::string& worker_id, int64_t job_id,
                                  const std::string& reason,
                                  double idle_seconds,
                                  const std::string& saved_per_hour);
  // The reason of the worker's last SHUTDOWN event, "" when none.
  absl::StatusOr<std::map<std::string, std::string>> LastShutdownReasons();

  absl::Status UpsertWorker(const v1::Worker& worker);
  absl::Status SetWorkerState(const std::string& id, v1::WorkerState state);
  // An operator's drain (or its undoing): kept apart from the state, which
  // a loss or a stop overwrites. Also moves an UP worker to DRAINING, or a
  // DRAINING one back to UP. NotFound for an unknown worker.
  absl::Status SetWorkerDrain(const std::string& id, bool drained);
  absl::StatusOr<std::vector<v1::Worker>> ListWorkers();

  // ---- API tokens (job_store_tokens.cc) -------------------------------
  // `sha256_hex` is the lowercase hex SHA-256 of the token; the token
  // itself never reaches the store.
  absl::StatusOr<ApiTokenRecord> CreateToken(const std::string& sha256_hex,
                                             const std::string& user,
                                             const std::string& team,
                                             bool admin);
  // Inserts the token, or makes an existing row with that hash belong to
  // `user`/`team` with the given role (a revoked row stays revoked).
  absl::StatusOr<ApiTokenRecord> UpsertToken(const std::string& sha256_hex,
                                             const std::string& user,
                                             const std::string& team,
                                             bool admin);
  // NotFound when no row has that hash (revoked rows are returned).
  absl::StatusOr<ApiTokenRecord> LookupToken(const std::string& sha256_hex);
  absl::StatusOr<std::vector<ApiTokenRecord>> ListTokens();
  // Sets revoked_at (idempotent); NotFound for an unknown id.
  absl::StatusOr<ApiTokenRecord> RevokeToken(int64_t id);
  // ---- end of API tokens ----------------------------------------------

  // A borrowed connection, for the transaction helper in job_store.cc.
  class Lease;

 private:
  explicit JobStore(std::string url);
  // TeamSpend's query, without the cache.
  absl::StatusOr<std::string> ReadTeamSpend(const std::string& team,
                                            int64_t since_ms);
  // Borrows a connection (reconnecting it when broken) for one transaction.
  absl::StatusOr<std::unique_ptr<Lease>> Acquire();
  void Release(std::unique_ptr<pqxx::connection> conn);
  // CreateToken and UpsertToken: one INSERT, `on_conflict` the difference.
  absl::StatusOr<ApiTokenRecord> InsertToken(const std::string& sha256_hex,
                                             const std::string& user,
                                             const std::string& team,
                                             bool admin,
                                             const char* on_conflict);

  const std::string url_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  // TeamSpend's answers, valid while `cost_generation_` is unchanged; a
  // CloseAllocation bumps it after its commit.
  struct SpendEntry {
    int64_t generation;
    std::string spend;
  };
  absl::Mutex spend_mu_;
  int64_t cost_generation_ ABSL_GUARDED_BY(spend_mu_) = 0;
  std::map<std::pair<std::string, int64_t>, SpendEntry> spend_cache_
      ABSL_GUARDED_BY(spend_mu_);
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  int pool_size_ = 4;
};

// "PENDING" <-> JOB_STATE_PENDING, as stored in the jobs.state column.
std::string StateName(v1::JobState state);
v1::JobState StateFromName(const std::string& name);

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_JOB_STORE_H_

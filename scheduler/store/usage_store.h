// UsageStore: what the cluster's resources were used for and what that
// cost: allocations (open, closed, priced), worker uptime spans, and the
// cost queries over them (per job, per team this month, cost reports, idle
// shutdown savings).
//
// Amounts are pricing::Money at this boundary (NUMERIC in SQL); an amount
// or row that cannot be decoded is DataLoss naming the column. Every method
// is one transaction on the shared Database (database.h); errors follow
// pg_errors.h. Thread-safe.
#ifndef TUPA_SCHEDULER_STORE_USAGE_STORE_H_
#define TUPA_SCHEDULER_STORE_USAGE_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/pricing/money.h"
#include "scheduler/store/allocation_record.h"

namespace tupa::scheduler {

class Database;  // database.h

// A node of a job's current attempt whose allocation is closed.
struct EndedNode {
  int64_t job_id = 0;
  int32_t node_rank = 0;
  std::optional<int32_t> exit_code;  // none: closed without an EXITED report
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
  double gpu_seconds = 0;  // open allocations counted up to now
  // Sum of the closed, priced allocations; none if there is none.
  std::optional<pricing::Money> closed_cost;
  std::string currency;
};

// One group of the cost report.
struct CostGroup {
  std::string key;
  double gpu_seconds = 0;
  pricing::Money cost;
};

// The money of closed allocations ever, per label set of
// tupa_cost_accrued_total.
struct CostTotal {
  std::string team;
  std::string user;
  std::string gpu_type;
  std::string currency;
  pricing::Money cost;
};

// A closed allocation or uptime span that a cost report's window cuts (it
// crosses the window's bounds or, grouped by day, a UTC midnight): the
// report counts only its part inside (pricing/usage_window.h).
struct UsageRow {
  std::string key;  // its group (allocations) or worker id (uptime)
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
  double gpus = 0;
  std::optional<pricing::Money> cost;  // as billed; none when unpriced
  std::string region;
  std::string gpu_type;
  std::string offering;
};

class UsageStore {
 public:
  // `db` outlives the store.
  explicit UsageStore(Database* db);

  // ---- Allocations (usage_store.cc) ------------------------------------
  absl::StatusOr<std::vector<AllocationRecord>> LoadOpenAllocations();
  // The closed allocations of the current attempts of ASSIGNED and RUNNING
  // jobs: the nodes that ended before a scheduler restart.
  absl::StatusOr<std::vector<EndedNode>> LoadEndedNodesOfActiveJobs();
  // Closes one node's allocation of an attempt (its processes are gone) at
  // `ended_at_ms`, with its cost (none when unpriced) in `currency` and,
  // when the worker reported the node EXITED, its exit code.
  absl::Status CloseAllocation(int64_t id, int32_t attempt, int32_t node_rank,
                               int64_t ended_at_ms,
                               const std::optional<pricing::Money>& cost,
                               const std::string& currency,
                               std::optional<int32_t> exit_code = std::nullopt);
  // Tells the store that allocation costs may have changed through another
  // writer (JobStore::CommitBatch closing allocations): TeamSpend reads
  // again. Call after the commit, and after a failed one too (it may have
  // committed).
  void CostsChanged();

  // ---- Per job and per team (usage_store.cc) ---------------------------
  // A job with no allocation has an empty usage.
  absl::StatusOr<JobUsage> GetJobUsage(int64_t id);
  // Jobs with no allocation are absent from the map.
  absl::StatusOr<std::map<int64_t, JobUsage>> GetJobsUsage(
      const std::vector<int64_t>& ids);
  // Sum of closed allocation costs of `team`'s jobs started since `since_ms`.
  // Answered from memory while no allocation was closed through this store
  // (or CostsChanged called) since the last read of the same (team,
  // since_ms): budgeted submits ask on every submit. A cost written by hand
  // in SQL shows after the next close or a restart.
  absl::StatusOr<pricing::Money> TeamSpend(const std::string& team,
                                           int64_t since_ms);

  // ---- Cost reports (usage_store_reports.cc) ---------------------------
  // What every closed, priced allocation cost, summed per team, user, GPU
  // type and currency: where a restarted scheduler's cost counter resumes.
  absl::StatusOr<std::vector<CostTotal>> ClosedCostTotals();
  // Closed allocations wholly inside [since, until) (and, by day, within
  // one UTC day), grouped by `group_by` (team, user, gpu-type, region, day,
  // job, array; InvalidArgument otherwise). The closed ones that overlap
  // the window otherwise are CrossingAllocations, one row each.
  absl::StatusOr<std::vector<CostGroup>> CostByGroup(
      const std::string& group_by, int64_t since_ms, int64_t until_ms);
  absl::StatusOr<std::vector<UsageRow>> CrossingAllocations(
      const std::string& group_by, int64_t since_ms, int64_t until_ms);
  // Closed uptime spans wholly inside [since, until): GPU-seconds and cost;
  // those that overlap it otherwise are CrossingUptime, one row each.
  absl::StatusOr<CostGroup> UptimeTotals(int64_t since_ms, int64_t until_ms);
  absl::StatusOr<std::vector<UsageRow>> CrossingUptime(int64_t since_ms,
                                                       int64_t until_ms);
  // Money the idle policy saved in [since, until), in the catalog
  // currency: for each uptime span an idle SHUTDOWN ended (and no
  // SHUTDOWN_CANCELLED undid), the event's saved_per_hour over the time the
  // worker stayed down, until it registered again or `until`.
  absl::StatusOr<pricing::Money> IdleShutdownSavings(int64_t since_ms,
                                                     int64_t until_ms);

  // ---- Worker uptime (usage_store_uptime.cc) ---------------------------
  // Returns the new span's id.
  absl::StatusOr<int64_t> OpenUptime(const UptimeRecord& record);
  // Closes span `id` (no-op when closed) with its cost (none: unpriced).
  absl::Status CloseUptime(int64_t id, int64_t ended_at_ms,
                           const std::optional<pricing::Money>& cost,
                           const std::string& currency);
  absl::StatusOr<std::vector<UptimeRecord>> LoadOpenUptime();

 private:
  // TeamSpend's query, without the cache.
  absl::StatusOr<pricing::Money> ReadTeamSpend(const std::string& team,
                                               int64_t since_ms);

  Database* const db_;
  // TeamSpend's answers, valid while `cost_generation_` is unchanged; a
  // close bumps it after its commit.
  struct SpendEntry {
    int64_t generation;
    pricing::Money spend;
  };
  absl::Mutex spend_mu_;
  int64_t cost_generation_ ABSL_GUARDED_BY(spend_mu_) = 0;
  std::map<std::pair<std::string, int64_t>, SpendEntry> spend_cache_
      ABSL_GUARDED_BY(spend_mu_);
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_USAGE_STORE_H_

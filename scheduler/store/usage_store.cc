// UsageStore: allocations, and usage per job and per team.
#include "scheduler/store/usage_store.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "scheduler/store/database.h"
#include "scheduler/store/store_internal.h"

namespace tupa::scheduler {
namespace {

using store_internal::MillisParam;
using store_internal::ParseIntArray;

// GPU-seconds of an allocation row, open ones counted up to now.
constexpr char kGpuSeconds[] =
    "a.gpus * extract(epoch FROM (COALESCE(a.ended_at, now()) - a.started_at))";

}  // namespace

UsageStore::UsageStore(Database* db) : db_(db) {}

absl::StatusOr<std::vector<AllocationRecord>>
UsageStore::LoadOpenAllocations() {
  return db_->RunTx<std::vector<AllocationRecord>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<AllocationRecord>> {
        pqxx::result r = w.exec(
            "SELECT job_id, attempt, worker_id, node_rank, "
            "device_indexes::text, gpu_share, master_port, region, gpu_type, "
            "gpus, (extract(epoch FROM started_at) * 1000)::bigint FROM "
            "allocations WHERE ended_at IS NULL ORDER BY job_id, node_rank");
        std::vector<AllocationRecord> out;
        for (const auto& row : r) {
          AllocationRecord a;
          a.job_id = row[0].as<int64_t>();
          a.attempt = row[1].as<int32_t>();
          a.worker_id = row[2].c_str();
          a.node_rank = row[3].as<int32_t>();
          a.device_indexes = ParseIntArray(row[4].c_str());
          a.gpu_share = row[5].as<double>();
          a.master_port = row[6].as<int32_t>();
          a.region = row[7].c_str();
          a.gpu_type = row[8].c_str();
          a.gpus = row[9].as<double>();
          a.started_at_ms = row[10].as<int64_t>();
          out.push_back(std::move(a));
        }
        return out;
      });
}

absl::StatusOr<std::vector<EndedNode>>
UsageStore::LoadEndedNodesOfActiveJobs() {
  return db_->RunTx<std::vector<EndedNode>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<EndedNode>> {
        pqxx::result r = w.exec(
            "SELECT a.job_id, a.node_rank, a.exit_code FROM allocations a "
            "JOIN jobs j ON j.id = a.job_id AND j.attempt = a.attempt "
            "WHERE j.finished_at IS NULL AND j.state IN ('ASSIGNED', "
            "'RUNNING') "
            "AND a.ended_at IS NOT NULL ORDER BY a.job_id, a.node_rank");
        std::vector<EndedNode> out;
        for (const auto& row : r) {
          EndedNode n;
          n.job_id = row[0].as<int64_t>();
          n.node_rank = row[1].as<int32_t>();
          if (!row[2].is_null()) n.exit_code = row[2].as<int32_t>();
          out.push_back(n);
        }
        return out;
      });
}

absl::Status UsageStore::CloseAllocation(
    int64_t id, int32_t attempt, int32_t node_rank, int64_t ended_at_ms,
    const std::optional<pricing::Money>& cost, const std::string& currency,
    std::optional<int32_t> exit_code) {
  const std::string exit_text =
      exit_code.has_value() ? absl::StrCat(*exit_code) : "";
  absl::Status closed =
      db_->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
           w.exec_params(
               absl::StrCat("UPDATE allocations SET ended_at = GREATEST("
                            "started_at, ",
                            store_internal::MillisParam(4),
                            "), cost = NULLIF($5, '')::numeric, currency = "
                            "NULLIF($6, ''), exit_code = NULLIF($7, '')::int "
                            "WHERE job_id = $1 AND attempt = $2 "
                            "AND node_rank = $3 AND ended_at IS NULL"),
               id, attempt, node_rank, ended_at_ms,
               store_internal::MoneyParam(cost), currency, exit_text);
           return true;
         })
          .status();
  // After the commit, and also after a failure (the commit may have
  // happened): TeamSpend's cached answers may be stale.
  CostsChanged();
  return closed;
}

void UsageStore::CostsChanged() {
  absl::MutexLock lock(&spend_mu_);
  ++cost_generation_;
}

absl::StatusOr<JobUsage> UsageStore::GetJobUsage(int64_t id) {
  ASSIGN_OR_RETURN(auto usage, GetJobsUsage({id}));
  return usage[id];
}

absl::StatusOr<std::map<int64_t, JobUsage>> UsageStore::GetJobsUsage(
    const std::vector<int64_t>& ids) {
  const std::string id_array = absl::StrCat("{", absl::StrJoin(ids, ","), "}");
  return db_->RunTx<std::map<int64_t, JobUsage>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::map<int64_t, JobUsage>> {
        static const std::string kSql = absl::StrCat(
            // One index probe per id (LATERAL), not `job_id = ANY(...)`
            // or a join: on a table the planner has no statistics for
            // yet (a new cluster's first minute) both scan it whole,
            // for every page of `tupa list` (5.7 against 1.0 ms for
            // 100 ids over 20,000 allocations).
            "SELECT t.id, COALESCE(u.gpu_seconds, 0), u.cost, "
            "COALESCE(u.currency, '') FROM unnest($1::bigint[]) AS t(id) "
            "CROSS JOIN LATERAL (SELECT count(*) AS n, sum(",
            kGpuSeconds,
            ") AS gpu_seconds, sum(a.cost)::text AS cost, "
            "max(a.currency) AS currency FROM allocations a "
            "WHERE a.job_id = t.id) u WHERE u.n > 0");
        pqxx::result r =
            store_internal::ExecPrepared(w, "tupa_jobs_usage", kSql, id_array);
        std::map<int64_t, JobUsage> out;
        for (const auto& row : r) {
          JobUsage& u = out[row[0].as<int64_t>()];
          u.gpu_seconds = row[1].as<double>();
          ASSIGN_OR_RETURN(
              u.closed_cost,
              store_internal::OptionalMoneyFromSql(
                  row[2], absl::StrCat("job ", row[0].c_str(), ": cost")));
          u.currency = row[3].c_str();
        }
        return out;
      });
}

absl::StatusOr<pricing::Money> UsageStore::TeamSpend(const std::string& team,
                                                     int64_t since_ms) {
  const std::pair<std::string, int64_t> key(team, since_ms);
  int64_t generation;
  {
    absl::MutexLock lock(&spend_mu_);
    generation = cost_generation_;
    auto it = spend_cache_.find(key);
    if (it != spend_cache_.end() && it->second.generation == generation)
      return it->second.spend;
  }
  // Read under the generation seen before the query: a close that commits
  // meanwhile bumps it, and this answer is not reused.
  absl::StatusOr<pricing::Money> spend = ReadTeamSpend(team, since_ms);
  if (spend.ok()) {
    absl::MutexLock lock(&spend_mu_);
    spend_cache_[key] = {generation, *spend};
  }
  return spend;
}

absl::StatusOr<pricing::Money> UsageStore::ReadTeamSpend(
    const std::string& team, int64_t since_ms) {
  return db_->RunTx<pricing::Money>(
      [&](pqxx::work& w) -> absl::StatusOr<pricing::Money> {
        pqxx::result r = w.exec_params(
            absl::StrCat("SELECT COALESCE(sum(a.cost), 0)::text FROM "
                         "allocations a JOIN jobs j ON j.id = a.job_id WHERE "
                         "j.team = $1 AND a.started_at >= ",
                         MillisParam(2)),
            team, since_ms);
        return store_internal::MoneyFromSql(
            r[0][0], absl::StrCat("team ", team, ": spend"));
      });
}

}  // namespace tupa::scheduler

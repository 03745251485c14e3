// JobStore: usage and cost queries (allocations and worker uptime).
#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/store_internal.h"

namespace tupa::scheduler {
namespace {

using store_internal::MillisParam;
using store_internal::RunTx;

// GPU-seconds of an allocation row, open ones counted up to now.
constexpr char kGpuSeconds[] =
    "a.gpus * extract(epoch FROM (COALESCE(a.ended_at, now()) - a.started_at))";

absl::StatusOr<std::string> GroupExpression(const std::string& group_by) {
  if (group_by.empty() || group_by == "team") return std::string("j.team");
  if (group_by == "user") return std::string("j.user_name");
  if (group_by == "gpu-type") return std::string("a.gpu_type");
  if (group_by == "region") return std::string("a.region");
  if (group_by == "day")
    return std::string(
        "to_char(a.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')");
  if (group_by == "job") return std::string("j.id::text");
  if (group_by == "array") return std::string("COALESCE(j.array_id::text, '')");
  return absl::InvalidArgumentError(
      "group_by: must be team, user, gpu-type, region, day, job or array");
}

}  // namespace

absl::StatusOr<JobUsage> JobStore::GetJobUsage(int64_t id) {
  ASSIGN_OR_RETURN(auto usage, GetJobsUsage({id}));
  return usage[id];
}

absl::StatusOr<std::map<int64_t, JobUsage>> JobStore::GetJobsUsage(
    const std::vector<int64_t>& ids) {
  const std::string id_array = absl::StrCat("{", absl::StrJoin(ids, ","), "}");
  return RunTx<std::map<int64_t, JobUsage>>(
      Acquire(),
      [&](pqxx::work& w) -> absl::StatusOr<std::map<int64_t, JobUsage>> {
        pqxx::result r = w.exec_params(
            absl::StrCat(
                "SELECT a.job_id, COALESCE(sum(", kGpuSeconds,
                "), 0), COALESCE(sum(a.cost)::text, ''), "
                "COALESCE(max(a.currency), '') FROM allocations a "
                "WHERE a.job_id = ANY($1::bigint[]) GROUP BY a.job_id"),
            id_array);
        std::map<int64_t, JobUsage> out;
        for (const auto& row : r) {
          JobUsage& u = out[row[0].as<int64_t>()];
          u.gpu_seconds = row[1].as<double>();
          u.closed_cost = row[2].c_str();
          u.currency = row[3].c_str();
        }
        return out;
      });
}

absl::StatusOr<std::string> JobStore::TeamSpend(const std::string& team,
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
  absl::StatusOr<std::string> spend = ReadTeamSpend(team, since_ms);
  if (spend.ok()) {
    absl::MutexLock lock(&spend_mu_);
    spend_cache_[key] = {generation, *spend};
  }
  return spend;
}

absl::StatusOr<std::string> JobStore::ReadTeamSpend(const std::string& team,
                                                    int64_t since_ms) {
  return RunTx<std::string>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::string> {
        pqxx::result r = w.exec_params(
            absl::StrCat("SELECT COALESCE(sum(a.cost), 0)::text FROM "
                         "allocations a JOIN jobs j ON j.id = a.job_id WHERE "
                         "j.team = $1 AND a.started_at >= ",
                         MillisParam(2)),
            team, since_ms);
        return std::string(r[0][0].c_str());
      });
}

namespace {

std::string MillisOf(const char* column) {
  return absl::StrCat("(extract(epoch FROM ", column, ") * 1000)::bigint");
}

// Whether an allocation (alias a) or uptime (alias u) row lies wholly in
// [$1, $2) and, grouped by day, within one UTC day: such rows are summed in
// SQL; the others that overlap the window are clipped by the caller.
std::string Inside(const char* alias, bool by_day) {
  std::string sql = absl::StrCat(alias, ".ended_at IS NOT NULL AND ", alias,
                                 ".started_at >= ", MillisParam(1), " AND ",
                                 alias, ".ended_at <= ", MillisParam(2));
  if (by_day) {
    absl::StrAppend(&sql, " AND (", alias,
                    ".started_at AT TIME ZONE 'UTC')::date = ", "(", alias,
                    ".ended_at AT TIME ZONE 'UTC')::date");
  }
  return sql;
}

std::string Overlaps(const char* alias) {
  return absl::StrCat(alias, ".ended_at IS NOT NULL AND ", alias,
                      ".started_at < ", MillisParam(2), " AND ", alias,
                      ".ended_at > ", MillisParam(1));
}

std::vector<UsageRow> ReadUsageRows(const pqxx::result& r) {
  std::vector<UsageRow> out;
  for (const auto& row : r) {
    UsageRow u;
    u.key = row[0].is_null() ? "" : row[0].c_str();
    u.started_ms = row[1].as<int64_t>();
    u.ended_ms = row[2].as<int64_t>();
    u.gpus = row[3].as<double>();
    u.cost = row[4].is_null() ? "" : row[4].c_str();
    u.region = row[5].c_str();
    u.gpu_type = row[6].c_str();
    u.offering = row[7].c_str();
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<CostTotal>> JobStore::ClosedCostTotals() {
  return RunTx<std::vector<CostTotal>>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::vector<CostTotal>> {
        pqxx::result r = w.exec(
            "SELECT j.team, j.user_name, a.gpu_type, a.currency, "
            "sum(a.cost)::text FROM allocations a JOIN jobs j ON j.id = "
            "a.job_id WHERE a.ended_at IS NOT NULL AND a.cost IS NOT NULL "
            "GROUP BY 1, 2, 3, 4");
        std::vector<CostTotal> out;
        for (const auto& row : r) {
          CostTotal t;
          t.team = row[0].c_str();
          t.user = row[1].c_str();
          t.gpu_type = row[2].c_str();
          t.currency = row[3].is_null() ? "" : row[3].c_str();
          t.cost = row[4].c_str();
          out.push_back(std::move(t));
        }
        return out;
      });
}

absl::StatusOr<std::vector<CostGroup>> JobStore::CostByGroup(
    const std::string& group_by, int64_t since_ms, int64_t until_ms) {
  ASSIGN_OR_RETURN(std::string key, GroupExpression(group_by));
  const bool by_day = group_by == "day";
  return RunTx<std::vector<CostGroup>>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::vector<CostGroup>> {
        pqxx::result r = w.exec_params(
            absl::StrCat("SELECT ", key, " AS k, sum(", kGpuSeconds,
                         "), COALESCE(sum(a.cost), 0)::text FROM allocations "
                         "a JOIN jobs j ON j.id = a.job_id WHERE ",
                         Inside("a", by_day),
                         " GROUP BY k ORDER BY sum(a.cost) DESC NULLS LAST, k"),
            since_ms, until_ms);
        std::vector<CostGroup> out;
        for (const auto& row : r) {
          CostGroup g;
          g.key = row[0].is_null() ? "" : row[0].c_str();
          g.gpu_seconds = row[1].as<double>();
          g.cost = row[2].c_str();
          out.push_back(std::move(g));
        }
        return out;
      });
}

absl::StatusOr<std::vector<UsageRow>> JobStore::CrossingAllocations(
    const std::string& group_by, int64_t since_ms, int64_t until_ms) {
  ASSIGN_OR_RETURN(std::string key, GroupExpression(group_by));
  const bool by_day = group_by == "day";
  return RunTx<std::vector<UsageRow>>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::vector<UsageRow>> {
        return ReadUsageRows(w.exec_params(
            absl::StrCat("SELECT ", key, ", ", MillisOf("a.started_at"), ", ",
                         MillisOf("a.ended_at"),
                         ", a.gpus, a.cost::text, a.region, a.gpu_type, "
                         "COALESCE(wk.offering, '') FROM allocations a "
                         "JOIN jobs j ON j.id = a.job_id "
                         "LEFT JOIN workers wk ON wk.id = a.worker_id WHERE ",
                         Overlaps("a"), " AND NOT (", Inside("a", by_day), ")"),
            since_ms, until_ms));
      });
}

absl::StatusOr<std::vector<UsageRow>> JobStore::CrossingUptime(
    int64_t since_ms, int64_t until_ms) {
  return RunTx<std::vector<UsageRow>>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::vector<UsageRow>> {
        return ReadUsageRows(w.exec_params(
            absl::StrCat("SELECT u.worker_id, ", MillisOf("u.started_at"), ", ",
                         MillisOf("u.ended_at"),
                         ", u.gpus, u.cost::text, u.region, u.gpu_type, "
                         "u.offering FROM worker_uptime u WHERE ",
                         Overlaps("u"), " AND NOT (", Inside("u", false), ")"),
            since_ms, until_ms));
      });
}

absl::StatusOr<CostGroup> JobStore::UptimeTotals(int64_t since_ms,
                                                 int64_t until_ms) {
  return RunTx<CostGroup>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<CostGroup> {
        pqxx::result r = w.exec_params(
            absl::StrCat("SELECT COALESCE(sum(u.gpus * extract(epoch FROM "
                         "(u.ended_at - u.started_at))), 0), "
                         "COALESCE(sum(u.cost), 0)::text FROM worker_uptime u "
                         "WHERE ",
                         Inside("u", false)),
            since_ms, until_ms);
        CostGroup g;
        g.key = "uptime";
        g.gpu_seconds = r[0][0].as<double>();
        g.cost = r[0][1].c_str();
        return g;
      });
}

// A span of worker uptime that an idle shutdown ended: it closed after a
// SHUTDOWN event inside it that no SHUTDOWN_CANCELLED of the same worker
// followed before the close. The worker is then down from the close until
// its next span starts (or until `until`), saving the event's
// saved_per_hour over that time. Only the part inside [since, until)
// counts.
constexpr char kIdleShutdownSavings[] = R"sql(
WITH down AS (
  SELECT u.ended_at AS down_at,
         (SELECT min(n.started_at) FROM worker_uptime n
           WHERE n.worker_id = u.worker_id AND n.started_at >= u.ended_at)
           AS back_at,
         (SELECT e.saved_per_hour FROM cluster_events e
           WHERE e.kind = 'SHUTDOWN' AND e.worker_id = u.worker_id
             AND e.at >= u.started_at AND e.at <= u.ended_at
             AND NOT EXISTS (
               SELECT 1 FROM cluster_events c
                WHERE c.kind = 'SHUTDOWN_CANCELLED'
                  AND c.worker_id = u.worker_id
                  AND c.at > e.at AND c.at <= u.ended_at)
           ORDER BY e.at DESC LIMIT 1) AS per_hour
    FROM worker_uptime u
   WHERE u.ended_at IS NOT NULL AND u.ended_at < $until)
SELECT COALESCE(sum(per_hour * extract(epoch FROM
         (least(COALESCE(back_at, $until), $until) - greatest(down_at, $since)))
         / 3600), 0)::numeric(20, 6)::text
  FROM down
 WHERE per_hour IS NOT NULL AND COALESCE(back_at, 'infinity') > $since
)sql";

absl::StatusOr<std::string> JobStore::IdleShutdownSavings(int64_t since_ms,
                                                          int64_t until_ms) {
  std::string sql = kIdleShutdownSavings;
  sql = absl::StrReplaceAll(
      sql, {{"$since", MillisParam(1)}, {"$until", MillisParam(2)}});
  return RunTx<std::string>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::string> {
        pqxx::result r = w.exec_params(sql, since_ms, until_ms);
        return std::string(r[0][0].c_str());
      });
}

absl::StatusOr<int64_t> JobStore::OpenUptime(const UptimeRecord& u) {
  return RunTx<int64_t>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<int64_t> {
        pqxx::result r = w.exec_params(
            absl::StrCat(
                "INSERT INTO worker_uptime (worker_id, region, gpu_type, "
                "offering, gpus, started_at) VALUES ($1, $2, $3, $4, $5, ",
                MillisParam(6), ") RETURNING id"),
            u.worker_id, u.region, u.gpu_type, u.offering, u.gpus,
            u.started_at_ms);
        return r[0][0].as<int64_t>();
      });
}

absl::Status JobStore::CloseUptime(int64_t id, int64_t ended_at_ms,
                                   const std::string& cost,
                                   const std::string& currency) {
  return RunTx<bool>(
             Acquire(),
             [&](pqxx::work& w) -> absl::StatusOr<bool> {
               w.exec_params(
                   absl::StrCat(
                       "UPDATE worker_uptime SET ended_at = GREATEST("
                       "started_at, ",
                       MillisParam(2),
                       "), cost = NULLIF($3, '')::numeric, currency = "
                       "NULLIF($4, '') WHERE id = $1 AND ended_at IS NULL"),
                   id, ended_at_ms, cost, currency);
               return true;
             })
      .status();
}

absl::StatusOr<std::vector<UptimeRecord>> JobStore::LoadOpenUptime() {
  return RunTx<std::vector<UptimeRecord>>(
      Acquire(),
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<UptimeRecord>> {
        pqxx::result r = w.exec(
            "SELECT id, worker_id, region, gpu_type, offering, gpus, "
            "(extract(epoch FROM started_at) * 1000)::bigint FROM "
            "worker_uptime WHERE ended_at IS NULL");
        std::vector<UptimeRecord> out;
        for (const auto& row : r) {
          UptimeRecord u;
          u.id = row[0].as<int64_t>();
          u.worker_id = row[1].c_str();
          u.region = row[2].c_str();
          u.gpu_type = row[3].c_str();
          u.offering = row[4].c_str();
          u.gpus = row[5].as<double>();
          u.started_at_ms = row[6].as<int64_t>();
          out.push_back(std::move(u));
        }
        return out;
      });
}

}  // namespace tupa::scheduler

namespace tupa::scheduler {

absl::Status JobStore::RecordClusterEvent(const std::string& kind,
                                          const std::string& worker_id,
                                          int64_t job_id,
                                          const std::string& reason,
                                          double idle_seconds,
                                          const std::string& saved_per_hour) {
  return RunTx<bool>(
             Acquire(),
             [&](pqxx::work& w) -> absl::StatusOr<bool> {
               w.exec_params(
                   "INSERT INTO cluster_events (kind, worker_id, job_id, "
                   "reason, "
                   "idle_seconds, saved_per_hour) VALUES ($1, NULLIF($2, ''), "
                   "NULLIF($3, 0), $4, $5, NULLIF($6, '')::numeric)",
                   kind, worker_id, job_id, reason, idle_seconds,
                   saved_per_hour);
               return true;
             })
      .status();
}

absl::StatusOr<std::map<std::string, std::string>>
JobStore::LastShutdownReasons() {
  return RunTx<std::map<std::string, std::string>>(
      Acquire(),
      [&](pqxx::work& w) -> absl::StatusOr<std::map<std::string, std::string>> {
        pqxx::result r = w.exec(
            "SELECT DISTINCT ON (worker_id) worker_id, reason FROM "
            "cluster_events WHERE kind = 'SHUTDOWN' AND worker_id IS NOT NULL "
            "ORDER BY worker_id, id DESC");
        std::map<std::string, std::string> out;
        for (const auto& row : r) out[row[0].c_str()] = row[1].c_str();
        return out;
      });
}

}  // namespace tupa::scheduler

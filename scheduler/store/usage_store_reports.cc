// UsageStore: cost reports (closed allocations and uptime over a window).
#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"
#include "scheduler/store/database.h"
#include "scheduler/store/store_internal.h"
#include "scheduler/store/usage_store.h"

namespace tupa::scheduler {
namespace {

using store_internal::MillisParam;

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

absl::StatusOr<std::vector<UsageRow>> ReadUsageRows(const pqxx::result& r) {
  std::vector<UsageRow> out;
  for (const auto& row : r) {
    UsageRow u;
    u.key = row[0].is_null() ? "" : row[0].c_str();
    u.started_ms = row[1].as<int64_t>();
    u.ended_ms = row[2].as<int64_t>();
    u.gpus = row[3].as<double>();
    ASSIGN_OR_RETURN(u.cost, store_internal::OptionalMoneyFromSql(
                                 row[4], absl::StrCat(u.key, ": cost")));
    u.region = row[5].c_str();
    u.gpu_type = row[6].c_str();
    u.offering = row[7].c_str();
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<CostTotal>> UsageStore::ClosedCostTotals() {
  return db_->RunTx<std::vector<CostTotal>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<CostTotal>> {
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
          ASSIGN_OR_RETURN(t.cost,
                           store_internal::MoneyFromSql(
                               row[4], "closed cost total of team " + t.team));
          out.push_back(std::move(t));
        }
        return out;
      });
}

absl::StatusOr<std::vector<CostGroup>> UsageStore::CostByGroup(
    const std::string& group_by, int64_t since_ms, int64_t until_ms) {
  ASSIGN_OR_RETURN(std::string key, GroupExpression(group_by));
  const bool by_day = group_by == "day";
  return db_->RunTx<std::vector<CostGroup>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<CostGroup>> {
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
          ASSIGN_OR_RETURN(g.cost, store_internal::MoneyFromSql(
                                       row[2], "cost of group " + g.key));
          out.push_back(std::move(g));
        }
        return out;
      });
}

absl::StatusOr<std::vector<UsageRow>> UsageStore::CrossingAllocations(
    const std::string& group_by, int64_t since_ms, int64_t until_ms) {
  ASSIGN_OR_RETURN(std::string key, GroupExpression(group_by));
  const bool by_day = group_by == "day";
  return db_->RunTx<std::vector<UsageRow>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<UsageRow>> {
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

absl::StatusOr<std::vector<UsageRow>> UsageStore::CrossingUptime(
    int64_t since_ms, int64_t until_ms) {
  return db_->RunTx<std::vector<UsageRow>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<UsageRow>> {
        return ReadUsageRows(w.exec_params(
            absl::StrCat("SELECT u.worker_id, ", MillisOf("u.started_at"), ", ",
                         MillisOf("u.ended_at"),
                         ", u.gpus, u.cost::text, u.region, u.gpu_type, "
                         "u.offering FROM worker_uptime u WHERE ",
                         Overlaps("u"), " AND NOT (", Inside("u", false), ")"),
            since_ms, until_ms));
      });
}

absl::StatusOr<CostGroup> UsageStore::UptimeTotals(int64_t since_ms,
                                                   int64_t until_ms) {
  return db_->RunTx<CostGroup>([&](pqxx::work& w) -> absl::StatusOr<CostGroup> {
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
    ASSIGN_OR_RETURN(g.cost,
                     store_internal::MoneyFromSql(r[0][1], "uptime cost"));
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

absl::StatusOr<pricing::Money> UsageStore::IdleShutdownSavings(
    int64_t since_ms, int64_t until_ms) {
  std::string sql = kIdleShutdownSavings;
  sql = absl::StrReplaceAll(
      sql, {{"$since", MillisParam(1)}, {"$until", MillisParam(2)}});
  return db_->RunTx<pricing::Money>(
      [&](pqxx::work& w) -> absl::StatusOr<pricing::Money> {
        pqxx::result r = w.exec_params(sql, since_ms, until_ms);
        return store_internal::MoneyFromSql(r[0][0], "idle shutdown savings");
      });
}

}  // namespace tupa::scheduler

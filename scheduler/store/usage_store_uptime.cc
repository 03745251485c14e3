// UsageStore: worker uptime spans.
#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "scheduler/store/database.h"
#include "scheduler/store/store_internal.h"
#include "scheduler/store/usage_store.h"

namespace tupa::scheduler {
namespace {

using store_internal::MillisParam;

}  // namespace

absl::StatusOr<int64_t> UsageStore::OpenUptime(const UptimeRecord& u) {
  return db_->RunTx<int64_t>([&](pqxx::work& w) -> absl::StatusOr<int64_t> {
    pqxx::result r = w.exec_params(
        absl::StrCat("INSERT INTO worker_uptime (worker_id, region, gpu_type, "
                     "offering, gpus, started_at) VALUES ($1, $2, $3, $4, $5, ",
                     MillisParam(6), ") RETURNING id"),
        u.worker_id, u.region, u.gpu_type, u.offering, u.gpus, u.started_at_ms);
    return r[0][0].as<int64_t>();
  });
}

absl::Status UsageStore::CloseUptime(int64_t id, int64_t ended_at_ms,
                                     const std::optional<pricing::Money>& cost,
                                     const std::string& currency) {
  return db_
      ->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
        w.exec_params(
            absl::StrCat("UPDATE worker_uptime SET ended_at = GREATEST("
                         "started_at, ",
                         MillisParam(2),
                         "), cost = NULLIF($3, '')::numeric, currency = "
                         "NULLIF($4, '') WHERE id = $1 AND ended_at IS NULL"),
            id, ended_at_ms, store_internal::MoneyParam(cost), currency);
        return true;
      })
      .status();
}

absl::StatusOr<std::vector<UptimeRecord>> UsageStore::LoadOpenUptime() {
  return db_->RunTx<std::vector<UptimeRecord>>(
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

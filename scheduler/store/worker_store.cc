// WorkerStore: workers and cluster events.
#include "scheduler/store/worker_store.h"

#include <google/protobuf/util/json_util.h>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "scheduler/store/database.h"
#include "scheduler/store/store_internal.h"

namespace tupa::scheduler {

using google::protobuf::util::JsonStringToMessage;
using store_internal::FromMillis;
using store_internal::ToJson;

WorkerStore::WorkerStore(Database* db) : db_(db) {}

namespace {

std::string WorkerStateName(v1::WorkerState s) {
  switch (s) {
    case v1::WORKER_STATE_DRAINING:
      return "DRAINING";
    case v1::WORKER_STATE_LOST:
      return "LOST";
    case v1::WORKER_STATE_OFFLINE:
      return "OFFLINE";
    default:
      return "UP";
  }
}

v1::WorkerState WorkerStateFromName(const std::string& s) {
  if (s == "DRAINING") return v1::WORKER_STATE_DRAINING;
  if (s == "LOST") return v1::WORKER_STATE_LOST;
  if (s == "OFFLINE") return v1::WORKER_STATE_OFFLINE;
  return v1::WORKER_STATE_UP;
}

}  // namespace

absl::Status WorkerStore::UpsertWorker(const v1::Worker& worker) {
  v1::Worker devices_only;
  *devices_only.mutable_devices() = worker.devices();
  *devices_only.mutable_labels() = worker.labels();
  const std::string json = ToJson(devices_only);
  return db_
      ->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
        w.exec_params(
            "INSERT INTO workers (id, region, instance_id, labels, "
            "devices, "
            "cpu, memory_bytes, address, state, offering) VALUES ($1, "
            "$2, "
            "$3, COALESCE(($4::jsonb)->'labels', '{}'), "
            "COALESCE(($4::jsonb)->'devices', '[]'), $5, $6, $7, $8, "
            "$9) "
            "ON CONFLICT (id) DO UPDATE SET region = EXCLUDED.region, "
            "instance_id = EXCLUDED.instance_id, labels = "
            "EXCLUDED.labels, "
            "devices = EXCLUDED.devices, cpu = EXCLUDED.cpu, "
            "memory_bytes = "
            "EXCLUDED.memory_bytes, address = EXCLUDED.address, state = "
            "EXCLUDED.state, offering = EXCLUDED.offering, last_seen = "
            "now()",
            worker.id(), worker.region(), worker.instance_id(), json,
            worker.cpu(), worker.memory_bytes(), worker.address(),
            WorkerStateName(worker.state()), worker.offering());
        return true;
      })
      .status();
}

absl::Status WorkerStore::SetWorkerState(const std::string& id,
                                         v1::WorkerState state) {
  return db_
      ->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
        w.exec_params(
            "UPDATE workers SET state = $2, last_seen = now() "
            "WHERE id = $1",
            id, WorkerStateName(state));
        return true;
      })
      .status();
}

absl::Status WorkerStore::SetWorkerDrain(const std::string& id, bool drained) {
  return db_
      ->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
        pqxx::result r = w.exec_params(
            "UPDATE workers SET drain_requested = $2, state = CASE "
            "WHEN $2 AND state = 'UP' THEN 'DRAINING' "
            "WHEN NOT $2 AND state = 'DRAINING' THEN 'UP' "
            "ELSE state END WHERE id = $1",
            id, drained);
        if (r.affected_rows() == 0)
          return absl::NotFoundError(absl::StrCat("worker ", id, " not found"));
        return true;
      })
      .status();
}

absl::StatusOr<std::vector<v1::Worker>> WorkerStore::ListWorkers() {
  return db_->RunTx<std::vector<v1::Worker>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<v1::Worker>> {
        pqxx::result r = w.exec(
            "SELECT id, region, instance_id, jsonb_build_object('labels', "
            "labels, 'devices', devices)::text, cpu, memory_bytes, address, "
            "state, (extract(epoch FROM last_seen) * 1000)::bigint, offering, "
            "drain_requested FROM workers ORDER BY id");
        std::vector<v1::Worker> out;
        for (const auto& row : r) {
          v1::Worker wk;
          auto parsed = JsonStringToMessage(row[3].c_str(), &wk);
          if (!parsed.ok())
            return absl::DataLossError(
                absl::StrCat("worker ", row[0].c_str(),
                             ": stored labels/devices cannot be decoded (",
                             parsed.ToString(), ")"));
          wk.set_id(row[0].c_str());
          wk.set_region(row[1].c_str());
          wk.set_instance_id(row[2].c_str());
          wk.set_cpu(row[4].as<double>());
          wk.set_memory_bytes(row[5].as<int64_t>());
          wk.set_address(row[6].c_str());
          wk.set_state(WorkerStateFromName(row[7].c_str()));
          *wk.mutable_last_seen() = FromMillis(row[8].as<int64_t>());
          wk.set_offering(row[9].c_str());
          wk.set_drain_requested(row[10].as<bool>());
          out.push_back(std::move(wk));
        }
        return out;
      });
}

absl::Status WorkerStore::RecordClusterEvent(
    const std::string& kind, const std::string& worker_id, int64_t job_id,
    const std::string& reason, double idle_seconds,
    const std::optional<pricing::Money>& saved_per_hour) {
  return db_
      ->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
        w.exec_params(
            "INSERT INTO cluster_events (kind, worker_id, job_id, "
            "reason, "
            "idle_seconds, saved_per_hour) VALUES ($1, NULLIF($2, ''), "
            "NULLIF($3, 0), $4, $5, NULLIF($6, '')::numeric)",
            kind, worker_id, job_id, reason, idle_seconds,
            store_internal::MoneyParam(saved_per_hour));
        return true;
      })
      .status();
}

absl::StatusOr<std::map<std::string, std::string>>
WorkerStore::LastShutdownReasons() {
  return db_->RunTx<std::map<std::string, std::string>>(
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

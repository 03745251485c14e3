// WorkerStore: the workers of the cluster (registration, state, operator
// drains) and the cluster events about them (idle shutdowns, scale-ups,
// zombies, hook results).
//
// Every method is one transaction on the shared Database (database.h);
// errors follow pg_errors.h. A worker row whose labels or devices cannot be
// decoded is DataLoss naming the worker. Thread-safe.
#ifndef TUPA_SCHEDULER_STORE_WORKER_STORE_H_
#define TUPA_SCHEDULER_STORE_WORKER_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "scheduler/pricing/money.h"
#include "tupa/v1/cluster.pb.h"

namespace tupa::scheduler {

class Database;  // database.h

class WorkerStore {
 public:
  // `db` outlives the store.
  explicit WorkerStore(Database* db);

  // Inserts the worker or replaces its row (devices, labels, address,
  // state, ...); last_seen becomes now.
  absl::Status UpsertWorker(const v1::Worker& worker);
  absl::Status SetWorkerState(const std::string& id, v1::WorkerState state);
  // An operator's drain (or its undoing): kept apart from the state, which
  // a loss or a stop overwrites. Also moves an UP worker to DRAINING, or a
  // DRAINING one back to UP. NotFound for an unknown worker.
  absl::Status SetWorkerDrain(const std::string& id, bool drained);
  // Every worker ever registered, by id.
  absl::StatusOr<std::vector<v1::Worker>> ListWorkers();

  // Cluster events; empty worker_id / job_id 0 are stored as NULL, and so
  // is a missing saved_per_hour.
  absl::Status RecordClusterEvent(
      const std::string& kind, const std::string& worker_id, int64_t job_id,
      const std::string& reason, double idle_seconds,
      const std::optional<pricing::Money>& saved_per_hour);
  // The reason of each worker's last SHUTDOWN event (workers without one
  // are absent).
  absl::StatusOr<std::map<std::string, std::string>> LastShutdownReasons();

 private:
  Database* const db_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_WORKER_STORE_H_

// Stores: the Database and the four domain stores over it, owned together
// (the scheduler's wiring). Opening it connects and applies the schema
// migrations (Database::Open). The stores live as long as this object.
#ifndef TUPA_SCHEDULER_STORE_STORES_H_
#define TUPA_SCHEDULER_STORE_STORES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/store/database.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/token_store.h"
#include "scheduler/store/usage_store.h"
#include "scheduler/store/worker_store.h"

namespace tupa::scheduler {

class Stores {
 public:
  // Database::Open(url, pool_size), then the stores over it.
  static absl::StatusOr<std::unique_ptr<Stores>> Open(const std::string& url,
                                                      int pool_size = 4);
  explicit Stores(std::unique_ptr<Database> db);
  Stores(const Stores&) = delete;
  Stores& operator=(const Stores&) = delete;

  Database& db() { return *db_; }
  JobStore& jobs() { return jobs_; }
  UsageStore& usage() { return usage_; }
  WorkerStore& workers() { return workers_; }
  TokenStore& tokens() { return tokens_; }

 private:
  std::unique_ptr<Database> db_;
  UsageStore usage_;  // before jobs_, which notifies it
  JobStore jobs_;
  WorkerStore workers_;
  TokenStore tokens_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_STORES_H_

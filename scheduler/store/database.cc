#include "scheduler/store/database.h"

#include <algorithm>

#include "common/status_macros.h"

namespace tupa::scheduler {

Database::Database(std::string url, int pool_size)
    : url_(std::move(url)), pool_size_(std::max(1, pool_size)) {}
Database::~Database() = default;

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& url,
                                                         int pool_size) {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Connect(url, pool_size));
  RETURN_IF_ERROR(db->Migrate());
  return db;
}

absl::StatusOr<std::unique_ptr<Database>> Database::Connect(
    const std::string& url, int pool_size) {
  auto db = std::unique_ptr<Database>(new Database(url, pool_size));
  // Prove the server is reachable now; further connections open lazily.
  ASSIGN_OR_RETURN(auto lease, db->Acquire());
  return db;
}

absl::StatusOr<std::unique_ptr<Database::Lease>> Database::Acquire() {
  std::unique_ptr<pqxx::connection> conn;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](Database* d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(d->mu_) {
          return !d->idle_.empty() || d->outstanding_ < d->pool_size_;
        },
        this));
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
    ++outstanding_;
  }
  if (conn == nullptr || !conn->is_open()) {
    try {
      conn = std::make_unique<pqxx::connection>(url_);
      // The write path's statements are prepared (store_internal::
      // ExecPrepared) but planned for each batch: a generic plan, cached
      // per connection, is made for an array of unknown length and for the
      // table sizes of that moment (a fresh cluster's first minute has no
      // statistics), and scanned every open allocation for each close.
      pqxx::nontransaction(*conn).exec(
          "SET plan_cache_mode = force_custom_plan");
    } catch (...) {
      absl::MutexLock lock(&mu_);
      --outstanding_;
      return StatusFromCurrentException();
    }
  }
  return std::make_unique<Lease>(this, std::move(conn));
}

void Database::Release(std::unique_ptr<pqxx::connection> conn) {
  absl::MutexLock lock(&mu_);
  --outstanding_;
  if (conn != nullptr && conn->is_open()) idle_.push_back(std::move(conn));
}

}  // namespace tupa::scheduler

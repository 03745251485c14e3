// Database: the one PostgreSQL connection pool (libpqxx) that every domain
// store (JobStore, UsageStore, WorkerStore, TokenStore) shares, and the
// transaction helpers they run their SQL through.
//
// Open() connects and applies the embedded schema migrations, so a Database
// that exists is at the current schema. RunTx runs a body in one
// transaction and commits when it returns OK; RunAutocommit runs it in
// autocommit mode. Both map libpqxx exceptions to absl::Status as
// pg_errors.h describes (Unavailable: retry the call; Aborted: retry the
// transaction) and do not retry by themselves.
//
// Thread-safe: at most `pool_size` connections, opened lazily and reopened
// when broken; a caller waits while all are borrowed.
#ifndef TUPA_SCHEDULER_STORE_DATABASE_H_
#define TUPA_SCHEDULER_STORE_DATABASE_H_

#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/store/pg_errors.h"

namespace tupa::scheduler {

class Database {
 public:
  // Connect, then Migrate. Unavailable when the server cannot be reached.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& url,
                                                        int pool_size = 4);
  // Connects (proving the server reachable) without migrating.
  static absl::StatusOr<std::unique_ptr<Database>> Connect(
      const std::string& url, int pool_size = 4);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Applies the embedded migrations that are not yet applied, in order,
  // under an advisory lock (several schedulers may start at once).
  // Idempotent.
  absl::Status Migrate();

  // Runs `body(pqxx::work&) -> absl::StatusOr<T>` in one transaction on a
  // borrowed connection and commits when it returns OK (an error status
  // rolls back).
  template <typename T, typename Body>
  absl::StatusOr<T> RunTx(Body body);

  // Runs `body(pqxx::nontransaction&) -> absl::StatusOr<T>` in autocommit
  // mode: every statement commits on its own, atomically (one round trip,
  // no BEGIN or COMMIT). For bodies whose writes are one statement.
  template <typename T, typename Body>
  absl::StatusOr<T> RunAutocommit(Body body);

 private:
  // A borrowed connection; returned to the pool unless it broke.
  class Lease {
   public:
    Lease(Database* db, std::unique_ptr<pqxx::connection> conn)
        : db_(db), conn_(std::move(conn)) {}
    ~Lease() { db_->Release(std::move(conn_)); }
    pqxx::connection& conn() { return *conn_; }

   private:
    Database* db_;
    std::unique_ptr<pqxx::connection> conn_;
  };

  Database(std::string url, int pool_size);
  // Borrows a connection (reconnecting it when broken) for one transaction.
  absl::StatusOr<std::unique_ptr<Lease>> Acquire();
  void Release(std::unique_ptr<pqxx::connection> conn);

  const std::string url_;
  const int pool_size_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
};

template <typename T, typename Body>
absl::StatusOr<T> Database::RunTx(Body body) {
  absl::StatusOr<std::unique_ptr<Lease>> lease = Acquire();
  if (!lease.ok()) return lease.status();
  try {
    pqxx::work w((*lease)->conn());
    absl::StatusOr<T> result = body(w);
    if (result.ok()) w.commit();
    return result;
  } catch (...) {
    return StatusFromCurrentException();
  }
}

template <typename T, typename Body>
absl::StatusOr<T> Database::RunAutocommit(Body body) {
  absl::StatusOr<std::unique_ptr<Lease>> lease = Acquire();
  if (!lease.ok()) return lease.status();
  try {
    pqxx::nontransaction w((*lease)->conn());
    return body(w);
  } catch (...) {
    return StatusFromCurrentException();
  }
}

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_DATABASE_H_

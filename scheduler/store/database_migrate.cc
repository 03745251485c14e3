// Database::Migrate: the embedded schema migrations (migrations.h).
#include <set>

#include "scheduler/store/database.h"
#include "scheduler/store/migrations.h"

namespace tupa::scheduler {

absl::Status Database::Migrate() {
  return RunTx<bool>([](pqxx::work& w) -> absl::StatusOr<bool> {
           // Serialise concurrent schedulers starting against one database.
           w.exec("SELECT pg_advisory_xact_lock(7475706100)");
           w.exec(
               "CREATE TABLE IF NOT EXISTS schema_migrations ("
               "  version INT PRIMARY KEY, name TEXT NOT NULL,"
               "  applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
           pqxx::result applied =
               w.exec("SELECT version FROM schema_migrations");
           std::set<int> done;
           for (const auto& row : applied) done.insert(row[0].as<int>());
           for (const Migration& m : AllMigrations()) {
             if (done.count(m.version)) continue;
             w.exec(m.sql);
             w.exec_params(
                 "INSERT INTO schema_migrations (version, name) VALUES ($1, "
                 "$2)",
                 m.version, m.name);
           }
           return true;
         })
      .status();
}

}  // namespace tupa::scheduler

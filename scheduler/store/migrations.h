// Schema migrations, embedded in the binary at build time from
// migrations/NNNN_verb_object.sql. Applied in order at scheduler start, each
// in its own transaction, recorded in schema_migrations. An applied file is
// never edited: schema changes are new numbered files.
#ifndef TUPA_SCHEDULER_STORE_MIGRATIONS_H_
#define TUPA_SCHEDULER_STORE_MIGRATIONS_H_

#include <string>
#include <vector>

namespace tupa::scheduler {

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

// All migrations, sorted by version (generated file).
const std::vector<Migration>& AllMigrations();

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_MIGRATIONS_H_

// Database: connecting and migrating, against a real PostgreSQL.
#include "scheduler/store/database.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>

#include "absl/strings/str_cat.h"
#include "scheduler/store/migrations.h"
#include "scheduler/store/store_test_fixture.h"

namespace tupa::scheduler {
namespace {

class DatabaseTest : public StoreTest {};

TEST_F(DatabaseTest, MigrateIsIdempotent) {
  EXPECT_TRUE(stores_->db().Migrate().ok());
  pqxx::connection c(url_);
  pqxx::work w(c);
  EXPECT_EQ(w.exec("SELECT count(*) FROM schema_migrations")[0][0].as<int>(),
            static_cast<int>(AllMigrations().size()));
}

// A job's state changes before its end are heap-only updates only while no
// index of `jobs` (key or predicate) reads a column they set
// (0017_job_state_changes_heap_only.sql).
TEST_F(DatabaseTest, NoIndexOfJobsReadsWhatStateChangesSet) {
  pqxx::connection c(url_);
  pqxx::work w(c);
  pqxx::result r = w.exec(
      "SELECT pg_get_indexdef(indexrelid) FROM pg_index "
      "WHERE indrelid = 'jobs'::regclass");
  ASSERT_GE(r.size(), 2u);
  for (const auto& row : r) {
    const std::string def = row[0].c_str();
    for (const char* column : {"state", "updated_at", "started_at"}) {
      EXPECT_EQ(def.find(column), std::string::npos) << def;
    }
  }
  // The rebuild's index: the jobs not yet finished.
  EXPECT_EQ(w.exec("SELECT 1 FROM pg_indexes WHERE indexname = "
                   "'jobs_unfinished_idx'")
                .size(),
            1u);
}

TEST(DatabaseConnect, UnreachableServerIsUnavailable) {
  auto store =
      Database::Connect("postgresql://tupa@127.0.0.1:1/tupa?connect_timeout=2");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tupa::scheduler

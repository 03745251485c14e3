// Database: connecting and migrating, against a real PostgreSQL.
#include "scheduler/store/database.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

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

TEST(DatabaseConnect, UnreachableServerIsUnavailable) {
  auto store =
      Database::Connect("postgresql://tupa@127.0.0.1:1/tupa?connect_timeout=2");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tupa::scheduler

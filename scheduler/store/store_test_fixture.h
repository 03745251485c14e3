// Test fixture for the domain stores against a real PostgreSQL (the ctest
// `postgres` fixture): each test gets a fresh, migrated database.
#ifndef TUPA_SCHEDULER_STORE_STORE_TEST_FIXTURE_H_
#define TUPA_SCHEDULER_STORE_STORE_TEST_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <pqxx/pqxx>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "scheduler/store/stores.h"

namespace tupa::scheduler {

inline std::string TestPostgresBaseUrl() {
  if (const char* env = std::getenv("TUPA_TEST_DATABASE_URL")) return env;
  std::ifstream in(TUPA_TEST_PG_URL_FILE);
  std::string url;
  std::getline(in, url);
  return url;
}

class StoreTest : public testing::Test {
 protected:
  void SetUp() override {
    const std::string base = TestPostgresBaseUrl();
    if (base.empty()) GTEST_FAIL() << "no test PostgreSQL (run via ctest)";
    db_name_ = absl::StrCat("store_test_", std::random_device{}());
    {
      pqxx::connection c(base);
      pqxx::nontransaction n(c);
      n.exec("CREATE DATABASE " + db_name_);
    }
    url_ = base.substr(0, base.rfind('/') + 1) + db_name_;
    auto stores = Stores::Open(url_);
    ASSERT_TRUE(stores.ok()) << stores.status();
    stores_ = std::move(*stores);
    jobs_ = &stores_->jobs();
    usage_ = &stores_->usage();
    workers_ = &stores_->workers();
    tokens_ = &stores_->tokens();
  }

  // Runs `sql` on its own connection and commits.
  void Exec(const std::string& sql) {
    pqxx::connection c(url_);
    pqxx::work w(c);
    w.exec(sql);
    w.commit();
  }

  static v1::Worker UpWorker(const std::string& id) {
    v1::Worker w;
    w.set_id(id);
    w.set_state(v1::WORKER_STATE_UP);
    return w;
  }

  static v1::JobSpec Spec(const std::string& name) {
    v1::JobSpec spec;
    spec.set_name(name);
    spec.set_team("vision");
    spec.set_priority(10);
    spec.mutable_resources()->set_gpus(2);
    spec.mutable_resources()->set_nodes(1);
    spec.add_command("true");
    return spec;
  }

  static pricing::Money M(const char* text) {
    return *pricing::Money::FromString(text);
  }

  std::string db_name_;
  std::string url_;
  std::unique_ptr<Stores> stores_;
  JobStore* jobs_ = nullptr;
  UsageStore* usage_ = nullptr;
  WorkerStore* workers_ = nullptr;
  TokenStore* tokens_ = nullptr;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_STORE_TEST_FIXTURE_H_

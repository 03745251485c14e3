// UsageStore against a real PostgreSQL: allocations, uptime, cost.
#include "scheduler/store/usage_store.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "scheduler/store/store_test_fixture.h"

namespace tupa::scheduler {
namespace {

class UsageStoreTest : public StoreTest {};

// Idle-shutdown savings from worker_uptime and cluster_events, on a fixed
// timeline (minutes after T0 = 2026-11-01 00:00 UTC):
//   w1: up 0-60, SHUTDOWN at 55 (10/h), back at 180: down 120 min -> 20
//   w2: up 0-60, SHUTDOWN at 30, CANCELLED at 40: the shutdown did not
//       happen, whatever ended the span -> 0
//   w3: up 0-60, SHUTDOWN at 59 (4/h), never back: down until `until`
TEST_F(UsageStoreTest, IdleShutdownSavingsCountTheTimeEachWorkerStayedDown) {
  {
    pqxx::connection c(url_);
    pqxx::work w(c);
    const std::string t0 = "'2026-11-01 00:00:00+00'::timestamptz";
    auto at = [&](int minutes) {
      return absl::StrCat("(", t0, " + interval '", minutes, " minutes')");
    };
    for (const char* id : {"w1", "w2", "w3"}) {
      w.exec(absl::StrCat("INSERT INTO workers (id, state) VALUES ('", id,
                          "', 'UP')"));
      w.exec(absl::StrCat(
          "INSERT INTO worker_uptime (worker_id, started_at, ended_at) "
          "VALUES ('",
          id, "', ", at(0), ", ", at(60), ")"));
    }
    w.exec(absl::StrCat(
        "INSERT INTO worker_uptime (worker_id, started_at) VALUES ('w1', ",
        at(180), "), ('w2', ", at(120), ")"));
    w.exec(absl::StrCat(
        "INSERT INTO cluster_events (kind, worker_id, saved_per_hour, at) "
        "VALUES ('SHUTDOWN', 'w1', 10, ",
        at(55), "), ('SHUTDOWN', 'w2', 7, ", at(30),
        "), ('SHUTDOWN_CANCELLED', 'w2', NULL, ", at(40),
        "), ('SHUTDOWN', 'w3', 4, ", at(59), "), ('SCALE_UP', NULL, NULL, ",
        at(61), ")"));
    w.commit();
  }
  const int64_t t0_ms = 1793491200000;  // 2026-11-01 00:00 UTC
  auto minutes = [&](int m) { return t0_ms + int64_t{m} * 60 * 1000; };
  // [0, 300): w1 20 + w3 4/h x 4 h = 36.
  auto all = usage_->IdleShutdownSavings(minutes(0), minutes(300));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(*all, M("36"));
  // [120, 300): w1 down 120-180 -> 10; w3 down 120-300 -> 12.
  auto late = usage_->IdleShutdownSavings(minutes(120), minutes(300));
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(*late, M("22"));
  // Before any shutdown: nothing.
  auto early = usage_->IdleShutdownSavings(minutes(0), minutes(50));
  ASSERT_TRUE(early.ok()) << early.status();
  EXPECT_EQ(*early, M("0"));
}

TEST_F(UsageStoreTest, EndedNodesOfActiveJobsCarryTheirExitCodes) {
  auto job = jobs_->SubmitJob(Spec("gang"), "")->job;
  ASSERT_TRUE(workers_->UpsertWorker(UpWorker("worker-1")).ok());
  std::vector<AllocationRecord> nodes(3);
  for (int i = 0; i < 3; ++i) {
    nodes[i].worker_id = "worker-1";
    nodes[i].node_rank = i;
    nodes[i].device_indexes = {i};
    nodes[i].gpus = 1;
  }
  ASSERT_TRUE(jobs_->AssignJob(job.id(), 1, nodes).ok());
  ASSERT_TRUE(jobs_->MarkRunning(job.id(), 1).ok());
  EXPECT_TRUE(usage_->LoadEndedNodesOfActiveJobs()->empty());
  // Node 0 exited 0, node 2 exited 9, node 1 still runs.
  ASSERT_TRUE(
      usage_->CloseAllocation(job.id(), 1, 0, 0, std::nullopt, "", 0).ok());
  ASSERT_TRUE(
      usage_->CloseAllocation(job.id(), 1, 2, 0, std::nullopt, "", 9).ok());
  auto ended = usage_->LoadEndedNodesOfActiveJobs();
  ASSERT_TRUE(ended.ok()) << ended.status();
  ASSERT_EQ(ended->size(), 2u);
  EXPECT_EQ((*ended)[0].node_rank, 0);
  EXPECT_EQ((*ended)[0].exit_code, std::optional<int32_t>(0));
  EXPECT_EQ((*ended)[1].node_rank, 2);
  EXPECT_EQ((*ended)[1].exit_code, std::optional<int32_t>(9));
  // A node closed without a report (its worker lost) has no exit code.
  ASSERT_TRUE(
      usage_->CloseAllocation(job.id(), 1, 1, 0, std::nullopt, "").ok());
  ended = usage_->LoadEndedNodesOfActiveJobs();
  ASSERT_EQ(ended->size(), 3u);
  EXPECT_FALSE((*ended)[1].exit_code.has_value());
  // Only current attempts of active jobs count.
  ASSERT_TRUE(jobs_->RequeueJob(job.id(), 1, "lost").ok());
  EXPECT_TRUE(usage_->LoadEndedNodesOfActiveJobs()->empty());
}

TEST_F(UsageStoreTest, UptimeSpansOpenCloseAndTotal) {
  v1::Worker w;
  w.set_id("worker-9");
  w.set_state(v1::WORKER_STATE_UP);
  ASSERT_TRUE(workers_->UpsertWorker(w).ok());
  UptimeRecord u;
  u.worker_id = "worker-9";
  u.gpus = 4;
  u.started_at_ms = 1767225600000;
  auto id = usage_->OpenUptime(u);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_EQ(usage_->LoadOpenUptime()->size(), 1u);
  ASSERT_TRUE(
      usage_->CloseUptime(*id, u.started_at_ms + 1800 * 1000, M("1.25"), "USD")
          .ok());
  EXPECT_TRUE(usage_->LoadOpenUptime()->empty());
  auto totals = usage_->UptimeTotals(0, u.started_at_ms + 1800 * 1000);
  ASSERT_TRUE(totals.ok());
  EXPECT_DOUBLE_EQ(totals->gpu_seconds, 4 * 1800.0);
  EXPECT_EQ(totals->cost, M("1.25"));
  EXPECT_TRUE(
      usage_->CrossingUptime(0, u.started_at_ms + 1800 * 1000)->empty());
  // A window that cuts the span: not in the totals, but a crossing row for
  // the report to clip.
  const int64_t mid = u.started_at_ms + 900 * 1000;
  EXPECT_DOUBLE_EQ(usage_->UptimeTotals(mid, mid + 3600 * 1000)->gpu_seconds,
                   0.0);
  auto crossing = usage_->CrossingUptime(mid, mid + 3600 * 1000);
  ASSERT_TRUE(crossing.ok()) << crossing.status();
  ASSERT_EQ(crossing->size(), 1u);
  EXPECT_EQ((*crossing)[0].key, "worker-9");
  EXPECT_EQ((*crossing)[0].started_ms, u.started_at_ms);
  EXPECT_EQ((*crossing)[0].ended_ms, u.started_at_ms + 1800 * 1000);
  EXPECT_EQ((*crossing)[0].cost, M("1.25"));
  EXPECT_DOUBLE_EQ((*crossing)[0].gpus, 4);
}

}  // namespace
}  // namespace tupa::scheduler

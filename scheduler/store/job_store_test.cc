// JobStore against a real PostgreSQL: submission, reads, state changes.
#include "scheduler/store/job_store.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "scheduler/store/store_test_fixture.h"
#include "scheduler/store/submit_batcher.h"
#include "scheduler/store/write_batch.h"

namespace tupa::scheduler {
namespace {

class JobStoreTest : public StoreTest {};

TEST_F(JobStoreTest, SubmitThenGetRoundTripsTheSpec) {
  auto submitted = jobs_->SubmitJob(Spec("a"), "");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  EXPECT_TRUE(submitted->created);
  auto job = jobs_->GetJob(submitted->job.id());
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->spec().name(), "a");
  EXPECT_EQ(job->spec().resources().gpus(), 2);
  EXPECT_EQ(job->state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job->attempt(), 1);
  EXPECT_EQ(jobs_->GetJob(999999).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobStoreTest, JobStoredBeforeSpecProtoReadsItsJsonSpec) {
  int64_t id;
  {
    pqxx::connection c(url_);
    pqxx::work w(c);
    id = w.exec(
              "INSERT INTO jobs (name, spec, state) VALUES ('old', "
              "'{\"name\": \"old\", \"resources\": {\"gpus\": 3}}', "
              "'PENDING') RETURNING id")[0][0]
             .as<int64_t>();
    w.commit();
  }
  auto job = jobs_->GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().name(), "old");
  EXPECT_EQ(job->spec().resources().gpus(), 3);
}

TEST_F(JobStoreTest, HistoryShowsEachSubmissionOnceBeforeAndAfter0012) {
  const int64_t now_id = jobs_->SubmitJob(Spec("new"), "")->job.id();
  pqxx::connection c(url_);
  pqxx::work w(c);
  // A job submitted before 0012 stored its submission as an event row.
  const int64_t old_id =
      w.exec(
           "WITH j AS (INSERT INTO jobs (name, spec, state) VALUES ('old', "
           "'{}', 'PENDING') RETURNING id) INSERT INTO job_events (job_id, "
           "attempt, state, message) SELECT id, 1, 'PENDING', 'submitted' "
           "FROM j RETURNING job_id")[0][0]
          .as<int64_t>();
  for (int64_t id : {now_id, old_id}) {
    pqxx::result rows = w.exec_params(
        "SELECT attempt, state, message FROM job_history WHERE job_id = $1",
        id);
    ASSERT_EQ(rows.size(), 1u) << "job " << id;
    EXPECT_EQ(rows[0][0].as<int>(), 1);
    EXPECT_EQ(rows[0][1].as<std::string>(), "PENDING");
    EXPECT_EQ(rows[0][2].as<std::string>(), "submitted");
  }
}

TEST_F(JobStoreTest, SameIdempotencyKeyFromManyThreadsMakesOneJob) {
  std::vector<std::thread> threads;
  std::atomic<int> created{0};
  std::vector<int64_t> ids(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto r = jobs_->SubmitJob(Spec("k"), "key-1");
      ASSERT_TRUE(r.ok()) << r.status();
      ids[i] = r->job.id();
      if (r->created) ++created;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  for (int64_t id : ids) EXPECT_EQ(id, ids[0]);
  auto all = jobs_->ListJobs({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
}

TEST_F(JobStoreTest, HasIdempotencyKeyFindsOnlyTheUsersStoredKeys) {
  v1::JobSpec spec = Spec("k");
  spec.set_user("alice");
  ASSERT_TRUE(jobs_->SubmitJob(spec, "key-stored").ok());
  ASSERT_TRUE(jobs_->SubmitJob(spec, "").ok());
  auto stored = jobs_->HasIdempotencyKey("alice", "key-stored");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(*stored);
  auto other = jobs_->HasIdempotencyKey("alice", "key-never-sent");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_FALSE(*other);
  auto not_bobs = jobs_->HasIdempotencyKey("bob", "key-stored");
  ASSERT_TRUE(not_bobs.ok()) << not_bobs.status();
  EXPECT_FALSE(*not_bobs);
}

// A key belongs to its user: another user's submission under the same key
// creates that user's own job and never sees the first one, in one batch or
// in two; the same user's retry still returns the first job.
TEST_F(JobStoreTest, IdempotencyKeysAreScopedToTheUser) {
  v1::JobSpec alice = Spec("secret-job");
  alice.set_user("alice");
  alice.set_team("vision");
  alice.add_command("--token=abc");
  v1::JobSpec bob = Spec("bobs-job");
  bob.set_user("bob");
  bob.set_team("nlp");
  const std::string key = "nightly-2026-12-01";

  auto first = jobs_->SubmitJob(alice, key);
  ASSERT_TRUE(first.ok()) << first.status();
  auto bobs = jobs_->SubmitJob(bob, key);
  ASSERT_TRUE(bobs.ok()) << bobs.status();
  EXPECT_TRUE(bobs->created);
  EXPECT_NE(bobs->job.id(), first->job.id());
  EXPECT_EQ(bobs->job.spec().name(), "bobs-job");

  auto retry = jobs_->SubmitJob(alice, key);
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_FALSE(retry->created);
  EXPECT_EQ(retry->job.id(), first->job.id());

  // One batch: carol's new job and bob's retry, under the same key.
  v1::JobSpec carol = Spec("carols-job");
  carol.set_user("carol");
  const std::vector<SubmitRequest> batch = {{&carol, &key}, {&bob, &key}};
  auto results = jobs_->SubmitJobs(batch);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_TRUE((*results)[0].created);
  EXPECT_EQ((*results)[0].job.spec().user(), "carol");
  EXPECT_FALSE((*results)[1].created);
  EXPECT_EQ((*results)[1].job.id(), bobs->job.id());
}

TEST_F(JobStoreTest, LifecycleIsFencedByAttempt) {
  auto job = jobs_->SubmitJob(Spec("f"), "")->job;
  ASSERT_TRUE(workers_->UpsertWorker(UpWorker("worker-1")).ok());
  AllocationRecord a;
  a.worker_id = "worker-1";
  a.device_indexes = {0, 1};
  a.gpus = 2;
  a.gpu_type = "A100-80GB";
  a.region = "sa-east-1";
  a.started_at_ms = 1767225600000;  // 2026-01-01T00:00:00Z
  ASSERT_TRUE(jobs_->AssignJob(job.id(), 1, {a}).ok());
  // Assigning twice is refused: the job is no longer PENDING.
  EXPECT_EQ(jobs_->AssignJob(job.id(), 1, {a}).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(jobs_->MarkRunning(job.id(), 1).ok());
  auto open = usage_->LoadOpenAllocations();
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0].device_indexes, (std::vector<int32_t>{0, 1}));

  auto next = jobs_->RequeueJob(job.id(), 1, "worker lost");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, 2);
  // The old attempt's allocation stays open until its node is closed.
  EXPECT_EQ(usage_->LoadOpenAllocations()->size(), 1u);
  EXPECT_EQ(*usage_->TeamSpend("vision", 0), M("0"));  // read, and remembered
  ASSERT_TRUE(usage_
                  ->CloseAllocation(job.id(), 1, 0,
                                    (*open)[0].started_at_ms + 3600 * 1000,
                                    M("5.80"), "USD")
                  .ok());
  EXPECT_TRUE(usage_->LoadOpenAllocations()->empty());
  // Results of the old attempt are ignored.
  EXPECT_EQ(jobs_->FinishJob(job.id(), 1, v1::JOB_STATE_SUCCEEDED, 0, "", true)
                .code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(
      jobs_->FinishJob(job.id(), 2, v1::JOB_STATE_FAILED, 3, "exit 3", true)
          .ok());
  auto usage = usage_->GetJobUsage(job.id());
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->closed_cost, M("5.80"));
  EXPECT_EQ(usage->currency, "USD");
  EXPECT_DOUBLE_EQ(usage->gpu_seconds, 2 * 3600.0);
  auto by_type = usage_->CostByGroup("gpu-type", 0, 1767225600000 + 3600000);
  ASSERT_TRUE(by_type.ok()) << by_type.status();
  ASSERT_EQ(by_type->size(), 1u);
  EXPECT_EQ((*by_type)[0].key, "A100-80GB");
  EXPECT_EQ((*by_type)[0].cost, M("5.80"));
  // A window ending inside the hour cuts it: one crossing row, as billed.
  EXPECT_TRUE(
      usage_->CostByGroup("gpu-type", 0, 1767225600000 + 1800000)->empty());
  auto crossing =
      usage_->CrossingAllocations("gpu-type", 0, 1767225600000 + 1800000);
  ASSERT_TRUE(crossing.ok()) << crossing.status();
  ASSERT_EQ(crossing->size(), 1u);
  EXPECT_EQ((*crossing)[0].key, "A100-80GB");
  EXPECT_EQ((*crossing)[0].cost, M("5.80"));
  EXPECT_EQ((*crossing)[0].region, "sa-east-1");
  EXPECT_EQ((*crossing)[0].ended_ms - (*crossing)[0].started_ms, 3600000);
  // By day, an allocation within one UTC day is summed, not crossing.
  EXPECT_EQ(usage_->CostByGroup("day", 0, 1767225600000 + 3600000)->size(), 1u);
  // The close made the remembered "0" stale.
  EXPECT_EQ(*usage_->TeamSpend("vision", 0), M("5.80"));
  {
    // A cost written by hand is not seen until the next close: the answer
    // above is remembered, not read again.
    pqxx::connection c(url_);
    pqxx::work w(c);
    w.exec_params("UPDATE allocations SET cost = 7 WHERE job_id = $1",
                  job.id());
    w.commit();
  }
  EXPECT_EQ(*usage_->TeamSpend("vision", 0), M("5.80"));
  ASSERT_TRUE(
      usage_->CloseAllocation(job.id(), 2, 0, 0, std::nullopt, "").ok());
  EXPECT_EQ(*usage_->TeamSpend("vision", 0), M("7"));
  EXPECT_EQ(usage_->CostByGroup("color", 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto done = jobs_->GetJob(job.id());
  EXPECT_EQ(done->state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(done->exit_code(), 3);
  EXPECT_EQ(done->attempt(), 2);
  pqxx::connection c(url_);
  pqxx::work w(c);
  EXPECT_EQ(w.exec_params("SELECT count(*) FROM job_history WHERE job_id = $1",
                          job.id())[0][0]
                .as<int>(),
            5);  // PENDING, ASSIGNED, RUNNING, PENDING (attempt 2), FAILED
}

TEST_F(JobStoreTest, BatchCommitsManyJobsLifecyclesAndFencesEachChange) {
  ASSERT_TRUE(workers_->UpsertWorker(UpWorker("worker-1")).ok());
  std::vector<int64_t> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(jobs_->SubmitJob(Spec("b"), "")->job.id());
  auto node = [](int rank, std::vector<int32_t> devices) {
    AllocationRecord a;
    a.worker_id = "worker-1";
    a.node_rank = rank;
    a.device_indexes = std::move(devices);
    a.gpu_share = 0.25;
    a.gpus = 0.25 * static_cast<double>(a.device_indexes.size());
    a.master_port = 29500 + rank;
    a.region = "sa-east-1";
    a.gpu_type = "L4";
    a.started_at_ms = 1767225600000;
    return a;
  };
  WriteBatch assign;
  assign.AssignJob(ids[0], 1, {node(0, {0, 1}), node(1, {2})});
  assign.AssignJob(ids[1], 1, {node(0, {3})});
  assign.AssignJob(ids[2], 2, {node(0, {4})});  // not its attempt: fenced
  auto assigned = jobs_->CommitBatch(assign);
  ASSERT_TRUE(assigned.ok()) << assigned.status();
  ASSERT_EQ(assigned->size(), 3u);
  EXPECT_TRUE((*assigned)[0].ok());
  EXPECT_TRUE((*assigned)[1].ok());
  EXPECT_EQ((*assigned)[2].code(), absl::StatusCode::kFailedPrecondition);
  auto open = usage_->LoadOpenAllocations();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 3u);  // none for the fenced job
  for (const AllocationRecord& a : *open) {
    EXPECT_NE(a.job_id, ids[2]);
    EXPECT_DOUBLE_EQ(a.gpu_share, 0.25);
    if (a.job_id == ids[0] && a.node_rank == 0) {
      EXPECT_EQ(a.device_indexes, (std::vector<int32_t>{0, 1}));
      EXPECT_EQ(a.master_port, 29500);
      EXPECT_EQ(a.started_at_ms, 1767225600000);
    }
  }
  EXPECT_EQ(jobs_->GetJob(ids[2])->state(), v1::JOB_STATE_PENDING);

  WriteBatch run;
  run.MarkRunning(ids[0], 1);
  run.MarkRunning(ids[1], 1);
  run.MarkRunning(ids[2], 1);  // still PENDING: fenced
  v1::Progress progress;
  progress.set_step(3);
  run.UpdateProgress(ids[0], 1, progress);
  progress.set_step(7);
  run.UpdateProgress(ids[0], 1, progress);  // the last one wins
  auto ran = jobs_->CommitBatch(run);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE((*ran)[0].ok());
  EXPECT_TRUE((*ran)[1].ok());
  EXPECT_EQ((*ran)[2].code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(jobs_->GetJob(ids[0])->progress().step(), 7);

  WriteBatch end;
  end.CloseAllocation(ids[0], 1, 0, 1767225600000 + 3600 * 1000, M("1.50"),
                      "USD", 0);
  end.CloseAllocation(ids[0], 1, 1, 1767225600000 + 3600 * 1000, M("0.75"),
                      "USD", 0);
  end.CloseAllocation(ids[1], 1, 0, 1767225600000 + 1000, std::nullopt, "",
                      std::nullopt);
  end.FinishJob(ids[0], 1, v1::JOB_STATE_SUCCEEDED, 0, "");
  end.FinishJob(ids[1], 1, v1::JOB_STATE_FAILED, 3, "node 0 exited with 3");
  end.FinishJob(ids[2], 2, v1::JOB_STATE_CANCELLED, 0, "x");  // fenced
  auto ended = jobs_->CommitBatch(end);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_TRUE((*ended)[3].ok());
  EXPECT_TRUE((*ended)[4].ok());
  EXPECT_EQ((*ended)[5].code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(usage_->LoadOpenAllocations()->empty());
  EXPECT_EQ(usage_->GetJobUsage(ids[0])->closed_cost, M("2.25"));
  EXPECT_EQ(*usage_->TeamSpend("vision", 0), M("2.25"));
  auto failed = jobs_->GetJob(ids[1]);
  EXPECT_EQ(failed->state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(failed->exit_code(), 3);
  EXPECT_EQ(failed->message(), "node 0 exited with 3");
  EXPECT_EQ(jobs_->GetJob(ids[2])->state(), v1::JOB_STATE_PENDING);
  // The same history as the single-row methods write.
  pqxx::connection c(url_);
  pqxx::work w(c);
  EXPECT_EQ(w.exec_params("SELECT string_agg(state, ',' ORDER BY at, "
                          "event_id NULLS FIRST) FROM job_history WHERE "
                          "job_id = $1",
                          ids[0])[0][0]
                .as<std::string>(),
            "PENDING,ASSIGNED,RUNNING,SUCCEEDED");
  EXPECT_EQ(w.exec_params("SELECT exit_code FROM allocations WHERE job_id = "
                          "$1 AND exit_code IS NULL",
                          ids[1])
                .size(),
            1u);
  // An empty batch commits nothing and succeeds.
  EXPECT_TRUE(jobs_->CommitBatch(WriteBatch())->empty());
}

TEST_F(JobStoreTest, ListFiltersByStateAndTeam) {
  auto a = jobs_->SubmitJob(Spec("a"), "")->job;
  v1::JobSpec other = Spec("b");
  other.set_team("nlp");
  jobs_->SubmitJob(other, "").IgnoreError();
  ASSERT_TRUE(
      jobs_->FinishJob(a.id(), 1, v1::JOB_STATE_CANCELLED, 0, "", true).ok());
  JobFilter by_team;
  by_team.team = "nlp";
  EXPECT_EQ(jobs_->ListJobs(by_team)->size(), 1u);
  JobFilter by_state;
  by_state.states = {v1::JOB_STATE_CANCELLED};
  auto cancelled = jobs_->ListJobs(by_state);
  ASSERT_EQ(cancelled->size(), 1u);
  EXPECT_EQ((*cancelled)[0].id(), a.id());
  EXPECT_EQ(jobs_->LoadActiveJobs()->size(), 1u);
}

TEST_F(JobStoreTest, BatcherGroupsConcurrentSubmitsWithoutLosingOrDuplicating) {
  SubmitBatcher batcher(jobs_, 2, 64);
  constexpr int kThreads = 16, kEach = 20;
  std::vector<std::thread> threads;
  std::vector<std::vector<int64_t>> ids(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        // Every key is sent twice (a retried submit): same job both times.
        const std::string key = absl::StrCat("b-", t, "-", i);
        auto first = batcher.Submit(Spec("b"), key);
        auto again = batcher.Submit(Spec("b"), key);
        ASSERT_TRUE(first.ok() && again.ok());
        EXPECT_TRUE(first->created);
        EXPECT_FALSE(again->created);
        EXPECT_EQ(first->job.id(), again->job.id());
        ids[t].push_back(first->job.id());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<int64_t> unique;
  for (const auto& v : ids) unique.insert(v.begin(), v.end());
  EXPECT_EQ(unique.size(), static_cast<size_t>(kThreads * kEach));
  JobFilter all;
  all.limit = 10000;
  EXPECT_EQ(jobs_->ListJobs(all)->size(),
            static_cast<size_t>(kThreads * kEach));
}

TEST_F(JobStoreTest, OneBatchMapsEachRequestToItsJobAndDedupesKeys) {
  ASSERT_TRUE(jobs_->SubmitJob(Spec("stored"), "old").ok());
  // Keyless, quoting-hostile, stored-key and in-batch duplicate requests.
  const std::vector<std::pair<std::string, std::string>> named = {
      {"n0", ""},    {"n1 \"q\" \\ {x,y}", "k1"},
      {"n2", "old"}, {"n3", "k1"},
      {"n4", ""},    {"n5", "k5"}};
  std::vector<v1::JobSpec> specs;
  for (const auto& [name, key] : named) specs.push_back(Spec(name));
  std::vector<SubmitRequest> requests;
  for (size_t i = 0; i < named.size(); ++i)
    requests.push_back({&specs[i], &named[i].second});
  auto results = jobs_->SubmitJobs(requests);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), named.size());
  const std::vector<bool> created = {true, true, false, false, true, true};
  for (size_t i = 0; i < named.size(); ++i) {
    const SubmitResult& r = (*results)[i];
    EXPECT_EQ(r.created, created[i]) << i;
    EXPECT_EQ(r.job.idempotency_key(), named[i].second) << i;
    auto stored = jobs_->GetJob(r.job.id());
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(stored->spec().name(), r.job.spec().name()) << i;
    if (r.created) EXPECT_EQ(r.job.spec().name(), named[i].first) << i;
  }
  EXPECT_EQ((*results)[2].job.spec().name(), "stored");
  EXPECT_EQ((*results)[3].job.id(), (*results)[1].job.id());
  pqxx::connection c(url_);
  pqxx::work w(c);
  EXPECT_EQ(w.exec("SELECT count(*) FROM jobs")[0][0].as<int>(), 5);
  EXPECT_EQ(w.exec("SELECT count(*) FROM job_history")[0][0].as<int>(), 5);
  // The submission is the job row itself, not an event row (0012).
  EXPECT_EQ(w.exec("SELECT count(*) FROM job_events")[0][0].as<int>(), 0);
}

TEST_F(JobStoreTest, UndecodableStoredSpecIsDataLossNamingJobAndColumn) {
  const int64_t id = jobs_->SubmitJob(Spec("corrupt"), "")->job.id();
  const int64_t fine = jobs_->SubmitJob(Spec("fine"), "")->job.id();
  // Not a JobSpec: field 1 (name) as a length-delimited string 127 bytes
  // long, with 1 byte there.
  Exec(absl::StrCat(
      "UPDATE jobs SET spec_proto = '\\x0a7f41'::bytea WHERE id = ", id));
  auto job = jobs_->GetJob(id);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kDataLoss) << job.status();
  EXPECT_NE(job.status().message().find(absl::StrCat("job ", id)),
            std::string::npos);
  EXPECT_NE(job.status().message().find("spec_proto"), std::string::npos);
  // Reads that meet the row fail too (the scheduler's rebuild included);
  // other rows still read.
  EXPECT_EQ(jobs_->LoadActiveJobs().status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(jobs_->ListJobs(JobFilter()).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_TRUE(jobs_->GetJob(fine).ok());
  // A pre-0011 row whose JSON spec does not parse, and a bad progress.
  Exec(
      absl::StrCat("UPDATE jobs SET spec_proto = NULL, spec = "
                   "'{\"resources\": 7}' WHERE id = ",
                   id));
  job = jobs_->GetJob(id);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kDataLoss) << job.status();
  EXPECT_NE(job.status().message().find("spec "), std::string::npos);
  Exec(
      absl::StrCat("UPDATE jobs SET progress = '{\"step\": \"x\"}' "
                   "WHERE id = ",
                   fine));
  job = jobs_->GetJob(fine);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kDataLoss) << job.status();
  EXPECT_NE(job.status().message().find("progress"), std::string::npos);
}

}  // namespace
}  // namespace tupa::scheduler

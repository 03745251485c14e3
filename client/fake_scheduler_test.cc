// RunCli against an in-process fake scheduler: what goes over the wire
// (idempotency keys, retries, the token) and how replies become output and
// exit codes. The real scheduler is covered by the end-to-end tests.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/cli.h"
#include "client/exit_codes.h"
#include "tupa/v1/cluster.grpc.pb.h"
#include "tupa/v1/job_service.grpc.pb.h"

namespace tupa::client {
namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;

// Job ids with fixed behaviour.
constexpr int64_t kSucceeds = 1;
constexpr int64_t kFails = 2;
constexpr int64_t kNeverEnds = 3;
constexpr int64_t kPriced = 6;
constexpr int64_t kHostile = 7;  // its message holds terminal escapes
constexpr char kHostileMessage[] = "l1\nl2\t\x1b[31mRED";
constexpr int64_t kForbidden = 403;
constexpr int64_t kMissing = 404;

v1::Job MakeJob(int64_t id, v1::JobState state) {
  v1::Job job;
  job.set_id(id);
  job.set_state(state);
  job.set_attempt(1);
  job.mutable_spec()->set_name(absl::StrCat("job-", id));
  job.mutable_spec()->mutable_resources()->set_gpus(2);
  job.mutable_spec()->mutable_resources()->set_nodes(2);
  job.mutable_created_at()->set_seconds(1'700'000'000);
  return job;
}

Status CheckId(int64_t id) {
  if (id == kMissing) return Status(StatusCode::NOT_FOUND, "no job 404");
  if (id == kForbidden)
    return Status(StatusCode::PERMISSION_DENIED, "not yours");
  return Status::OK;
}

class FakeJobs final : public v1::JobService::Service {
 public:
  Status SubmitJob(ServerContext* context, const v1::SubmitJobRequest* request,
                   v1::SubmitJobResponse* response) override {
    std::lock_guard<std::mutex> lock(mu);
    keys.push_back(request->idempotency_key());
    auto auth = context->client_metadata().find("authorization");
    if (auth != context->client_metadata().end())
      authorization.assign(auth->second.data(), auth->second.size());
    if (unavailable_left > 0) {
      --unavailable_left;
      return Status(StatusCode::UNAVAILABLE, "restarting");
    }
    if (request->spec().name() == "invalid")
      return Status(StatusCode::INVALID_ARGUMENT, "resources.nodes: too many");
    *response->mutable_job() = MakeJob(42, v1::JOB_STATE_PENDING);
    *response->mutable_job()->mutable_spec() = request->spec();
    response->set_created(request->idempotency_key() != "seen");
    return Status::OK;
  }
  Status GetJob(ServerContext*, const v1::GetJobRequest* request,
                v1::Job* job) override {
    if (Status s = CheckId(request->id()); !s.ok()) return s;
    *job = MakeJob(request->id(), v1::JOB_STATE_RUNNING);
    v1::Placement* p = job->add_placements();
    p->set_worker_id("worker-7");
    p->add_device_indexes(0);
    p->add_device_indexes(1);
    if (request->id() == kHostile) job->set_message(kHostileMessage);
    if (request->id() == kPriced) {
      job->set_gpu_seconds(7200);
      job->set_cost("5.805");
      job->set_currency("USD");
    }
    return Status::OK;
  }
  Status ListJobs(ServerContext*, const v1::ListJobsRequest* request,
                  v1::ListJobsResponse* response) override {
    std::lock_guard<std::mutex> lock(mu);
    last_list = *request;
    *response->add_jobs() = MakeJob(1, v1::JOB_STATE_RUNNING);
    *response->add_jobs() = MakeJob(2, v1::JOB_STATE_PENDING);
    response->mutable_jobs(0)->set_cost("12.3456");
    response->mutable_jobs(0)->set_currency("USD");
    return Status::OK;
  }
  Status CancelJob(ServerContext*, const v1::CancelJobRequest* request,
                   v1::Job* job) override {
    if (Status s = CheckId(request->id()); !s.ok()) return s;
    *job = MakeJob(request->id(), v1::JOB_STATE_CANCELLED);
    job->set_message(request->reason());
    return Status::OK;
  }
  Status WatchJob(ServerContext* context, const v1::GetJobRequest* request,
                  grpc::ServerWriter<v1::Job>* writer) override {
    if (Status s = CheckId(request->id()); !s.ok()) return s;
    writer->Write(MakeJob(request->id(), v1::JOB_STATE_RUNNING));
    if (request->id() == kSucceeds) {
      writer->Write(MakeJob(request->id(), v1::JOB_STATE_SUCCEEDED));
    } else if (request->id() == kFails || request->id() == kHostile) {
      v1::Job job = MakeJob(request->id(), v1::JOB_STATE_FAILED);
      job.set_exit_code(3);
      job.set_message(request->id() == kFails ? "rank 1 exited with 3"
                                              : kHostileMessage);
      writer->Write(job);
    } else {
      while (!context->IsCancelled())
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Status::OK;
  }
  Status StreamLogs(ServerContext* context,
                    const v1::StreamLogsRequest* request,
                    grpc::ServerWriter<v1::LogChunk>* writer) override {
    if (Status s = CheckId(request->id()); !s.ok()) return s;
    auto chunk = [&](int rank, const std::string& data) {
      v1::LogChunk c;
      c.set_job_id(request->id());
      c.set_attempt(1);
      c.set_rank(rank);
      c.set_data(data);
      writer->Write(c);
    };
    chunk(0, "RANK=");
    chunk(1, "RANK=1\nWORLD");
    chunk(0, "0\n");
    chunk(1, "_SIZE=2");
    if (request->follow() && request->id() == kNeverEnds) {
      while (!context->IsCancelled())
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Status::OK;
  }

  Status GetCostReport(ServerContext*, const v1::CostReportRequest* request,
                       v1::CostReport* report) override {
    std::lock_guard<std::mutex> lock(mu);
    if (!money_api) return Status(StatusCode::UNIMPLEMENTED, "");
    last_cost = *request;
    report->set_currency("USD");
    report->set_group_by(request->group_by());
    *report->mutable_since() = request->since();
    *report->mutable_until() = request->until();
    v1::CostRow* a = report->add_rows();
    a->set_key("a100-80gb");
    a->set_gpu_seconds(27000);
    a->set_cost("21.754999");
    v1::CostRow* b = report->add_rows();
    b->set_key("t4");
    b->set_gpu_seconds(9000);
    b->set_cost("8.25");
    report->set_total("30.004999");
    report->set_total_gpu_seconds(36000);
    report->set_idle_cost("2.125");
    report->set_idle_gpu_seconds(3600);
    return Status::OK;
  }
  Status EstimateJob(ServerContext*, const v1::EstimateJobRequest* request,
                     v1::EstimateJobResponse* response) override {
    std::lock_guard<std::mutex> lock(mu);
    if (!money_api) return Status(StatusCode::UNIMPLEMENTED, "");
    last_estimate = *request;
    if (request->spec().name() == "nowhere") return Status::OK;
    response->set_currency("USD");
    // Slack so that the CLI, which read the clock first, sees 2h05m.
    const absl::Time finish = absl::Now() + absl::Seconds(7500 + 30);
    for (const auto& [region, type, price, cost] :
         {std::make_tuple("sa-east-1", "A100-80GB", "2.03", "8.4583333"),
          std::make_tuple("us-east-1", "A100-80GB", "2.90", "12.083333")}) {
      v1::Estimate* e = response->add_estimates();
      e->set_region(region);
      e->set_gpu_type(type);
      e->set_offering("on-demand");
      e->set_price_per_gpu_hour(price);
      e->set_cost(cost);
      e->mutable_duration()->set_seconds(7500);
      e->mutable_finish_at()->set_seconds(absl::ToUnixSeconds(finish));
      e->set_basis("max_runtime");
      e->set_fits_now(region == std::string("sa-east-1"));
    }
    return Status::OK;
  }

  std::mutex mu;
  bool money_api = true;  // false: a scheduler from before GetCostReport
  v1::CostReportRequest last_cost;
  v1::EstimateJobRequest last_estimate;
  int unavailable_left = 0;
  std::vector<std::string> keys;
  std::string authorization;
  v1::ListJobsRequest last_list;
};

class FakeCluster final : public v1::ClusterService::Service {
 public:
  Status ListWorkers(ServerContext*, const v1::ListWorkersRequest* request,
                     v1::ListWorkersResponse* response) override {
    v1::Worker* w = response->add_workers();
    w->set_id("worker-1");
    w->set_state(v1::WORKER_STATE_UP);
    w->set_gpus_allocated(1);
    for (int i = 0; i < 2; ++i) {
      v1::Device* d = w->add_devices();
      d->set_index(i);
      d->set_gpu_type("T4");
      d->set_emulated(true);
    }
    w->add_running_jobs(7);
    w->set_offering("spot");
    w->set_price_per_gpu_hour("0.35");
    w->set_currency("USD");
    if (request->include_offline()) {
      response->add_workers()->set_id("worker-2");
      response->mutable_workers(1)->set_state(v1::WORKER_STATE_LOST);
    }
    return Status::OK;
  }
  Status DrainWorker(ServerContext*, const v1::DrainWorkerRequest* request,
                     v1::Worker* worker) override {
    if (request->worker_id() == "silent")  // an error without a message
      return Status(StatusCode::INTERNAL, "");
    if (request->worker_id() != "worker-1")
      return Status(StatusCode::NOT_FOUND, "no such worker");
    worker->set_id("worker-1");
    worker->set_state(v1::WORKER_STATE_DRAINING);
    return Status::OK;
  }
};

class FakeSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&jobs_);
    builder.RegisterService(&cluster_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    env_.scheduler = absl::StrCat("127.0.0.1:", port);
  }
  void TearDown() override { server_->Shutdown(); }

  struct Result {
    int code;
    std::string out;
    std::string err;
  };
  Result Tupa(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int code = RunCli(args, env_, out, err);
    return {code, out.str(), err.str()};
  }

  FakeJobs jobs_;
  FakeCluster cluster_;
  std::unique_ptr<grpc::Server> server_;
  CliEnvironment env_;
};

TEST_F(FakeSchedulerTest, SubmitSendsAFreshKeyAndPrintsTheJob) {
  const Result a = Tupa({"submit", "--gpus", "1", "--", "echo", "hi"});
  const Result b = Tupa({"submit", "--gpus", "1", "--", "echo", "hi"});
  EXPECT_EQ(a.code, kExitOk) << a.err;
  EXPECT_EQ(a.out, "job 42 submitted\n");
  ASSERT_EQ(jobs_.keys.size(), 2u);
  EXPECT_EQ(jobs_.keys[0].size(), 32u);
  EXPECT_NE(jobs_.keys[0], jobs_.keys[1]);
}

TEST_F(FakeSchedulerTest, SubmitRetriesUnavailableWithTheSameKey) {
  jobs_.unavailable_left = 3;
  const Result r = Tupa({"submit", "--gpus", "1", "--", "echo"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(jobs_.keys.size(), 4u);
  for (const std::string& key : jobs_.keys) EXPECT_EQ(key, jobs_.keys[0]);
}

TEST_F(FakeSchedulerTest, SubmitGivesUpAfterRetryForWithExitFive) {
  jobs_.unavailable_left = 1000;
  const Result r =
      Tupa({"submit", "--retry-for", "500ms", "--gpus", "1", "--", "echo"});
  EXPECT_EQ(r.code, kExitUnreachable) << r.err;
  EXPECT_GE(jobs_.keys.size(), 2u);
}

TEST_F(FakeSchedulerTest, SubmitWithKnownKeyReportsTheExistingJob) {
  const Result r = Tupa(
      {"submit", "--idempotency-key", "seen", "--gpus", "1", "--", "echo"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "job 42 (existing, same idempotency key)\n");
  EXPECT_EQ(jobs_.keys.back(), "seen");
}

TEST_F(FakeSchedulerTest, SubmitJsonPrintsTheCreatedJobWithItsId) {
  const Result r = Tupa({"submit", "-o", "json", "--gpus", "1", "--", "echo"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("\"id\": \"42\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"idempotency_key\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"created\""), std::string::npos) << r.out;
}

TEST_F(FakeSchedulerTest, ServerInvalidArgumentExitsTwo) {
  const Result r =
      Tupa({"submit", "--name", "invalid", "--gpus", "1", "--", "echo"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err, "tupa: resources.nodes: too many\n");
}

TEST_F(FakeSchedulerTest, TokenIsSentAsBearerMetadata) {
  env_.token = "s3cret";
  EXPECT_EQ(Tupa({"submit", "--gpus", "1", "--", "echo"}).code, kExitOk);
  EXPECT_EQ(jobs_.authorization, "Bearer s3cret");
}

TEST_F(FakeSchedulerTest, ATokenReadFromAFileLosesItsNewline) {
  env_.token = "s3cret\n";
  EXPECT_EQ(Tupa({"submit", "--gpus", "1", "--", "echo"}).code, kExitOk);
  EXPECT_EQ(jobs_.authorization, "Bearer s3cret");
}

TEST_F(FakeSchedulerTest, ATokenThatCannotBeSentIsUsageAndNotEchoed) {
  for (const std::string token : {"s3c\rret", "s3c ret", "s3c\xffret"}) {
    env_.token = token;
    const Result r = Tupa({"list"});
    EXPECT_EQ(r.code, kExitUsage) << r.err;
    EXPECT_NE(r.err.find("TUPA_TOKEN"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("s3c"), std::string::npos) << r.err;
  }
}

TEST_F(FakeSchedulerTest, GetPrintsDetailsAndMapsErrors) {
  const Result r = Tupa({"get", "5"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("state:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RUNNING"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("worker-7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0,1"), std::string::npos) << r.out;
  EXPECT_EQ(Tupa({"get", "404"}).code, kExitNotFound);
  EXPECT_EQ(Tupa({"get", "403"}).code, kExitPermission);
  const Result json = Tupa({"get", "5", "-o", "json"});
  EXPECT_NE(json.out.find("\"worker_id\": \"worker-7\""), std::string::npos);
}

TEST_F(FakeSchedulerTest, ListSendsFiltersAndPrintsATable) {
  const Result r = Tupa({"list", "--state", "running,pend", "--state", "FAILED",
                         "--team", "vision", "--limit", "5"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(jobs_.last_list.states_size(), 3);
  EXPECT_EQ(jobs_.last_list.states(0), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(jobs_.last_list.states(1), v1::JOB_STATE_PENDING);
  EXPECT_EQ(jobs_.last_list.states(2), v1::JOB_STATE_FAILED);
  EXPECT_EQ(jobs_.last_list.team(), "vision");
  EXPECT_EQ(jobs_.last_list.limit(), 5);
  EXPECT_TRUE(absl::StartsWith(r.out, "ID  NAME ")) << r.out;
  EXPECT_NE(r.out.find("RUNNING"), std::string::npos);
  EXPECT_NE(r.out.find("2x2"), std::string::npos);
  const Result json = Tupa({"list", "-o", "json"});
  EXPECT_NE(json.out.find("\"jobs\": ["), std::string::npos) << json.out;
}

TEST_F(FakeSchedulerTest, CancelPrintsTheNewState) {
  const Result r = Tupa({"cancel", "9", "--reason", "no longer needed"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "job 9 CANCELLED\n");
  EXPECT_EQ(Tupa({"cancel", "404"}).code, kExitNotFound);
}

TEST_F(FakeSchedulerTest, WaitExitsZeroOnlyWhenTheJobSucceeded) {
  const Result ok = Tupa({"wait", "1"});
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  // Not a terminal: a plain line per state while waiting, then the verdict.
  EXPECT_EQ(ok.out, "job 1 RUNNING\njob 1 SUCCEEDED\n");
  const Result failed = Tupa({"wait", "2"});
  EXPECT_EQ(failed.code, kExitFailed);
  EXPECT_NE(failed.err.find("FAILED (exit code 3)"), std::string::npos)
      << failed.err;
  EXPECT_EQ(Tupa({"wait", "404"}).code, kExitNotFound);
}

TEST_F(FakeSchedulerTest, WaitTimeoutExitsOneWithAMessage) {
  const Result r = Tupa({"wait", "3", "--timeout", "1s"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("RUNNING"), std::string::npos) << r.err;
}

TEST_F(FakeSchedulerTest, LogsPrefixEachRanksLinesWhenShowingAllRanks) {
  const Result r = Tupa({"logs", "5"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "[rank 1] RANK=1\n"
            "[rank 0] RANK=0\n"
            "[rank 1] WORLD_SIZE=2\n");
  const Result raw = Tupa({"logs", "--no-prefix", "5"});
  EXPECT_EQ(raw.out, "RANK=RANK=1\nWORLD0\n_SIZE=2");
}

TEST_F(FakeSchedulerTest, FollowEndedByTheUsersTimeoutExitsZeroSayingSo) {
  const Result r = Tupa({"logs", "-f", "3", "--timeout", "1s"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("[rank 0] RANK=0\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "tupa: stopped following job 3 after 1s (--timeout)\n");
}

TEST_F(FakeSchedulerTest, JobMessagesReachTheTerminalEscaped) {
  const Result get = Tupa({"get", "7"});
  EXPECT_EQ(get.code, kExitOk) << get.err;
  EXPECT_NE(get.out.find("l1\\nl2\\t\\x1b[31mRED\n"), std::string::npos)
      << get.out;
  const Result wait = Tupa({"wait", "7"});
  EXPECT_EQ(wait.code, kExitFailed);
  EXPECT_EQ(wait.err,
            "tupa: job 7 FAILED (exit code 3): l1\\nl2\\t\\x1b[31mRED\n");
}

TEST_F(FakeSchedulerTest, AnErrorWithoutAMessageIsNamedByItsCode) {
  const Result r = Tupa({"drain", "silent"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "tupa: INTERNAL\n");
}

TEST_F(FakeSchedulerTest, WorkersTableAndDrain) {
  const Result r = Tupa({"workers"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("1/2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("T4 (emulated)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spot      0.35 USD"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("worker-2"), std::string::npos);
  EXPECT_NE(Tupa({"workers", "--all"}).out.find("LOST"), std::string::npos);
  const Result drain = Tupa({"drain", "worker-1"});
  EXPECT_EQ(drain.code, kExitOk);
  EXPECT_EQ(drain.out, "worker worker-1 DRAINING\n");
  EXPECT_EQ(Tupa({"drain", "nope"}).code, kExitNotFound);
}

TEST_F(FakeSchedulerTest, GetShowsGpuHoursAndCostWithCurrency) {
  const Result r = Tupa({"get", "6"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("gpu_hours:  2.00 (7200 GPU-seconds)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("cost:       5.80 USD (exactly 5.805)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Tupa({"get", "5"}).out.find("cost:"), std::string::npos);
}

TEST_F(FakeSchedulerTest, ListHasACostColumnBlankWithoutACost) {
  const Result r = Tupa({"list"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("  COST  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  12.35 USD\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("USD", r.out.find("USD") + 1), std::string::npos)
      << r.out;
}

TEST_F(FakeSchedulerTest, CostSendsGroupAndWindowAndPrintsTheTable) {
  const Result r = Tupa({"cost", "--by", "gpu-type", "--since", "2026-11-25",
                         "--until", "2026-12-02T00:00:00Z"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(jobs_.last_cost.group_by(), "gpu-type");
  EXPECT_EQ(jobs_.last_cost.since().seconds(), 1'795'564'800);  // 11-25
  EXPECT_EQ(jobs_.last_cost.until().seconds(), 1'796'169'600);  // 12-02
  EXPECT_EQ(r.out,
            "cost by gpu-type, 2026-11-25 .. 2026-12-02 (USD)\n"
            "KEY        GPU-HOURS  COST       SHARE\n"
            "a100-80gb  7.50       21.75 USD  72.5%\n"
            "t4         2.50       8.25 USD   27.5%\n"
            "TOTAL      10.00      30.00 USD  100.0%\n"
            "IDLE       1.00       2.12 USD\n");
}

TEST_F(FakeSchedulerTest, CostDefaultsToTeamsOverTheLastWeek) {
  const absl::Time before = absl::Now();
  const Result r = Tupa({"cost"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(jobs_.last_cost.group_by(), "team");
  const int64_t until = jobs_.last_cost.until().seconds();
  EXPECT_EQ(until - jobs_.last_cost.since().seconds(), 7 * 86400);
  EXPECT_GE(until, absl::ToUnixSeconds(before));
  EXPECT_TRUE(absl::StartsWith(r.out, "cost by team, ")) << r.out;
}

TEST_F(FakeSchedulerTest, CostDurationSinceMeansThatLongAgo) {
  const absl::Time before = absl::Now();
  EXPECT_EQ(Tupa({"cost", "--since", "36h"}).code, kExitOk);
  const int64_t since = jobs_.last_cost.since().seconds();
  EXPECT_GE(since, absl::ToUnixSeconds(before - absl::Hours(36)) - 1);
  EXPECT_LE(since, absl::ToUnixSeconds(absl::Now() - absl::Hours(36)));
}

TEST_F(FakeSchedulerTest, CostJsonKeepsTheSchedulersExactAmounts) {
  const Result r = Tupa({"cost", "-o", "json"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("\"total\": \"30.004999\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"cost\": \"21.754999\""), std::string::npos);
  EXPECT_NE(r.out.find("\"idle_cost\": \"2.125\""), std::string::npos);
}

TEST_F(FakeSchedulerTest, EstimateSendsTheSpecSubmitWouldAndKeepsTheOrder) {
  const Result r = Tupa({"estimate", "--gpus", "2", "--max-runtime", "2h5m",
                         "--gpu-type", "A100-80GB", "--", "python", "t.py"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  const v1::JobSpec& spec = jobs_.last_estimate.spec();
  EXPECT_EQ(spec.resources().gpus(), 2);
  EXPECT_EQ(spec.resources().nodes(), 1);  // defaults applied, as in submit
  EXPECT_EQ(spec.max_runtime().seconds(), 7500);
  ASSERT_EQ(spec.command_size(), 2);
  EXPECT_EQ(
      r.out,
      "REGION     GPU-TYPE   OFFERING   PRICE/GPU-H  COST       DURATION  "
      "START  FINISH    BASIS        FITS-NOW\n"
      "sa-east-1  A100-80GB  on-demand  2.03 USD     8.46 USD   2h05m     "
      "now    in 2h05m  max_runtime  yes\n"
      "us-east-1  A100-80GB  on-demand  2.90 USD     12.08 USD  2h05m     "
      "-      in 2h05m  max_runtime  no\n");
  const Result json =
      Tupa({"estimate", "-o", "json", "--gpus", "2", "--", "python", "t.py"});
  EXPECT_EQ(json.code, kExitOk) << json.err;
  EXPECT_NE(json.out.find("\"cost\": \"8.4583333\""), std::string::npos)
      << json.out;
}

TEST_F(FakeSchedulerTest, EstimateWithNowhereToRunExitsOne) {
  const Result r =
      Tupa({"estimate", "--name", "nowhere", "--gpus", "1", "--", "echo"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("no region or GPU type"), std::string::npos) << r.err;
}

TEST_F(FakeSchedulerTest, OldSchedulerWithoutTheMoneyApiExitsOneSayingSo) {
  jobs_.money_api = false;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"cost"},
        std::vector<std::string>{"estimate", "--gpus", "1", "--", "echo"}}) {
    const Result r = Tupa(args);
    EXPECT_EQ(r.code, kExitFailed) << args[0];
    EXPECT_NE(r.err.find("does not support"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("upgrade the scheduler"), std::string::npos) << r.err;
  }
}

TEST_F(FakeSchedulerTest, GlobalFlagsMayComeBeforeTheCommand) {
  const std::string address = env_.scheduler;
  env_.scheduler = "127.0.0.1:1";  // would fail
  const Result r = Tupa({"--scheduler", address, "-o", "json", "get", "5"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.out, "{")) << r.out;
}

}  // namespace
}  // namespace tupa::client

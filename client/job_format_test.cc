#include "client/job_format.h"

#include <gtest/gtest.h>

#include "client/worker_format.h"

namespace tupa::client {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

void SetTime(google::protobuf::Timestamp* ts, absl::Time t) {
  ts->set_seconds(absl::ToUnixSeconds(t));
}

TEST(JobStatesTest, AcceptsAnyCaseWithOrWithoutPrefixAndShortForms) {
  auto states =
      ParseJobStates("running, PENDING,job_state_failed,succ,canceled");
  ASSERT_TRUE(states.ok()) << states.status();
  EXPECT_EQ(*states, (std::vector<v1::JobState>{
                         v1::JOB_STATE_RUNNING, v1::JOB_STATE_PENDING,
                         v1::JOB_STATE_FAILED, v1::JOB_STATE_SUCCEEDED,
                         v1::JOB_STATE_CANCELLED}));
}

TEST(JobStatesTest, UnknownStateNamesTheFlag) {
  auto states = ParseJobStates("sleeping");
  ASSERT_FALSE(states.ok());
  EXPECT_NE(states.status().message().find("--state"), std::string::npos);
  EXPECT_FALSE(ParseJobStates("unspecified").ok());
  EXPECT_FALSE(ParseJobStates(",").ok());
}

TEST(JobIdTest, PositiveIntegersOnly) {
  EXPECT_EQ(*ParseJobId("42"), 42);
  EXPECT_FALSE(ParseJobId("0").ok());
  EXPECT_FALSE(ParseJobId("-1").ok());
  EXPECT_FALSE(ParseJobId("4x").ok());
}

TEST(JobFormatTest, StateNamesDropTheEnumPrefix) {
  EXPECT_EQ(JobStateName(v1::JOB_STATE_RUNNING), "RUNNING");
  EXPECT_TRUE(IsTerminal(v1::JOB_STATE_CANCELLED));
  EXPECT_FALSE(IsTerminal(v1::JOB_STATE_ASSIGNED));
}

TEST(JobFormatTest, ProgressShowsAccuracyOrLoss) {
  v1::Job job;
  EXPECT_EQ(JobProgress(job), "");
  job.mutable_progress()->set_step(120);
  job.mutable_progress()->set_loss(0.43125);
  EXPECT_EQ(JobProgress(job), "step 120 loss 0.4313");
  job.mutable_progress()->set_test_accuracy(0.881);
  EXPECT_EQ(JobProgress(job), "step 120 acc 88.1%");
}

TEST(JobFormatTest, RuntimeOnceStartedElseAge) {
  v1::Job job;
  SetTime(job.mutable_created_at(), kNow - absl::Minutes(10));
  EXPECT_EQ(JobAgeOrRuntime(job, kNow), "10m00s");
  SetTime(job.mutable_started_at(), kNow - absl::Seconds(90));
  EXPECT_EQ(JobAgeOrRuntime(job, kNow), "1m30s");
  SetTime(job.mutable_finished_at(), kNow - absl::Seconds(60));
  EXPECT_EQ(JobAgeOrRuntime(job, kNow), "30s");
}

TEST(JobFormatTest, JobsTableIsAligned) {
  v1::Job a;
  a.set_id(7);
  a.set_state(v1::JOB_STATE_RUNNING);
  a.set_attempt(2);
  a.mutable_spec()->set_name("fmnist");
  a.mutable_spec()->set_user("ana");
  a.mutable_spec()->set_team("vision");
  a.mutable_spec()->mutable_resources()->set_gpus(2);
  a.mutable_spec()->mutable_resources()->set_nodes(2);
  SetTime(a.mutable_started_at(), kNow - absl::Seconds(5));
  v1::Job b;
  b.set_id(12);
  b.set_state(v1::JOB_STATE_FAILED);
  b.set_attempt(1);
  b.set_message("rank 0\nexited with code 1");
  b.mutable_spec()->mutable_resources()->set_gpus(0.5);
  b.mutable_spec()->mutable_resources()->set_nodes(1);
  b.set_cost("1.005");
  b.set_currency("USD");
  EXPECT_EQ(RenderJobsTable({a, b}, kNow),
            "ID  NAME    USER  TEAM    STATE    ATTEMPT  GPUS  AGE/RUNTIME  "
            "COST      PROGRESS  MESSAGE\n"
            "7   fmnist  ana   vision  RUNNING  2        2x2   5s\n"
            "12  -       -     -       FAILED   1        0.5                "
            "1.00 USD            rank 0 exited with code 1\n");
}

TEST(JobFormatTest, OtherUsersTextCannotReachTheTerminalRaw) {
  v1::Job job;
  job.set_id(2);
  job.set_state(v1::JOB_STATE_CANCELLED);
  job.set_message("l1\nl2\t\x1b[31mRED");
  job.mutable_spec()->add_command("echo");
  job.mutable_spec()->add_command("\x1b]0;title\x07");
  (*job.mutable_spec()->mutable_env())["A"] = "x\ry";
  for (const std::string& text :
       {RenderJobsTable({job}, kNow), RenderJobDetails(job, kNow)}) {
    for (const char c : text)
      EXPECT_TRUE(c == '\n' ||
                  (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f))
          << "control byte " << static_cast<int>(c) << " in:\n"
          << text;
  }
  EXPECT_NE(RenderJobsTable({job}, kNow).find("l1 l2\\t\\x1b[31mRED"),
            std::string::npos);
  const std::string details = RenderJobDetails(job, kNow);
  EXPECT_NE(details.find("message:    l1\\nl2\\t\\x1b[31mRED\n"),
            std::string::npos)
      << details;
  EXPECT_NE(details.find("command:    echo \\x1b]0;title\\x07\n"),
            std::string::npos)
      << details;
  EXPECT_NE(details.find("env:        A=x\\ry\n"), std::string::npos)
      << details;
}

TEST(JobFormatTest, DetailsShowUsageCostAndPendingReason) {
  v1::Job job;
  job.set_id(4);
  job.set_state(v1::JOB_STATE_RUNNING);
  SetTime(job.mutable_started_at(), kNow - absl::Minutes(45));
  job.set_gpu_seconds(5400);
  job.set_cost("4.355");
  job.set_currency("BRL");
  std::string text = RenderJobDetails(job, kNow);
  EXPECT_NE(text.find("gpu_hours:  1.50 (5400 GPU-seconds)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cost:       4.36 BRL (exactly 4.355)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("pending_reason"), std::string::npos) << text;
  job.set_cost("4.3500");
  text = RenderJobDetails(job, kNow);
  EXPECT_NE(text.find("cost:       4.35 BRL\n"), std::string::npos) << text;

  v1::Job held;
  held.set_id(5);
  held.set_state(v1::JOB_STATE_PENDING);
  held.set_pending_reason("BUDGET");
  text = RenderJobDetails(held, kNow);
  EXPECT_NE(text.find("state:           PENDING\npending_reason:  BUDGET\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("gpu_hours"), std::string::npos) << text;
  EXPECT_EQ(text.find("cost"), std::string::npos) << text;
}

TEST(JobFormatTest, DetailsIncludePlacementsProgressAndExitCode) {
  v1::Job job;
  job.set_id(3);
  job.set_state(v1::JOB_STATE_FAILED);
  job.set_exit_code(137);
  job.set_message("killed");
  job.mutable_spec()->add_command("python");
  job.mutable_spec()->add_command("train.py");
  job.mutable_spec()->mutable_resources()->set_gpus(1);
  SetTime(job.mutable_created_at(), kNow - absl::Minutes(3));
  job.mutable_progress()->set_step(10);
  job.mutable_progress()->set_epoch(1);
  job.mutable_progress()->set_loss(1.5);
  job.mutable_progress()->set_samples_per_s(2048);
  job.mutable_progress()->set_test_accuracy(0.5);
  v1::Placement* p = job.add_placements();
  p->set_worker_id("worker-2");
  p->set_node_rank(0);
  p->add_device_indexes(3);
  const std::string text = RenderJobDetails(job, kNow);
  EXPECT_NE(text.find("exit_code:  137\n"), std::string::npos) << text;
  EXPECT_NE(text.find("command:    python train.py\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("(3m ago)"), std::string::npos) << text;
  EXPECT_NE(text.find("2048 samples/s, test accuracy 50.00%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("worker-2"), std::string::npos) << text;
}

TEST(JobFormatTest, DetailsShowTheTensorParallelLayoutAndRankMemory) {
  v1::Job job;
  job.set_id(4);
  job.set_state(v1::JOB_STATE_RUNNING);
  auto* train = job.mutable_spec()->mutable_train();
  train->mutable_model()->set_type("mlp");
  train->mutable_parallel()->set_tensor(2);
  job.mutable_progress()->set_step(10);
  job.mutable_progress()->set_layout("2x2");
  job.mutable_progress()->set_param_bytes_per_rank(int64_t{3} << 20);
  const std::string text = RenderJobDetails(job, kNow);
  EXPECT_NE(text.find("tensor parallel 2"), std::string::npos) << text;
  EXPECT_NE(text.find("layout 2x2 (TP x DP), 3Mi parameters+optimizer per "
                      "rank"),
            std::string::npos)
      << text;
}

TEST(WorkerFormatTest, WorkersTableShowsAllocationTypesAndJobs) {
  v1::Worker w;
  w.set_id("worker-1");
  w.set_state(v1::WORKER_STATE_UP);
  w.set_region("eu-west");
  w.set_cpu(16);
  w.set_memory_bytes(int64_t{64} << 30);
  w.set_address("10.0.0.5");
  w.set_gpus_allocated(1.5);
  for (int i = 0; i < 4; ++i) w.add_devices()->set_gpu_type("H100");
  // The heartbeat's samples: mean utilisation and total memory used.
  w.mutable_devices(0)->set_utilization(0.5);
  w.mutable_devices(1)->set_utilization(0.3);
  w.mutable_devices(1)->set_memory_used_bytes(int64_t{1} << 30);
  SetTime(w.mutable_last_seen(), kNow - absl::Seconds(2));
  w.add_running_jobs(4);
  w.add_running_jobs(9);
  EXPECT_EQ(RenderWorkersTable({w}, kNow),
            "ID        STATE  REGION   GPUS   TYPE  OFFERING  PRICE/GPU-H  "
            "UTIL     CPU  MEM   ADDRESS   LAST-SEEN  JOBS  IDLE  POLICY\n"
            "worker-1  UP     eu-west  1.5/4  H100  -         -            "
            "20% 1Gi  16   64Gi  10.0.0.5  2s ago     4,9   -     -\n");
}

TEST(WorkerFormatTest, ShowsIdleTimeVerdictAndWhyAStoppedWorkerStopped) {
  v1::Worker idle;
  idle.set_id("w-1");
  idle.set_state(v1::WORKER_STATE_UP);
  idle.set_idle_seconds(125);
  idle.set_verdict("KEEP_WARM");
  idle.set_verdict_reason("last 1 of pool local/EMU");
  v1::Worker stopped;
  stopped.set_id("w-2");
  stopped.set_state(v1::WORKER_STATE_OFFLINE);
  stopped.set_stopped_reason("IDLE: no job for 3s");
  const std::string table = RenderWorkersTable({idle, stopped}, kNow);
  EXPECT_NE(table.find("2m05s"), std::string::npos) << table;
  EXPECT_NE(table.find("KEEP_WARM: last 1 of pool local/EMU"),
            std::string::npos);
  EXPECT_NE(table.find("OFFLINE"), std::string::npos);
  EXPECT_NE(table.find("IDLE: no job for 3s"), std::string::npos);
}

TEST(WorkerFormatTest, PricedWorkerShowsOfferingAndPriceWithCurrency) {
  v1::Worker w;
  w.set_id("sp-1");
  w.set_state(v1::WORKER_STATE_UP);
  w.set_offering("spot");
  w.set_price_per_gpu_hour("2.0300");
  w.set_currency("USD");
  const std::string text = RenderWorkersTable({w}, kNow);
  EXPECT_NE(text.find("  spot      2.03 USD  "), std::string::npos) << text;
}

}  // namespace
}  // namespace tupa::client

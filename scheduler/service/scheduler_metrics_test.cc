#include "scheduler/service/scheduler_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

namespace tupa::scheduler {
namespace {

NodeView Node(const std::string& id, std::vector<double> free_shares) {
  NodeView n;
  n.worker_id = id;
  n.cpu_total = n.cpu_free = 16;
  n.memory_total = n.memory_free = int64_t{64} << 30;
  for (size_t i = 0; i < free_shares.size(); ++i)
    n.devices.push_back({static_cast<int>(i), "A100", free_shares[i]});
  return n;
}

JobRequest Gpus(double gpus) {
  JobRequest r;
  r.gpus = gpus;
  r.cpu = 1;
  return r;
}

TEST(StrandedGpusTest, FreeGpusWhereNoPendingRequestFitsAreStranded) {
  // w1 has one free GPU, w2 has two: a 2-GPU job fits only w2.
  auto stranded =
      StrandedGpus({Node("w1", {1, 0}), Node("w2", {1, 1})}, {Gpus(2)});
  EXPECT_DOUBLE_EQ((stranded[{"w1", "A100"}]), 1);
  EXPECT_EQ(stranded.count({"w2", "A100"}), 0u);
}

TEST(StrandedGpusTest, NothingIsStrandedWithoutPendingGpuJobs) {
  EXPECT_TRUE(StrandedGpus({Node("w1", {1, 1})}, {}).empty());
  EXPECT_TRUE(StrandedGpus({Node("w1", {1, 1})}, {Gpus(0)}).empty());
}

TEST(StrandedGpusTest, WrongTypeOrUnschedulableWorkerDoesNotCountAsFit) {
  JobRequest h100 = Gpus(1);
  h100.gpu_types = {"H100"};
  auto stranded = StrandedGpus({Node("w1", {1, 0.5})}, {h100});
  EXPECT_DOUBLE_EQ((stranded[{"w1", "A100"}]), 1.5);
  NodeView draining = Node("w2", {1});
  draining.schedulable = false;
  EXPECT_TRUE(StrandedGpus({draining}, {Gpus(1)}).empty());
}

TEST(StrandedGpusTest, CopiesOfOneShapeCountOnceAndTypesKeepThemApart) {
  // Many copies of an H100 job, then one A100 job of the same size: the
  // A100 job fits w1, so nothing there is stranded.
  JobRequest h100 = Gpus(1);
  h100.gpu_types = {"H100"};
  std::vector<JobRequest> pending(1000, h100);
  EXPECT_DOUBLE_EQ(
      (StrandedGpus({Node("w1", {1, 0})}, pending)[{"w1", "A100"}]), 1);
  pending.push_back(Gpus(1));
  EXPECT_TRUE(StrandedGpus({Node("w1", {1, 0})}, pending).empty());
  // A node with no free share strands nothing, whatever pends.
  EXPECT_TRUE(StrandedGpus({Node("w2", {0, 0})}, {Gpus(2)}).empty());
}

std::string Scrape(const SchedulerMetrics& m) {
  std::vector<prometheus::MetricFamily> all;
  for (const auto& weak : m.collectables())
    if (auto c = weak.lock())
      for (auto& f : c->Collect()) all.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(all);
}

TEST(SchedulerMetricsTest, UpdateExportsViewAndAccruesGpuSeconds) {
  SchedulerMetrics m;
  v1::JobSpec spec;
  spec.set_team("ml");
  m.JobSubmitted(spec);
  MetricsView view;
  MetricsView::Job job;
  job.id = 7;
  job.team = "ml";
  job.state = v1::JOB_STATE_RUNNING;
  job.attempt = 1;
  job.has_progress = true;
  job.progress.set_step(42);
  view.jobs.push_back(job);
  view.allocations.push_back({"ml", "ana", "A100", 2});
  view.nodes = {Node("w1", {0, 0, 1})};
  view.workers = {{"w1", v1::WORKER_STATE_UP}};
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  m.Update(view, t0);
  m.Update(view, t0 + absl::Seconds(10));
  const std::string text = Scrape(m);
  EXPECT_NE(text.find("tupa_jobs{state=\"running\",team=\"ml\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tupa_training_step{job_id=\"7\",team=\"ml\"} 42"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tupa_gpu_seconds_allocated_total{gpu_type=\"A100\","
                      "team=\"ml\",user=\"ana\"} 20"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tupa_gpus_free{worker=\"w1\",gpu_type=\"A100\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tupa_job_submissions_total{team=\"ml\"} 1"),
            std::string::npos)
      << text;
  // A job that leaves the view leaves /metrics.
  view.jobs.clear();
  m.Update(view, t0 + absl::Seconds(11));
  EXPECT_EQ(Scrape(m).find("tupa_training_step{"), std::string::npos);
}

TEST(SchedulerMetricsTest, IdleVerdictsCountWorkersAndZeroTheOnesGone) {
  SchedulerMetrics m;
  m.IdleVerdicts({{"BUSY", 2}, {"WARM_PAYS", 1}});
  std::string text = Scrape(m);
  EXPECT_NE(text.find("tupa_idle_workers{verdict=\"WARM_PAYS\"} 1"),
            std::string::npos)
      << text;
  m.IdleVerdicts({{"BUSY", 3}});
  text = Scrape(m);
  EXPECT_NE(text.find("tupa_idle_workers{verdict=\"BUSY\"} 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tupa_idle_workers{verdict=\"WARM_PAYS\"} 0"),
            std::string::npos)
      << text;
}

TEST(SchedulerMetricsTest, EventCountersThatMayNeverFireAreExportedAtZero) {
  SchedulerMetrics m;
  std::string text = Scrape(m);
  EXPECT_NE(text.find("tupa_zombie_jobs_total{action=\"flag\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tupa_zombie_jobs_total{action=\"cancel\"} 0"),
            std::string::npos);
  EXPECT_NE(text.find("tupa_workers_lost_total 0"), std::string::npos);
  EXPECT_EQ(text.find("tupa_scale_ups_total{"), std::string::npos);
  m.KnownPool("sa-east-1", "A100", "USD");
  m.KnownPool("sa-east-1", "A100", "USD");  // once per series
  text = Scrape(m);
  for (const char* series :
       {"tupa_scale_ups_total{pool=\"sa-east-1/A100\"} 0",
        "tupa_idle_shutdowns_total{gpu_type=\"A100\"} 0",
        "tupa_idle_shutdown_saved_per_hour_total{gpu_type=\"A100\"} 0",
        "tupa_idle_cost_total{currency=\"USD\",gpu_type=\"A100\"} 0",
        "tupa_idle_shutdown_saved_total{currency=\"USD\",gpu_type=\"A100\"} "
        "0"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
  // A real event still counts from there.
  m.ScaleUpRequested("sa-east-1/A100");
  EXPECT_NE(Scrape(m).find("tupa_scale_ups_total{pool=\"sa-east-1/A100\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace tupa::scheduler

// Money and the idle policy in tupa-sim replay (replay_fleet.h), on
// hand-checked traces.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/sim/replay.h"
#include "scheduler/sim/traces.h"

namespace tupa::sim {
namespace {

constexpr char kJobsHeader[] =
    "job_id,submit_time_s,duration_s,num_gpus,gpu_type,user\n";

std::vector<scheduler::NodeView> Nodes(const std::string& rows) {
  return *NodesFromCsv(*ParseCsv("sn,cpu_milli,memory_mib,gpu,model\n" + rows));
}

std::vector<PodSpec> Jobs(const std::string& rows) {
  return *PodsFromCsv(*ParseCsv(kJobsHeader + rows));
}

pricing::PriceCatalog Prices(const std::string& yaml) {
  auto c = pricing::PriceCatalog::Parse(yaml);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(ReplayMoney, JobsFleetAndIdleCost) {
  // 2 GPUs at 1.00/GPU-hour. a holds both for 1 h, b one for 30 min after:
  // jobs 2.00 + 0.50; the fleet is up 1.5 h x 2 GPUs = 3.00; idle 0.50.
  ReplayOptions o;
  o.fleet.pricing =
      Prices("currency: USD\nprices: [{gpu_type: T4, per_gpu_hour: 1.00}]\n");
  auto r = RunReplay(Nodes("n0,64000,262144,2,T4\n"),
                     Jobs("a,0,3600,2,,u\nb,0,1800,1,,u\n"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->fleet.currency, "USD");
  EXPECT_EQ(r->fleet.job_cost.ToString(), "2.50");
  EXPECT_EQ(r->fleet.fleet_cost.ToString(), "3.00");
  EXPECT_EQ(r->fleet.idle_cost.ToString(), "0.50");
  EXPECT_DOUBLE_EQ(r->fleet.node_hours, 1.5);
}

TEST(ReplayMoney, OffPeakWindowsFollowTheEpoch) {
  // Half price from 00:00 to 01:00 UTC; epoch 23:30 UTC: a 1-GPU job of 1 h
  // pays 30 min at 2.00 and 30 min at 1.00.
  ReplayOptions o;
  o.fleet.pricing = Prices(
      "currency: USD\nprices:\n"
      "  - gpu_type: T4\n    per_gpu_hour: 2.00\n    off_peak:\n"
      "      - {hours: \"00:00-01:00\", timezone: UTC, discount: 0.5}\n");
  o.fleet.epoch = absl::FromUnixSeconds(1767569400);  // 2026-01-04 23:30 UTC
  auto r =
      RunReplay(Nodes("n0,64000,262144,1,T4\n"), Jobs("a,0,3600,1,,u\n"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->fleet.job_cost.ToString(), "1.50");
}

TEST(ReplayMoney, NodeWithoutAPriceIsAnError) {
  ReplayOptions o;
  o.fleet.pricing =
      Prices("currency: USD\nprices: [{gpu_type: T4, per_gpu_hour: 1.00}]\n");
  auto r =
      RunReplay(Nodes("n0,64000,262144,1,V100M32\n"), Jobs("a,0,60,1,,u\n"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("V100M32"), std::string::npos)
      << r.status();
}

TEST(ReplayIdle, StopsIdleNodesAndBootsOneForALateJob) {
  // Two 1-GPU nodes, nothing kept warm. Both stop once idle 10 min; b
  // arrives at 2 h, fits no live node, asks for capacity after 2 min and
  // starts when the node has booted (3 min): a wait of 5 min plus at most
  // one 30 s policy tick.
  ReplayOptions o;
  o.fleet.pricing =
      Prices("currency: USD\nprices: [{gpu_type: T4, per_gpu_hour: 1.00}]\n");
  auto policy = scheduler::idle::ParseIdlePolicyYaml(
      "idle_shutdown: {idle_after: 10m, keep_warm: 0, min_uptime: 0s}\n"
      "scale_up: {pending_after: 2m}\n");
  ASSERT_TRUE(policy.ok()) << policy.status();
  o.fleet.idle = *policy;
  auto r = RunReplay(Nodes("n0,64000,262144,1,T4\nn1,64000,262144,1,T4\n"),
                     Jobs("a,0,60,1,,u\nb,7200,60,1,,u\n"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 2);
  EXPECT_EQ(r->unstarted, 0);
  EXPECT_EQ(r->fleet.shutdowns, 2);
  EXPECT_EQ(r->fleet.boots, 1);
  // a waits 0 s, b 300..330 s.
  EXPECT_GE(r->avg_wait_s, 150);
  EXPECT_LE(r->avg_wait_s, 165);
  // Up: two nodes for ~10-11 min, one for the boot and b (~4 min), not 2 h.
  EXPECT_LT(r->fleet.node_hours, 0.5);
  EXPECT_LT(r->fleet.idle_cost.ToDouble(), 0.5);
}

// T4 at 1 USD a GPU-hour, A10 at 2; a 10-minute timer that keeps nothing
// warm and scales up after `pending_after`.
ReplayOptions T4AndA10Timer(const std::string& pending_after) {
  ReplayOptions o;
  o.fleet.pricing = Prices(
      "currency: USD\nprices: [{gpu_type: T4, per_gpu_hour: 1.00}, "
      "{gpu_type: A10, per_gpu_hour: 2.00}]\n");
  auto policy = scheduler::idle::ParseIdlePolicyYaml(
      "idle_shutdown: {policy: timer, idle_after: 10m, keep_warm: 0, "
      "min_uptime: 0s}\n"
      "scale_up: {pending_after: " +
      pending_after + "}\n");
  EXPECT_TRUE(policy.ok()) << policy.status();
  if (policy.ok()) o.fleet.idle = *policy;
  return o;
}

TEST(ReplayIdle, BootsANodeWithTheCoresTheJobAsksFor) {
  // Both 1-GPU nodes stop when idle; b asks for 32 cores: the cheap 4-core
  // node could never hold it, so the 64-core one boots, once.
  ReplayOptions o = T4AndA10Timer("0s");
  const std::string header =
      "job_id,submit_time_s,duration_s,num_gpus,gpu_type,user,cpu_milli\n";
  auto jobs = PodsFromCsv(
      *ParseCsv(header + "a,0,60,1,,u,1000\nb,7200,60,1,,u,32000\n"));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  auto r = RunReplay(Nodes("n0,4000,262144,1,T4\nn1,64000,262144,1,A10\n"),
                     *jobs, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 2);
  EXPECT_EQ(r->fleet.boots, 1);
  // b waits the 3 min boot, plus at most one 30 s policy tick.
  EXPECT_LE(r->avg_wait_s, 210 / 2.0);
}

TEST(ReplayIdle, ALongJobBootsACheaperNodeOverTakingADearFreeOne) {
  // a holds the dear A10 for 2 h while the idle T4 stops; b, 3 days on any
  // GPU, comes when the A10 is free: it waits for the T4 to boot (its
  // 3 days cost half there) instead of keeping the A10 up for them.
  ReplayOptions o = T4AndA10Timer("2m");
  const auto nodes = Nodes("n0,64000,262144,1,T4\nn1,64000,262144,1,A10\n");
  const auto jobs = Jobs("a,0,7200,1,A10,u\nb,7300,259200,1,,u\n");
  auto r = RunReplay(nodes, jobs, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->finished, 2);
  EXPECT_EQ(r->fleet.boots, 1);
  // a: 2 h of A10 (4 USD); b: 72 h of T4 (72 USD).
  EXPECT_NEAR(r->fleet.job_cost.ToDouble(), 76, 0.01);
  // b asked at once (not after pending_after) and waited the 3 min boot,
  // plus at most one 30 s policy tick.
  EXPECT_LE(r->avg_wait_s, 210 / 2.0);
  // Without long-job placement it takes the A10 at once: twice the price.
  o.long_job_runtime_s = 0;
  r = RunReplay(nodes, jobs, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->fleet.boots, 0);
  EXPECT_NEAR(r->fleet.job_cost.ToDouble(), 148, 0.01);
}

TEST(ReplayIdle, WithoutAPolicyEveryNodeStaysUp) {
  ReplayOptions o;
  auto r = RunReplay(Nodes("n0,64000,262144,1,T4\nn1,64000,262144,1,T4\n"),
                     Jobs("a,0,60,1,,u\nb,7200,60,1,,u\n"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->fleet.shutdowns, 0);
  EXPECT_DOUBLE_EQ(r->fleet.node_hours, 2 * 7260 / 3600.0);
  EXPECT_TRUE(r->fleet.currency.empty());  // no pricing, no money
}

TEST(SampleNodes, KeepsEveryModel) {
  auto nodes = Nodes(
      "a0,1000,1024,1,T4\na1,1000,1024,1,T4\na2,1000,1024,1,T4\n"
      "a3,1000,1024,1,T4\nb0,1000,1024,1,A10\n");
  auto half = SampleNodes(nodes, 0.5);
  ASSERT_EQ(half.size(), 3u);
  EXPECT_EQ(half[0].worker_id, "a0");
  EXPECT_EQ(half[1].worker_id, "a2");
  EXPECT_EQ(half[2].worker_id, "b0");
  EXPECT_EQ(SampleNodes(nodes, 1).size(), nodes.size());
}

}  // namespace
}  // namespace tupa::sim

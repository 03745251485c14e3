#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/sim/inflation.h"
#include "scheduler/sim/replay.h"
#include "scheduler/sim/traces.h"

namespace tupa::sim {
namespace {

using Policy = scheduler::PlacementOptions::Policy;

constexpr char kNodes[] =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "n0,64000,262144,2,P100\n"
    "n1,96000,393216,8,G2\n"
    "n2,32000,131072,0,\n";

constexpr char kPods[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
    "p0,12000,16384,1,1000,\n"
    "p1,6000,12288,1,460,\n"
    "p2,4000,8192,0,0,\n"
    "p3,32000,65536,8,1000,G2\n"
    "p4,8000,16384,2,1000,P100|T4\n";

TEST(Traces, ReadsOpenbNodeList) {
  auto nodes = NodesFromCsv(*ParseCsv(kNodes));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[1].worker_id, "n1");
  EXPECT_EQ((*nodes)[1].devices.size(), 8u);
  EXPECT_EQ((*nodes)[1].devices[0].gpu_type, "G2");
  EXPECT_DOUBLE_EQ((*nodes)[1].cpu_total, 96);
  EXPECT_EQ((*nodes)[0].memory_total, int64_t{262144} << 20);
  EXPECT_TRUE((*nodes)[2].devices.empty());
}

TEST(Traces, ReadsDerivedNodeLayout) {
  auto nodes = NodesFromCsv(*ParseCsv(
      "node_id,num_gpus,gpu_type,cpu_milli,memory_mib\nx,4,T4,32000,1024\n"));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ((*nodes)[0].devices.size(), 4u);
  EXPECT_EQ((*nodes)[0].devices[3].gpu_type, "T4");
}

TEST(Traces, ReadsPodsWithSharesAndTypeLists) {
  auto pods = PodsFromCsv(*ParseCsv(kPods));
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 5u);
  EXPECT_DOUBLE_EQ((*pods)[1].Gpus(), 0.46);
  EXPECT_DOUBLE_EQ((*pods)[2].Gpus(), 0);
  EXPECT_DOUBLE_EQ((*pods)[3].Gpus(), 8);
  EXPECT_EQ((*pods)[4].gpu_types, (std::vector<std::string>{"P100", "T4"}));
}

TEST(Traces, ReadsJobListWithoutGpuMilli) {
  auto jobs = PodsFromCsv(
      *ParseCsv("job_id,submit_time_s,duration_s,num_gpus,gpu_type,user\n"
                "j0,10,100,2,T4|G2,u1\n"));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].submit_s, 10);
  EXPECT_EQ((*jobs)[0].duration_s, 100);
  EXPECT_DOUBLE_EQ((*jobs)[0].Gpus(), 2);
  EXPECT_EQ((*jobs)[0].user, "u1");
}

TEST(Traces, BadNumberNamesLineAndColumn) {
  auto nodes =
      NodesFromCsv(*ParseCsv("sn,cpu_milli,memory_mib,gpu,model\n"
                             "n0,lots,1,1,T4\n"));
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(nodes.status().message().find("line 2"), std::string::npos);
  EXPECT_NE(nodes.status().message().find("cpu_milli"), std::string::npos);
}

TEST(Traces, NumbersMustBeWholeNonNegativeAndSane) {
  for (const char* row : {"p,nan,1000", "p,1.9,1000", "p,4294967297,1000",
                          "p,-1,1000", "p,1,1e300"}) {
    auto pods = PodsFromCsv(
        *ParseCsv(std::string("name,num_gpu,gpu_milli\n") + row + "\n"));
    EXPECT_FALSE(pods.ok()) << row;
  }
  EXPECT_FALSE(NodesFromCsv(*ParseCsv("sn,cpu_milli,memory_mib,gpu,model\n"
                                      "n0,1000,1,-2,T4\n"))
                   .ok());
}

TEST(Traces, MissingColumnAndFileAreErrors) {
  EXPECT_FALSE(NodesFromCsv(*ParseCsv("sn,gpu\nx,1\n")).ok());
  EXPECT_EQ(LoadNodes("/nonexistent/nodes.csv").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(Inflation, IsDeterministicAndBounded) {
  auto nodes = *NodesFromCsv(*ParseCsv(kNodes));
  auto pods = *PodsFromCsv(*ParseCsv(kPods));
  for (auto protocol :
       {InflationProtocol::kDraw, InflationProtocol::kFgdSimulator}) {
    const bool draw = protocol == InflationProtocol::kDraw;
    for (Policy p : {Policy::kFirstFit, Policy::kBestFit, Policy::kTupa}) {
      InflationResult a = RunInflation(nodes, pods, p, 42, 1.3, protocol);
      InflationResult b = RunInflation(nodes, pods, p, 42, 1.3, protocol);
      EXPECT_EQ(a.alloc_ratio, b.alloc_ratio);
      EXPECT_EQ(a.placed, b.placed);
      EXPECT_GT(a.alloc_ratio, draw ? 0.5 : 0.2);
      EXPECT_LE(a.alloc_ratio, 1.0);
      EXPECT_NEAR(a.unallocated_gpus, 10 * (1 - a.alloc_ratio), 1e-6);
      EXPECT_LE(a.placed, a.offered);
      EXPECT_GE(a.offered, draw ? 1 : 5);        // kFgdSimulator: the list once
      if (draw) EXPECT_LT(a.placed, a.offered);  // 130%: some are dropped
    }
  }
}

TEST(Inflation, PodsThatAskForNoGpuEndTheRunInsteadOfLoopingForever) {
  auto nodes = *NodesFromCsv(*ParseCsv(kNodes));
  auto pods = *PodsFromCsv(*ParseCsv("name,cpu_milli,num_gpu\np,1000,0\n"));
  InflationResult r = RunInflation(nodes, pods, Policy::kBestFit, 1, 1.3,
                                   InflationProtocol::kDraw);
  EXPECT_EQ(r.offered, 0);
  // The FGD simulator's sequence offers the list once and appends nothing.
  r = RunInflation(nodes, pods, Policy::kBestFit, 1);
  EXPECT_EQ(r.offered, 1);
  EXPECT_DOUBLE_EQ(r.alloc_ratio, 0);
}

TEST(Inflation, StopsAtTheOfferedRatio) {
  auto nodes = *NodesFromCsv(*ParseCsv(kNodes));
  auto pods = *PodsFromCsv(*ParseCsv("name,num_gpu,gpu_milli\np,1,1000\n"));
  InflationResult r = RunInflation(nodes, pods, Policy::kBestFit, 1, 0.5);
  EXPECT_EQ(r.offered, 5);  // 10 GPUs, stop once 5 were offered
  EXPECT_DOUBLE_EQ(r.alloc_ratio, 0.5);
}

// The FGD simulator offers every pod of the list once before it draws:
// a list whose GPU request is exactly the stop ratio is offered as it is
// under every seed, where drawing with replacement offers a different mix
// per seed (here 1.5 GPUs of 10: the 1-GPU pod and the share once each,
// or the share three times, or the 1-GPU pod twice).
TEST(Inflation, FgdProtocolOffersTheWholeListOnce) {
  auto nodes = *NodesFromCsv(*ParseCsv(kNodes));
  auto pods =
      *PodsFromCsv(*ParseCsv("name,cpu_milli,num_gpu,gpu_milli\n"
                             "a,1000,1,1000\n"
                             "b,1000,1,500\n"));
  std::set<double> drawn;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    InflationResult r = RunInflation(nodes, pods, Policy::kFgd, seed, 0.15);
    EXPECT_EQ(r.offered, 2);
    EXPECT_DOUBLE_EQ(r.alloc_ratio, 0.15);
    drawn.insert(RunInflation(nodes, pods, Policy::kFgd, seed, 0.15,
                              InflationProtocol::kDraw)
                     .alloc_ratio);
  }
  EXPECT_GT(drawn.size(), 1u);
}

// A list that asks for more than the stop ratio loses random pods
// (tuneDownPods) instead of being offered past it.
TEST(Inflation, FgdProtocolTunesALargeListDown) {
  auto nodes = *NodesFromCsv(*ParseCsv(kNodes));
  std::string csv = "name,num_gpu,gpu_milli\n";
  for (int i = 0; i < 20; ++i) csv += "p" + std::to_string(i) + ",1,1000\n";
  auto pods = *PodsFromCsv(*ParseCsv(csv));
  InflationResult r = RunInflation(nodes, pods, Policy::kBestFit, 7);
  EXPECT_EQ(r.offered, 13);  // 10 GPUs x 1.3
  EXPECT_EQ(r.placed, 10);
}

TEST(Replay, QueuesWhenTheClusterIsFull) {
  auto nodes =
      *NodesFromCsv(*ParseCsv("sn,cpu_milli,memory_mib,gpu,model\n"
                              "n0,64000,262144,2,T4\n"));
  auto jobs = *PodsFromCsv(
      *ParseCsv("job_id,submit_time_s,duration_s,num_gpus,gpu_type,user\n"
                "a,0,100,2,,u\n"
                "b,10,50,1,,u\n"
                "c,20,10,8,,u\n"));
  ReplayResult r = *RunReplay(nodes, jobs, {Policy::kTupa, 1});
  EXPECT_EQ(r.jobs, 3);
  EXPECT_EQ(r.finished, 2);
  EXPECT_EQ(r.never_fit, 1);
  EXPECT_DOUBLE_EQ(r.avg_wait_s, 45);  // b waits 90 s for a
  EXPECT_DOUBLE_EQ(r.avg_jct_s, 120);  // (100 + 140) / 2
  EXPECT_DOUBLE_EQ(r.makespan_s, 150);
  EXPECT_NEAR(r.gpu_utilisation, 250.0 / 300.0, 1e-9);
  // Arrivals span [0, 20]: a holds 2 of 2 GPUs throughout.
  EXPECT_NEAR(r.arrival_window_utilisation, 1.0, 1e-9);
}

TEST(Replay, ArrivalWindowLeavesOutTheDrain) {
  auto nodes =
      *NodesFromCsv(*ParseCsv("sn,cpu_milli,memory_mib,gpu,model\n"
                              "n0,64000,262144,4,T4\n"));
  auto jobs = *PodsFromCsv(
      *ParseCsv("job_id,submit_time_s,duration_s,num_gpus,gpu_type,user\n"
                "a,0,1000,1,,u\n"
                "b,50,10,2,,u\n"
                "c,100,10,1,,u\n"));
  for (bool arrived : {true, false}) {
    ReplayOptions o;
    o.mix_from_arrivals = arrived;
    ReplayResult r = *RunReplay(nodes, jobs, o);
    EXPECT_EQ(r.finished, 3);
    EXPECT_DOUBLE_EQ(r.avg_wait_s, 0);
    // Window [0, 100] s on 4 GPUs: a 1 x 100 + b 2 x 10 = 120 GPU-s.
    EXPECT_NEAR(r.arrival_window_utilisation, 120.0 / 400.0, 1e-9);
  }
}

TEST(Replay, ArrivalJitterIsSeededAndCanReorderArrivals) {
  auto nodes =
      *NodesFromCsv(*ParseCsv("sn,cpu_milli,memory_mib,gpu,model\n"
                              "n0,64000,262144,1,T4\n"));
  // a then b, 1 s apart, on one GPU: whichever comes second waits.
  auto jobs = *PodsFromCsv(
      *ParseCsv("job_id,submit_time_s,duration_s,num_gpus,gpu_type,user\n"
                "a,100,100,1,,u\n"
                "b,101,10,1,,u\n"));
  ReplayOptions o;
  o.seed = 7;
  EXPECT_DOUBLE_EQ(RunReplay(nodes, jobs, o)->avg_wait_s, 49.5);  // no jitter
  o.arrival_jitter_s = 20;
  std::set<double> waits;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    o.seed = seed;
    const double first = RunReplay(nodes, jobs, o)->avg_wait_s;
    EXPECT_DOUBLE_EQ(RunReplay(nodes, jobs, o)->avg_wait_s, first) << seed;
    waits.insert(first);
  }
  // b (10 s) sometimes arrives first: a waits less than 10 s then.
  EXPECT_GT(waits.size(), 1u);
  EXPECT_LT(*waits.begin(), 10);
}

}  // namespace
}  // namespace tupa::sim

// tupa-bench-placement: one full PlaceJobs() pass, 10,000 pending jobs onto
// 1,000 workers x 8 GPUs (BENCHMARKS.md target: < 50 ms). The job mix is
// fixed-seed: 1/2/4/8-GPU jobs, 2- and 4-node gangs, fractional shares,
// three GPU types, some type lists. Prints one JSON line with the median of
// several passes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "scheduler/placement/placement.h"

namespace {

using tupa::scheduler::JobRequest;
using tupa::scheduler::NodeView;

std::vector<NodeView> Workers(int n) {
  const char* kTypes[] = {"H100", "A100", "L4"};
  std::vector<NodeView> nodes;
  for (int i = 0; i < n; ++i) {
    NodeView v;
    v.worker_id = "worker-" + std::to_string(i);
    const char* type = kTypes[i % 10 < 5 ? 0 : (i % 10 < 8 ? 1 : 2)];
    for (int d = 0; d < 8; ++d) v.devices.push_back({d, type, 1.0});
    v.cpu_total = v.cpu_free = 128;
    v.memory_total = v.memory_free = int64_t{1024} << 30;
    v.price_per_gpu_hour = type[0] == 'H' ? 2.5 : (type[0] == 'A' ? 1.6 : 0.7);
    nodes.push_back(std::move(v));
  }
  return nodes;
}

std::vector<JobRequest> Jobs(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<JobRequest> jobs;
  for (int i = 0; i < n; ++i) {
    JobRequest j;
    j.job_id = i + 1;
    j.priority = static_cast<int>(rng() % 4) * 10;
    j.team = "team-" + std::to_string(rng() % 8);
    j.submitted_at_ms = i;
    j.max_runtime_s = rng() % 5 == 0 ? 0 : 600 + rng() % 36000;
    const int r = static_cast<int>(rng() % 100);
    if (r < 25) {
      j.gpus = 0.25 * (1 + rng() % 3);  // fractional share
    } else if (r < 60) {
      j.gpus = 1;
    } else if (r < 75) {
      j.gpus = 2;
    } else if (r < 85) {
      j.gpus = 4;
    } else if (r < 95) {
      j.gpus = 8;
    } else {
      j.gpus = 8;
      j.nodes = rng() % 2 ? 2 : 4;  // gang
    }
    j.cpu = std::max(1.0, j.gpus * 8);
    j.memory = static_cast<int64_t>(std::max(1.0, j.gpus * 64)) << 30;
    if (rng() % 4 == 0) j.gpu_types = {"H100", "A100"};
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace

int main(int argc, char** argv) {
  const int passes = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const auto nodes = Workers(1000);
  const auto jobs = Jobs(10000, 7);
  tupa::scheduler::PlacementOptions options;
  options.now_ms = 1'000'000;
  std::vector<double> ms;
  size_t placed = 0;
  for (int i = 0; i < passes; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto plan = tupa::scheduler::PlaceJobs(nodes, jobs, {}, options);
    const auto end = std::chrono::steady_clock::now();
    ms.push_back(
        std::chrono::duration<double, std::milli>(end - start).count());
    placed = plan.placed.size();
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "{\"bench\": \"placement_pass\", \"jobs\": %zu, \"workers\": %zu, "
      "\"ms_median\": %.2f, \"placed\": %zu, \"policy\": \"tupa\", "
      "\"passes\": %d}\n",
      jobs.size(), nodes.size(), ms[ms.size() / 2], placed, passes);
  return 0;
}

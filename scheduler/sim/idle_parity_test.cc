// Must-show 3 of issue 22: the simulator and the real scheduler make the
// same idle decisions for the same pool history. The simulator side is
// tupa-sim's own Fleet (replay_fleet.h); the scheduler side builds its
// snapshot the way SchedulerCore::IdleSnapshot() does (real job ids,
// device activity from heartbeats, the worker's price calendar) and calls
// idle::Decide() each cycle with the state of the previous one, as
// SchedulerCore::RunIdlePolicy() does.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/idle/decide.h"
#include "scheduler/pricing/cost.h"
#include "scheduler/pricing/price_catalog.h"
#include "scheduler/sim/replay_fleet.h"
#include "scheduler/sim/traces.h"

namespace tupa::sim {
namespace {

namespace idle = scheduler::idle;

struct Job {
  int64_t id;
  std::string node;
  int64_t start_s, end_s;
};

// Three 1-GPU T4 nodes; a job every 3 minutes on n0 for an hour (so the
// pool learns its gaps), two on n1, then nothing. Returns, per second, the
// nodes each side stopped.
class ParityTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    auto catalog = pricing::PriceCatalog::Parse(
        "currency: USD\nprices:\n"
        "  - region: sa-east-1\n    gpu_type: T4\n    per_gpu_hour: 0.62\n"
        "    off_peak:\n"
        "      - {days: [mon, tue, wed, thu, fri], hours: \"22:00-06:00\",\n"
        "         timezone: America/Sao_Paulo, discount: 0.30}\n");
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *catalog;
    nodes_ = *NodesFromCsv(*ParseCsv(
        "sn,cpu_milli,memory_mib,gpu,model\n"
        "n0,8000,32768,1,T4\nn1,8000,32768,1,T4\nn2,8000,32768,1,T4\n"));
    for (int i = 0; i < 20; ++i)
      jobs_.push_back({i + 1, "n0", 60 + 180 * i, 60 + 180 * i + 120});
    jobs_.push_back({101, "n1", 300, 900});
    jobs_.push_back({102, "n1", 1000, 1100});
  }

  bool Running(const Job& j, int64_t t) const {
    return j.start_s <= t && t < j.end_s;
  }

  pricing::PriceCatalog catalog_;
  std::vector<scheduler::NodeView> nodes_;
  std::vector<Job> jobs_;
  const absl::Time epoch_ = absl::FromUnixSeconds(1767582000);
};

TEST_P(ParityTest, SchedulerAndSimulatorStopTheSameWorkersAtTheSameTime) {
  auto policy = idle::NamedIdlePolicy(GetParam(), absl::Minutes(3));
  ASSERT_TRUE(policy.ok()) << policy.status();
  constexpr int64_t kEnd = 3 * 3600;

  // Simulator: Fleet deciding every second.
  FleetOptions o;
  o.pricing = catalog_;
  o.idle = *policy;
  o.epoch = epoch_;
  o.decide_every = absl::Seconds(1);
  auto fleet = Fleet::Create(nodes_, o);
  ASSERT_TRUE(fleet.ok()) << fleet.status();
  std::vector<scheduler::NodeView> views = nodes_;
  (*fleet)->Start(0);
  std::map<int64_t, std::set<std::string>> sim_stops;

  // Scheduler: its snapshot, its call.
  idle::PolicyState state;
  std::set<std::string> down;
  std::map<int64_t, std::set<std::string>> core_stops;
  auto entry = catalog_.Lookup("sa-east-1", "T4", "on-demand");
  ASSERT_TRUE(entry.ok()) << entry.status();

  for (int64_t t = 0; t <= kEnd; ++t) {
    const absl::Time now = epoch_ + absl::Seconds(t);
    // Jobs start and end on both sides (only on nodes still up).
    for (const Job& j : jobs_) {
      const int n = j.node == "n0" ? 0 : 1;
      if (!views[n].schedulable) continue;
      scheduler::JobPlacement where{j.id, {{j.node, 0, {0}, 1.0}}};
      if (t == j.start_s) {
        scheduler::JobRequest request;
        request.job_id = j.id;
        request.gpus = 1;
        (*fleet)->OnJobStart(where, request, t * 1000, j.end_s * 1000);
        views[n].devices[0].free_share = 0;
      } else if (t == j.end_s) {
        (*fleet)->OnJobEnd(where, t * 1000);
        views[n].devices[0].free_share = 1;
      }
    }
    (*fleet)->RunPolicy(t * 1000, &views, {});
    for (const auto& v : views)
      if (!v.schedulable && !sim_stops[-1].count(v.worker_id)) {
        sim_stops[t].insert(v.worker_id);
        sim_stops[-1].insert(v.worker_id);
      }

    idle::Snapshot snap;
    for (const auto& v : nodes_) {
      if (down.count(v.worker_id)) continue;
      idle::WorkerInfo w;
      w.id = w.instance_id = v.worker_id;
      w.region = "sa-east-1";
      w.gpu_type = "T4";
      w.joined_at = epoch_;
      w.gpus_total = 1;
      w.gpus_free = 1;
      w.cpu_free = v.cpu_free;
      w.memory_free = v.memory_free;
      w.device_activity = {0.0};
      for (const Job& j : jobs_) {
        if (j.node == v.worker_id && Running(j, t)) {
          w.job_ids.push_back(j.id);
          w.gpus_free = 0;
          w.device_activity = {0.9};
        }
      }
      w.price_per_gpu_hour = pricing::PriceAt(*entry, now).ToDouble();
      w.price_steps = pricing::PriceSteps(*entry, now, absl::Hours(24));
      snap.workers.push_back(std::move(w));
    }
    idle::Decisions d = idle::Decide(*policy, snap, state, now);
    state = std::move(d.state);
    for (const auto& s : d.shutdowns) {
      down.insert(s.worker_id);
      core_stops[t].insert(s.worker_id);
    }
  }
  sim_stops.erase(-1);
  EXPECT_EQ(core_stops, sim_stops);
  // Both stop every node by the end: the history is not trivial.
  EXPECT_EQ(down.size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(Policies, ParityTest,
                         ::testing::Values("cost", "timer:5m"));

}  // namespace
}  // namespace tupa::sim

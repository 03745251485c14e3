// FleetReport: the figures of one tupa-fleet-sim run and their one-line
// JSON form (the line bench/fleet.sh prints and the tests parse). Times
// are milliseconds, rates per second; a percentile with no samples is null.
#ifndef TUPA_BENCH_FLEET_SIM_REPORT_H_
#define TUPA_BENCH_FLEET_SIM_REPORT_H_

#include <map>
#include <string>
#include <vector>

namespace tupa::fleet_sim {

struct LatencySummary {
  long count = 0;
  double p50 = -1, p99 = -1, max = -1;
};

// p50/p99/max of sorted samples.
LatencySummary Summarize(const std::vector<double>& sorted);

struct FleetReport {
  int workers = 0;
  int gpus_per_worker = 0;
  long jobs_requested = 0;
  long jobs = 0;  // acknowledged
  long submit_failed = 0;
  long completed = 0;
  bool timed_out = false;
  double connect_s = 0;  // until every worker was welcomed
  double submits_per_s = 0;
  double completed_jobs_per_s = 0;             // first submit -> last done
  double completed_jobs_per_s_sustained = -1;  // middle 80% of completions
  LatencySummary submit_ack_ms, assign_ms, getjob_ms, listjobs_ms,
      listworkers_ms;
  // The reads begun before --hold-s (under the load) and during it (after
  // every job was acknowledged, or completed).
  LatencySummary load_getjob_ms, load_listjobs_ms, load_listworkers_ms;
  LatencySummary held_getjob_ms, held_listjobs_ms, held_listworkers_ms;
  std::map<std::string, long> rpc_errors;     // unary calls, by code
  std::map<std::string, long> probe_errors;   // reads only, by code
  std::map<std::string, long> stream_errors;  // worker streams lost, by code
  long workers_lost_reconnects = 0;
  long connect_failures = 0;
  long assigns = 0;
  // Heartbeats the simulated workers sent per second over the run, and the
  // interval the scheduler last asked for (0: never changed from Welcome).
  double heartbeats_per_s = 0;
  int heartbeat_interval_ms = 0;
  int max_running_nodes_on_a_worker = 0;
  double scheduler_cpu_s = -1;
  double scheduler_cpu_s_per_1000_jobs = -1;
  double scheduler_rss_mb = -1;       // at the end
  double scheduler_rss_mb_peak = -1;  // sampled each second
  double wall_s = 0;
};

std::string ToJson(const FleetReport& r);

// What tupa-fleet-sim --reader measured (reader.h).
struct ReaderReport {
  LatencySummary getjob_ms, listjobs_ms, listworkers_ms;
  std::map<std::string, long> probe_errors;  // by code
  double wall_s = 0;                         // probing
};

// {"bench": "fleet_reader", "getjob_ms_p50": ..., "wall_s": ...}: one line.
std::string ToJson(const ReaderReport& r);

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_REPORT_H_

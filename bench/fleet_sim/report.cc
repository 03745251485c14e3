#include "bench/fleet_sim/report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/fleet_sim/latency.h"

namespace tupa::fleet_sim {
namespace {

std::string Num(double v) {
  return v < 0 ? "null" : absl::StrFormat("%.1f", v);
}

std::string Rate(double v) {
  return v < 0 ? "null" : absl::StrFormat("%.2f", v);
}

std::string Counts(const std::map<std::string, long>& m) {
  return absl::StrCat("{",
                      absl::StrJoin(m, ", ",
                                    [](std::string* out, const auto& kv) {
                                      absl::StrAppend(out, "\"", kv.first,
                                                      "\": ", kv.second);
                                    }),
                      "}");
}

std::string Latency(const std::string& name, const LatencySummary& s) {
  return absl::StrCat("\"", name, "_p50\": ", Num(s.p50), ", \"", name,
                      "_p99\": ", Num(s.p99), ", \"", name,
                      "_max\": ", Num(s.max), ", \"", name,
                      "_count\": ", s.count);
}

}  // namespace

LatencySummary Summarize(const std::vector<double>& sorted) {
  LatencySummary s;
  s.count = static_cast<long>(sorted.size());
  s.p50 = Percentile(sorted, 0.50);
  s.p99 = Percentile(sorted, 0.99);
  s.max = sorted.empty() ? -1 : sorted.back();
  return s;
}

std::string ToJson(const FleetReport& r) {
  return absl::StrCat(
      "{\"bench\": \"fleet\", \"workers\": ", r.workers,
      ", \"gpus_per_worker\": ", r.gpus_per_worker,
      ", \"jobs_requested\": ", r.jobs_requested, ", \"jobs\": ", r.jobs,
      ", \"submit_failed\": ", r.submit_failed,
      ", \"completed\": ", r.completed,
      ", \"timed_out\": ", r.timed_out ? "true" : "false",
      ", \"connect_s\": ", Rate(r.connect_s),
      ", \"submits_per_s\": ", Rate(r.submits_per_s),
      ", \"completed_jobs_per_s\": ", Rate(r.completed_jobs_per_s),
      ", \"completed_jobs_per_s_sustained\": ",
      Rate(r.completed_jobs_per_s_sustained), ", ",
      Latency("submit_ack_ms", r.submit_ack_ms), ", ",
      Latency("assign_ms", r.assign_ms), ", ",
      Latency("getjob_ms", r.getjob_ms), ", ",
      Latency("listjobs_ms", r.listjobs_ms), ", ",
      Latency("listworkers_ms", r.listworkers_ms), ", ",
      Latency("load_getjob_ms", r.load_getjob_ms), ", ",
      Latency("load_listjobs_ms", r.load_listjobs_ms), ", ",
      Latency("load_listworkers_ms", r.load_listworkers_ms), ", ",
      Latency("held_getjob_ms", r.held_getjob_ms), ", ",
      Latency("held_listjobs_ms", r.held_listjobs_ms), ", ",
      Latency("held_listworkers_ms", r.held_listworkers_ms),
      ", \"rpc_errors\": ", Counts(r.rpc_errors),
      ", \"probe_errors\": ", Counts(r.probe_errors),
      ", \"stream_errors\": ", Counts(r.stream_errors),
      ", \"workers_lost_reconnects\": ", r.workers_lost_reconnects,
      ", \"connect_failures\": ", r.connect_failures,
      ", \"assigns\": ", r.assigns,
      ", \"heartbeats_per_s\": ", Rate(r.heartbeats_per_s),
      ", \"heartbeat_interval_ms\": ", r.heartbeat_interval_ms,
      ", \"max_running_nodes_on_a_worker\": ", r.max_running_nodes_on_a_worker,
      ", \"scheduler_cpu_s\": ", Rate(r.scheduler_cpu_s),
      ", \"scheduler_cpu_s_per_1000_jobs\": ",
      Rate(r.scheduler_cpu_s_per_1000_jobs),
      ", \"scheduler_rss_mb\": ", Num(r.scheduler_rss_mb),
      ", \"scheduler_rss_mb_peak\": ", Num(r.scheduler_rss_mb_peak),
      ", \"wall_s\": ", Rate(r.wall_s), "}");
}

std::string ToJson(const ReaderReport& r) {
  return absl::StrCat("{\"bench\": \"fleet_reader\", ",
                      Latency("getjob_ms", r.getjob_ms), ", ",
                      Latency("listjobs_ms", r.listjobs_ms), ", ",
                      Latency("listworkers_ms", r.listworkers_ms),
                      ", \"probe_errors\": ", Counts(r.probe_errors),
                      ", \"wall_s\": ", Rate(r.wall_s), "}");
}

}  // namespace tupa::fleet_sim

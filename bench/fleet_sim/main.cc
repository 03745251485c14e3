// tupa-fleet-sim: flags -> FleetSimOptions -> RunFleetSim() -> one JSON
// line on stdout. Drives a real tupa-scheduler with N simulated workers in
// this one process (each its own channel and Connect stream, speaking the
// worker protocol), M submitted jobs and read probes; see bench/README.md.
// Exit status: 0 the run finished, 1 it hit --duration-limit-s or the
// scheduler could not be reached, 2 bad flags.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "bench/fleet_sim/fleet_sim.h"
#include "bench/fleet_sim/reader.h"
#include "common/flag_names.h"

ABSL_FLAG(std::string, scheduler, "127.0.0.1:50051", "scheduler host:port");
ABSL_FLAG(std::string, join_token_file, "",
          "file holding the workers' join token (the scheduler's "
          "--join-token-file)");
ABSL_FLAG(int, workers, 100,
          "simulated workers (ids sim-1..N); 0: submit and probe only, "
          "completion seen by polling GetJob");
ABSL_FLAG(int, wait_workers, 0,
          "before submitting, wait until ListWorkers shows this many up");
ABSL_FLAG(std::string, worker_prefix, "sim-", "worker id prefix");
ABSL_FLAG(int, gpus_per_worker, 8, "fake devices per worker");
ABSL_FLAG(std::string, gpu_type, "SIM", "GPU type of the fake devices");
ABSL_FLAG(std::string, cpu_per_worker, "64",
          "cores each worker advertises; a list C1,C2,... cycles over the "
          "workers");
ABSL_FLAG(int64_t, memory_gib_per_worker, 512, "memory each worker advertises");
ABSL_FLAG(std::string, region, "sim", "region the workers advertise");
ABSL_FLAG(double, progress_hz, 0, "progress reports per running node per s");
ABSL_FLAG(double, log_hz, 0, "log lines per running node per s");
ABSL_FLAG(int, jobs, 1000, "jobs to submit");
ABSL_FLAG(int, clients, 32, "concurrent submitting clients");
ABSL_FLAG(double, submit_rate, 0,
          "submit at most this many jobs per second, paced (0: as fast as "
          "the clients' acks allow)");
ABSL_FLAG(std::string, mix, "default",
          "job mix: KIND[:WEIGHT],... with KIND 1 2 4 8 0.5 gang none cpu; "
          "default = 1:30,2:15,4:15,8:15,gang:5,0.5:20 (3.3 GPUs a job); "
          "openb = the Alibaba openb pods' requests, "
          "1:3911,0.5:3078,cpu:1088,8:44,2:16,4:15,gang:10 (0.75 GPU a "
          "job)");
ABSL_FLAG(std::string, runtime_ms, "2000-5000",
          "simulated run time of each job, uniform in MIN-MAX (or one value)");
ABSL_FLAG(int, retries, 2, "JobSpec.retries of every job");
ABSL_FLAG(std::string, team, "fleet", "team of every job");
ABSL_FLAG(std::string, key_prefix, "",
          "idempotency key prefix (default: fleet-<unix ms>-)");
ABSL_FLAG(double, probe_hz, 20,
          "GetJob, ListJobs and ListWorkers probes per second, each");
ABSL_FLAG(double, probe_deadline_s, 10, "deadline of each probe");
ABSL_FLAG(bool, submitted_only, false,
          "end once every job is acknowledged (do not wait for completion)");
ABSL_FLAG(double, hold_s, 0,
          "keep probing this long after the end condition (e.g. with "
          "--submitted-only: reads over a deep pending queue); the reads "
          "begun then are also reported as held_*");
ABSL_FLAG(double, duration_limit_s, 600,
          "give up this long after the first submit (report timed_out)");
ABSL_FLAG(double, connect_timeout_s, 120, "wait this long for the fleet");
ABSL_FLAG(int, scheduler_pid, 0, "read CPU and RSS from /proc/<pid>");
ABSL_FLAG(bool, reader, false,
          "only probe reads, as a user outside the fleet: no workers, no "
          "submits; GetJob of the jobs the ListJobs probes return; from "
          "--wait-workers up until SIGINT/SIGTERM or --duration-limit-s; "
          "prints a \"fleet_reader\" line (bench/fleet.sh runs one)");
ABSL_FLAG(std::string, record, "",
          "write one JSON line per node run to this file");

namespace {

std::atomic<bool> stop_reading{false};

void StopReading(int) { stop_reading.store(true); }

// --reader: probes until a signal; exit 0 with its line, 1 unreachable.
int RunReaderMain(const tupa::fleet_sim::FleetSimOptions& options) {
  struct sigaction sa {};
  sa.sa_handler = StopReading;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  absl::StatusOr<tupa::fleet_sim::ReaderReport> report =
      tupa::fleet_sim::RunReader(options, stop_reading);
  if (!report.ok()) {
    std::cerr << "tupa-fleet-sim --reader: " << report.status() << "\n";
    std::_Exit(1);
  }
  std::printf("%s\n", tupa::fleet_sim::ToJson(*report).c_str());
  std::fflush(stdout);
  std::_Exit(0);
}

absl::Status ParseRange(const std::string& text, int* lo, int* hi) {
  std::vector<std::string> parts = absl::StrSplit(text, '-');
  if (parts.size() == 1) parts.push_back(parts[0]);
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], lo) ||
      !absl::SimpleAtoi(parts[1], hi) || *lo < 0 || *hi < *lo)
    return absl::InvalidArgumentError(
        "--runtime-ms: want MIN-MAX (milliseconds, MIN <= MAX) or one value");
  return absl::OkStatus();
}

absl::Status OptionsFromFlags(tupa::fleet_sim::FleetSimOptions& o) {
  o.scheduler = absl::GetFlag(FLAGS_scheduler);
  if (const std::string f = absl::GetFlag(FLAGS_join_token_file); !f.empty()) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return absl::InvalidArgumentError("--join-token-file: unreadable");
    o.join_token = std::string(absl::StripAsciiWhitespace(text.str()));
  }
  o.workers = absl::GetFlag(FLAGS_workers);
  o.wait_workers = absl::GetFlag(FLAGS_wait_workers);
  o.worker_prefix = absl::GetFlag(FLAGS_worker_prefix);
  o.gpus_per_worker = absl::GetFlag(FLAGS_gpus_per_worker);
  o.gpu_type = absl::GetFlag(FLAGS_gpu_type);
  o.cpu_per_worker.clear();
  for (absl::string_view c :
       absl::StrSplit(absl::GetFlag(FLAGS_cpu_per_worker), ',')) {
    double v = 0;
    if (!absl::SimpleAtod(c, &v) || v < 0)
      return absl::InvalidArgumentError(
          "--cpu-per-worker: want cores (>= 0), or a list C1,C2,...");
    o.cpu_per_worker.push_back(v);
  }
  o.memory_bytes_per_worker = absl::GetFlag(FLAGS_memory_gib_per_worker) << 30;
  o.region = absl::GetFlag(FLAGS_region);
  o.progress_hz = absl::GetFlag(FLAGS_progress_hz);
  o.log_hz = absl::GetFlag(FLAGS_log_hz);
  o.jobs = absl::GetFlag(FLAGS_jobs);
  o.clients = absl::GetFlag(FLAGS_clients);
  o.submit_rate = absl::GetFlag(FLAGS_submit_rate);
  o.mix = absl::GetFlag(FLAGS_mix);
  if (absl::Status s = ParseRange(absl::GetFlag(FLAGS_runtime_ms),
                                  &o.runtime_min_ms, &o.runtime_max_ms);
      !s.ok())
    return s;
  o.retries = absl::GetFlag(FLAGS_retries);
  o.team = absl::GetFlag(FLAGS_team);
  o.key_prefix = absl::GetFlag(FLAGS_key_prefix);
  o.probe_hz = absl::GetFlag(FLAGS_probe_hz);
  o.probe_deadline = absl::Seconds(absl::GetFlag(FLAGS_probe_deadline_s));
  o.submitted_only = absl::GetFlag(FLAGS_submitted_only);
  o.hold = absl::Seconds(absl::GetFlag(FLAGS_hold_s));
  o.duration_limit = absl::Seconds(absl::GetFlag(FLAGS_duration_limit_s));
  o.connect_timeout = absl::Seconds(absl::GetFlag(FLAGS_connect_timeout_s));
  o.scheduler_pid = absl::GetFlag(FLAGS_scheduler_pid);
  o.record_path = absl::GetFlag(FLAGS_record);
  if (o.workers < 0 || o.jobs < 0 || o.clients < 1 || o.gpus_per_worker < 0)
    return absl::InvalidArgumentError(
        "--workers, --jobs, --gpus-per-worker must be >= 0, --clients >= 1");
  if (o.progress_hz < 0 || o.log_hz < 0 || o.probe_hz < 0 || o.submit_rate < 0)
    return absl::InvalidArgumentError("rates must be >= 0");
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "tupa-fleet-sim: simulated workers, submits and read probes against a "
      "real tupa-scheduler; prints one JSON line");
  tupa::NormalizeFlagNames(argc, argv);  // --gpus-per-worker, as daemons
  absl::ParseCommandLine(argc, argv);
  // As in the daemons (common/daemon.cc): no debug-build deadlock detector.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  tupa::fleet_sim::FleetSimOptions options;
  if (absl::Status s = OptionsFromFlags(options); !s.ok()) {
    std::cerr << "tupa-fleet-sim: " << s.message() << "\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_reader)) return RunReaderMain(options);
  absl::StatusOr<tupa::fleet_sim::FleetReport> report =
      tupa::fleet_sim::RunFleetSim(options);
  if (!report.ok()) {
    std::cerr << "tupa-fleet-sim: " << report.status() << "\n";
    std::_Exit(absl::IsInvalidArgument(report.status()) ? 2 : 1);
  }
  std::printf("%s\n", tupa::fleet_sim::ToJson(*report).c_str());
  std::fflush(stdout);
  // Thousands of streams are still winding down inside gRPC: exit without
  // tearing it (and the objects its callbacks use) down.
  std::_Exit(report->timed_out ? 1 : 0);
}

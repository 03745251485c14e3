#include "bench/fleet_sim/fleet_sim.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bench/fleet_sim/job_mix.h"
#include "bench/fleet_sim/job_tracker.h"
#include "bench/fleet_sim/latency.h"
#include "bench/fleet_sim/prober.h"
#include "bench/fleet_sim/proc_stats.h"
#include "bench/fleet_sim/run_record.h"
#include "bench/fleet_sim/sim_worker.h"
#include "bench/fleet_sim/submitter.h"
#include "bench/fleet_sim/timer_queue.h"
#include "tupa/v1/cluster.grpc.pb.h"

namespace tupa::fleet_sim {
namespace {

constexpr int kTimerThreads = 2;
constexpr int kConnectBatch = 50;  // workers started per 20 ms

// The scheduler's peak RSS, sampled every second on the timer pool.
class RssSampler {
 public:
  RssSampler(int pid, TimerQueue* timers) : pid_(pid), timers_(timers) {}
  void Start() { Sample(); }
  void Stop() {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  double peak() {
    absl::MutexLock lock(&mu_);
    return peak_;
  }

 private:
  void Sample() {
    auto s = ReadProcSample(pid_);
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    if (s.ok()) peak_ = std::max(peak_, s->rss_mb);
    timers_->After(absl::Seconds(1), [this] { Sample(); });
  }
  const int pid_;
  TimerQueue* const timers_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  double peak_ ABSL_GUARDED_BY(mu_) = -1;
};

// Jobs completed per second over the middle 80% of completions (the ramp
// up and the tail left out); -1 with fewer than 10.
double SustainedRate(const std::vector<absl::Time>& done) {
  if (done.size() < 10) return -1;
  const size_t lo = done.size() / 10;
  const size_t hi =
      static_cast<size_t>(std::ceil(0.9 * static_cast<double>(done.size()))) -
      1;
  const double s = absl::ToDoubleSeconds(done[hi] - done[lo]);
  return s > 0 ? static_cast<double>(hi - lo) / s : -1;
}

// Starts the fleet and waits until every worker was welcomed (or the
// timeout); returns the seconds it took.
absl::StatusOr<double> ConnectFleet(
    const FleetSimOptions& o, FleetContext* fleet,
    std::vector<std::unique_ptr<SimWorker>>* workers) {
  const absl::Time began = absl::Now();
  for (int i = 1; i <= o.workers; ++i) {
    SimWorkerConfig c;
    c.scheduler = o.scheduler;
    c.join_token = o.join_token;
    c.id = absl::StrCat(o.worker_prefix, i);
    c.region = o.region;
    c.gpu_type = o.gpu_type;
    c.gpus = o.gpus_per_worker;
    c.cpu = o.cpu_per_worker[(i - 1) % o.cpu_per_worker.size()];
    c.memory_bytes = o.memory_bytes_per_worker;
    c.progress_hz = o.progress_hz;
    c.log_hz = o.log_hz;
    workers->push_back(std::make_unique<SimWorker>(std::move(c), fleet));
    workers->back()->Start();
    if (i % kConnectBatch == 0) absl::SleepFor(absl::Milliseconds(20));
  }
  const absl::Time deadline = began + o.connect_timeout;
  while (fleet->welcomed.load() < o.workers && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(20));
  if (o.workers > 0 && fleet->welcomed.load() == 0)
    return absl::UnavailableError(
        absl::StrCat("no simulated worker could connect to ", o.scheduler,
                     " within ", absl::FormatDuration(o.connect_timeout)));
  return absl::ToDoubleSeconds(absl::Now() - began);
}

}  // namespace

absl::Status WaitForWorkersUp(const std::string& scheduler, int want,
                              absl::Duration timeout) {
  auto stub = v1::ClusterService::NewStub(
      grpc::CreateChannel(scheduler, grpc::InsecureChannelCredentials()));
  const absl::Time deadline = absl::Now() + timeout;
  long up = 0;
  while (absl::Now() < deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    v1::ListWorkersRequest req;
    v1::ListWorkersResponse resp;
    if (stub->ListWorkers(&ctx, req, &resp).ok()) {
      up = 0;
      for (const v1::Worker& w : resp.workers())
        up += w.state() == v1::WORKER_STATE_UP;
      if (up >= want) return absl::OkStatus();
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  return absl::UnavailableError(
      absl::StrCat("only ", up, " of ", want, " workers up at ", scheduler,
                   " after ", absl::FormatDuration(timeout)));
}

absl::StatusOr<FleetReport> RunFleetSim(const FleetSimOptions& o) {
  JobMixOptions mix_options;
  mix_options.mix = o.mix;
  mix_options.runtime_min_ms = o.runtime_min_ms;
  mix_options.runtime_max_ms = o.runtime_max_ms;
  mix_options.retries = o.retries;
  mix_options.team = o.team;
  absl::StatusOr<JobMix> mix = JobMix::Parse(mix_options);
  if (!mix.ok()) return mix.status();
  // Heap-allocated and never freed: gRPC callbacks may still reach them
  // while the process exits.
  auto* record = new RunRecord;
  if (absl::Status s = record->Open(o.record_path); !s.ok()) return s;
  auto* timers = new TimerQueue(kTimerThreads);
  auto* tracker = new JobTracker;
  auto* fleet = new FleetContext;
  fleet->timers = timers;
  fleet->tracker = tracker;
  fleet->record = record;
  auto* workers = new std::vector<std::unique_ptr<SimWorker>>;

  FleetReport r;
  r.workers = o.workers;
  r.gpus_per_worker = o.gpus_per_worker;
  r.jobs_requested = o.jobs;
  absl::StatusOr<double> connect = ConnectFleet(o, fleet, workers);
  if (!connect.ok()) return connect.status();
  r.connect_s = *connect;
  if (o.wait_workers > 0) {
    const absl::Time began = absl::Now();
    if (absl::Status s =
            WaitForWorkersUp(o.scheduler, o.wait_workers, o.connect_timeout);
        !s.ok())
      return s;
    r.connect_s += absl::ToDoubleSeconds(absl::Now() - began);
  }

  std::optional<ProcSample> cpu_before;
  RssSampler* rss = nullptr;
  if (o.scheduler_pid > 0) {
    if (auto s = ReadProcSample(o.scheduler_pid); s.ok()) cpu_before = *s;
    rss = new RssSampler(o.scheduler_pid, timers);
    rss->Start();
  }

  auto* rpc_errors = new ErrorCounts;
  auto* acks = new LatencySamples;
  auto* probes = new ProbeLatencies;
  SubmitterOptions so;
  so.scheduler = o.scheduler;
  so.clients = o.clients;
  so.rate = o.submit_rate;
  so.jobs = o.jobs;
  so.key_prefix =
      o.key_prefix.empty()
          ? absl::StrCat("fleet-", absl::ToUnixMillis(absl::Now()), "-")
          : o.key_prefix;
  auto* submitter = new Submitter(so, &*mix, tracker, timers, rpc_errors, acks);
  auto* prober = new Prober(o.scheduler, o.probe_hz, o.probe_deadline, tracker,
                            timers, rpc_errors, probes);
  CompletionPoller* poller = nullptr;
  if (o.workers == 0 && !o.submitted_only)
    poller = new CompletionPoller(o.scheduler, 16, tracker, timers, rpc_errors);

  const long heartbeats_before = fleet->heartbeats.load();
  prober->Start();
  submitter->Start();
  if (poller) poller->Start();
  const absl::Time began = submitter->first_start();
  const absl::Time deadline = began + o.duration_limit;
  const long jobs = o.jobs;
  const bool submitted_only = o.submitted_only;
  const bool done = tracker->WaitFor(
      deadline,
      [jobs, submitted_only](long acked, long failed, long completed) {
        if (acked + failed < jobs) return false;
        return submitted_only || completed >= acked;
      });
  r.timed_out = !done;
  if (done && o.hold > absl::ZeroDuration()) {
    prober->MarkHeld();
    absl::SleepFor(std::min(
        o.hold, std::max(absl::ZeroDuration(), deadline - absl::Now())));
  }
  const absl::Time ended = absl::Now();
  submitter->Stop();
  if (poller) poller->Stop();
  prober->Stop();

  if (o.scheduler_pid > 0) {
    if (auto s = ReadProcSample(o.scheduler_pid); s.ok()) {
      r.scheduler_rss_mb = s->rss_mb;
      if (cpu_before) r.scheduler_cpu_s = s->cpu_s - cpu_before->cpu_s;
    }
    rss->Stop();
    r.scheduler_rss_mb_peak = rss->peak();
  }
  r.jobs = tracker->acked();
  r.submit_failed = tracker->failed();
  r.completed = tracker->completed();
  const double submit_s = absl::ToDoubleSeconds(submitter->last_ack() - began);
  r.submits_per_s = submit_s > 0 ? static_cast<double>(r.jobs) / submit_s : -1;
  const std::vector<absl::Time> completions = tracker->CompletionTimes();
  if (!completions.empty()) {
    const double s = absl::ToDoubleSeconds(completions.back() - began);
    r.completed_jobs_per_s =
        s > 0 ? static_cast<double>(completions.size()) / s : -1;
    r.completed_jobs_per_s_sustained = SustainedRate(completions);
  }
  r.submit_ack_ms = Summarize(acks->Sorted());
  if (o.workers > 0) r.assign_ms = Summarize(tracker->AssignLatencies());
  r.getjob_ms = Summarize(probes->get_job.Sorted());
  r.listjobs_ms = Summarize(probes->list_jobs.Sorted());
  r.listworkers_ms = Summarize(probes->list_workers.Sorted());
  r.load_getjob_ms = Summarize(probes->load_get_job.Sorted());
  r.load_listjobs_ms = Summarize(probes->load_list_jobs.Sorted());
  r.load_listworkers_ms = Summarize(probes->load_list_workers.Sorted());
  r.held_getjob_ms = Summarize(probes->held_get_job.Sorted());
  r.held_listjobs_ms = Summarize(probes->held_list_jobs.Sorted());
  r.held_listworkers_ms = Summarize(probes->held_list_workers.Sorted());
  r.rpc_errors = rpc_errors->Snapshot();
  for (ErrorCounts* e : {&probes->get_job_errors, &probes->list_jobs_errors,
                         &probes->list_workers_errors})
    for (const auto& [code, n] : e->Snapshot()) r.probe_errors[code] += n;
  r.stream_errors = fleet->stream_ends.Snapshot();
  r.workers_lost_reconnects = fleet->reconnects.load();
  r.connect_failures = fleet->connect_failures.load();
  r.assigns = fleet->assigns.load();
  r.max_running_nodes_on_a_worker = fleet->max_running_nodes.load();
  const long per = submitted_only ? r.jobs : r.completed;
  if (r.scheduler_cpu_s >= 0 && per > 0)
    r.scheduler_cpu_s_per_1000_jobs =
        r.scheduler_cpu_s * 1000.0 / static_cast<double>(per);
  r.wall_s = absl::ToDoubleSeconds(ended - began);
  if (r.wall_s > 0)
    r.heartbeats_per_s =
        static_cast<double>(fleet->heartbeats.load() - heartbeats_before) /
        r.wall_s;
  r.heartbeat_interval_ms = fleet->heartbeat_interval_ms.load();

  // Timers stopped first: no node ends after it was recorded unfinished.
  for (auto& w : *workers) w->Stop();
  timers->Stop();
  for (auto& w : *workers) w->RecordUnfinished();
  record->Flush();
  return r;
}

}  // namespace tupa::fleet_sim

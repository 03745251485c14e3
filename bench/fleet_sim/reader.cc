#include "bench/fleet_sim/reader.h"

#include "bench/fleet_sim/fleet_sim.h"
#include "bench/fleet_sim/job_tracker.h"
#include "bench/fleet_sim/latency.h"
#include "bench/fleet_sim/prober.h"
#include "bench/fleet_sim/timer_queue.h"

namespace tupa::fleet_sim {

absl::StatusOr<ReaderReport> RunReader(const FleetSimOptions& o,
                                       const std::atomic<bool>& stop) {
  // In short waits, so that a signal during the wait ends it.
  const absl::Time give_up = absl::Now() + o.connect_timeout;
  while (o.wait_workers > 0 && !stop.load()) {
    absl::Status s =
        WaitForWorkersUp(o.scheduler, o.wait_workers, absl::Seconds(1));
    if (s.ok()) break;
    if (absl::Now() > give_up) return s;
  }
  // Leaked like the simulator's: gRPC may still run a last callback after
  // the report is printed, and main() exits without tearing gRPC down.
  auto* timers = new TimerQueue(1);
  auto* tracker = new JobTracker;  // stays empty: ids come from ListJobs
  auto* errors = new ErrorCounts;
  auto* probes = new ProbeLatencies;
  auto* prober = new Prober(o.scheduler, o.probe_hz, o.probe_deadline, tracker,
                            timers, errors, probes);
  const absl::Time began = absl::Now();
  const absl::Time deadline = began + o.duration_limit;
  prober->Start();
  while (!stop.load() && absl::Now() < deadline)
    absl::SleepFor(absl::Milliseconds(50));
  const absl::Time ended = absl::Now();
  prober->Stop();
  timers->Stop();

  ReaderReport r;
  r.getjob_ms = Summarize(probes->get_job.Sorted());
  r.listjobs_ms = Summarize(probes->list_jobs.Sorted());
  r.listworkers_ms = Summarize(probes->list_workers.Sorted());
  r.probe_errors = errors->Snapshot();
  r.wall_s = absl::ToDoubleSeconds(ended - began);
  return r;
}

}  // namespace tupa::fleet_sim

// SchedulerMetrics: every Prometheus family the scheduler exports, declared
// in one place (docs/observability.md lists them with their labels).
//
// Counters and histograms are fed by one-line calls at the points where the
// core changes state (JobSubmitted, JobPlaced, ...). Gauges that describe
// the current view (jobs by state and team, GPUs per worker and type,
// stranded GPUs, workers by state, training progress) are rebuilt as a
// whole by Update() from a MetricsView the core takes under its lock at the
// end of every scheduling cycle, so a job or worker that leaves the view
// leaves /metrics too. GPU-seconds are accrued in Update() from the
// allocations of the view. Thread-safe.
#ifndef TUPA_SCHEDULER_SERVICE_SCHEDULER_METRICS_H_
#define TUPA_SCHEDULER_SERVICE_SCHEDULER_METRICS_H_

#include <google/protobuf/timestamp.pb.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "scheduler/placement/placement.h"
#include "tupa/v1/cluster.pb.h"
#include "tupa/v1/job.pb.h"

namespace tupa::scheduler {

// What Update() needs of the core's view; plain copies, no pointers in.
struct MetricsView {
  struct Job {
    int64_t id = 0;
    std::string team;
    v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
    int32_t attempt = 0;
    bool has_progress = false;
    v1::Progress progress;
  };
  struct Allocation {  // one node of a job attempt holding devices
    std::string team;
    std::string user;
    std::string gpu_type;
    double gpus = 0;  // share x devices
  };
  std::vector<Job> jobs;  // not yet ended
  std::vector<Allocation> allocations;
  std::vector<NodeView> nodes;  // up or draining workers, free shares
  // Pending GPU jobs as placement sees them; copies of one shape (GPUs,
  // CPU, memory, no type or label) may come once.
  std::vector<JobRequest> pending;
  std::vector<std::pair<std::string, v1::WorkerState>> workers;
  absl::Duration cycle;  // how long this scheduling cycle took
};

// Free GPUs (by worker and GPU type) that no pending GPU job could use:
// free device shares on schedulable workers where no pending job's per-node
// request (GPU count or share, type, CPU, memory, labels) fits now. Empty
// when no GPU job pends (idle GPUs are then simply free, not stranded).
std::map<std::pair<std::string, std::string>, double> StrandedGpus(
    const std::vector<NodeView>& nodes, const std::vector<JobRequest>& pending);

class SchedulerMetrics {
 public:
  SchedulerMetrics();
  SchedulerMetrics(const SchedulerMetrics&) = delete;
  SchedulerMetrics& operator=(const SchedulerMetrics&) = delete;

  // What the exposer serves.
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables() const;

  void JobSubmitted(const v1::JobSpec& spec);
  // An attempt was assigned; its queue wait runs from submission (first
  // attempt) or from the last requeue.
  void JobPlaced(int64_t job_id, const std::string& team,
                 const google::protobuf::Timestamp& created_at, absl::Time now);
  void JobRequeued(int64_t job_id, const std::string& team, absl::Time now);
  void JobFinished(int64_t job_id, const std::string& team, v1::JobState state);
  void WorkerLost();
  // Heartbeats received, and the interval workers are told to beat at
  // (heartbeat_rate.h).
  void HeartbeatReceived();
  void SetHeartbeatInterval(absl::Duration interval);
  // One commit of the loop's write batch, of `changes` job state changes.
  void BatchCommitted(size_t changes);
  // Idle policy (scheduler/idle): shutdowns with the money they save per
  // hour, scale-up requests, zombie jobs.
  void IdleShutdown(const std::string& gpu_type, double saved_per_hour);
  void ScaleUpRequested(const std::string& pool);
  void ZombieJob(const std::string& action);
  // A worker of `region` and `gpu_type` joined: the event counters of its
  // pool that may never fire (idle shutdowns and what they save, scale-ups,
  // idle cost; `currency` empty without a price catalog) are exported at 0
  // from now on, so rate() reads 0 rather than "no data". Zombie jobs'
  // actions (flag, cancel) are exported at 0 from the start.
  void KnownPool(const std::string& region, const std::string& gpu_type,
                 const std::string& currency);
  // Live workers by the idle policy's verdict of the last cycle
  // (tupa_idle_workers{verdict}: BUSY, WARM_PAYS, KEEP_WARM, ...); verdicts
  // absent from `counts` read 0.
  void IdleVerdicts(const std::map<std::string, int>& counts);

  // Money, fed by the pricing integration (scheduler/pricing): the cost a
  // team's allocations accrued, and the cost of GPUs that were up but idle.
  // Money, in the catalog's currency: what allocations cost as they close,
  // and what unallocated devices of live workers cost as time passes.
  void AddCost(const std::string& team, const std::string& user,
               const std::string& gpu_type, const std::string& currency,
               double amount);
  void AddIdleCost(const std::string& gpu_type, const std::string& currency,
                   double amount);
  // What workers stopped by the idle policy would have cost meanwhile.
  void AddIdleShutdownSaved(const std::string& gpu_type,
                            const std::string& currency, double amount);
  // A team's monthly budget (PriceCatalog::MonthlyBudget), for the
  // burn-rate alert.
  void SetTeamBudget(const std::string& team, const std::string& currency,
                     double monthly_budget);

  // Rebuilds every gauge from `view`, observes the cycle duration and
  // accrues GPU-seconds for the time since the previous Update().
  void Update(const MetricsView& view, absl::Time now);

 private:
  void TouchTeam(const std::string& team) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<GaugeSnapshot> gauges_;
  prometheus::Family<prometheus::Counter>& submissions_;
  prometheus::Family<prometheus::Counter>& placements_;
  prometheus::Family<prometheus::Counter>& failures_;
  prometheus::Family<prometheus::Counter>& requeues_;
  prometheus::Family<prometheus::Counter>& finished_;
  prometheus::Counter& workers_lost_;
  prometheus::Counter& heartbeats_;
  prometheus::Gauge& heartbeat_interval_;
  prometheus::Family<prometheus::Counter>& idle_shutdowns_;
  prometheus::Family<prometheus::Counter>& saved_per_hour_;
  prometheus::Family<prometheus::Counter>& scale_ups_;
  prometheus::Family<prometheus::Counter>& zombies_;
  prometheus::Family<prometheus::Gauge>& idle_verdicts_;
  prometheus::Family<prometheus::Counter>& gpu_seconds_;
  prometheus::Family<prometheus::Counter>& gpu_seconds_idle_;
  prometheus::Family<prometheus::Counter>& cost_;
  prometheus::Family<prometheus::Counter>& idle_cost_;
  prometheus::Family<prometheus::Counter>& idle_saved_;
  prometheus::Family<prometheus::Gauge>& budget_;
  prometheus::Family<prometheus::Histogram>& queue_wait_;
  prometheus::Histogram& cycle_;
  prometheus::Histogram& write_batch_;

  absl::Mutex mu_;
  std::set<std::string> teams_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> verdicts_seen_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, absl::Time> requeued_at_ ABSL_GUARDED_BY(mu_);
  // job -> (last step, when it last advanced), for the stall alert.
  std::map<int64_t, std::pair<int64_t, absl::Time>> steps_ ABSL_GUARDED_BY(mu_);
  absl::Time last_update_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_SCHEDULER_METRICS_H_

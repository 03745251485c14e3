#include "scheduler/service/scheduler_metrics.h"

#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "scheduler/idle/policy.h"

namespace tupa::scheduler {
namespace {

using google::protobuf::util::TimeUtil;
using Labels = std::vector<std::pair<std::string, std::string>>;

constexpr double kEps = 1e-9;

const prometheus::Histogram::BucketBoundaries& QueueWaitBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.1, 0.5, 1,   2,    5,    10,   30,    60,
      120, 300, 600, 1800, 3600, 7200, 21600, 86400};
  return *b;
}

const prometheus::Histogram::BucketBoundaries& CycleBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};
  return *b;
}

// "pending" for JOB_STATE_PENDING.
std::string StateLabel(v1::JobState state) {
  std::string name = v1::JobState_Name(state);
  if (name.rfind("JOB_STATE_", 0) == 0) name = name.substr(10);
  return absl::AsciiStrToLower(name);
}

std::string WorkerStateLabel(v1::WorkerState state) {
  std::string name = v1::WorkerState_Name(state);
  if (name.rfind("WORKER_STATE_", 0) == 0) name = name.substr(13);
  return absl::AsciiStrToLower(name);
}

bool TypeAllowed(const JobRequest& job, const std::string& type) {
  return job.gpu_types.empty() ||
         std::find(job.gpu_types.begin(), job.gpu_types.end(), type) !=
             job.gpu_types.end();
}

// Whether one node of `job` fits the free resources of `node` now.
bool FitsNow(const NodeView& node, const JobRequest& job) {
  if (!node.schedulable) return false;
  if (node.cpu_free + kEps < job.cpu) return false;
  if (job.memory > 0 && node.memory_free < job.memory) return false;
  for (const auto& [k, v] : job.labels) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) return false;
  }
  if (job.gpus < 1) {
    for (const DeviceSlot& d : node.devices)
      if (TypeAllowed(job, d.gpu_type) && d.free_share + kEps >= job.gpus)
        return true;
    return false;
  }
  std::map<std::string, int> whole_free;  // a job uses devices of one type
  for (const DeviceSlot& d : node.devices)
    if (TypeAllowed(job, d.gpu_type) && d.free_share + kEps >= 1)
      ++whole_free[d.gpu_type];
  const int need = static_cast<int>(std::ceil(job.gpus - kEps));
  for (const auto& [type, n] : whole_free)
    if (n >= need) return true;
  return false;
}

}  // namespace

std::map<std::pair<std::string, std::string>, double> StrandedGpus(
    const std::vector<NodeView>& nodes,
    const std::vector<JobRequest>& pending) {
  std::map<std::pair<std::string, std::string>, double> stranded;
  // One request per per-node shape: a deep queue is mostly copies of a few
  // (an array, a sweep), and each is tried against every node.
  const auto shape = [](const JobRequest* j) {
    return std::tie(j->gpus, j->cpu, j->memory, j->gpu_types, j->labels);
  };
  std::vector<const JobRequest*> gpu_jobs;
  for (const JobRequest& j : pending)
    if (j.gpus > 0) gpu_jobs.push_back(&j);
  if (gpu_jobs.empty()) return stranded;
  std::sort(gpu_jobs.begin(), gpu_jobs.end(),
            [&](const JobRequest* a, const JobRequest* b) {
              return shape(a) < shape(b);
            });
  gpu_jobs.erase(std::unique(gpu_jobs.begin(), gpu_jobs.end(),
                             [&](const JobRequest* a, const JobRequest* b) {
                               return shape(a) == shape(b);
                             }),
                 gpu_jobs.end());
  for (const NodeView& node : nodes) {
    if (!node.schedulable) continue;
    // A node without a free share strands nothing, whatever pends.
    if (std::none_of(node.devices.begin(), node.devices.end(),
                     [](const DeviceSlot& d) { return d.free_share > kEps; }))
      continue;
    bool usable = false;
    for (const JobRequest* j : gpu_jobs) usable = usable || FitsNow(node, *j);
    if (usable) continue;
    for (const DeviceSlot& d : node.devices)
      if (d.free_share > kEps)
        stranded[{node.worker_id, d.gpu_type}] += d.free_share;
  }
  return stranded;
}

SchedulerMetrics::SchedulerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      gauges_(std::make_shared<GaugeSnapshot>()),
      submissions_(prometheus::BuildCounter()
                       .Name("tupa_job_submissions_total")
                       .Help("Jobs submitted (created), by team.")
                       .Register(*registry_)),
      placements_(prometheus::BuildCounter()
                      .Name("tupa_job_placements_total")
                      .Help("Job attempts assigned to workers, by team.")
                      .Register(*registry_)),
      failures_(prometheus::BuildCounter()
                    .Name("tupa_job_failures_total")
                    .Help("Jobs that ended FAILED, by team.")
                    .Register(*registry_)),
      requeues_(prometheus::BuildCounter()
                    .Name("tupa_job_requeues_total")
                    .Help("Job attempts that lost a node and were requeued, "
                          "by team.")
                    .Register(*registry_)),
      finished_(prometheus::BuildCounter()
                    .Name("tupa_jobs_finished_total")
                    .Help("Jobs that ended, by team and final state.")
                    .Register(*registry_)),
      workers_lost_(prometheus::BuildCounter()
                        .Name("tupa_workers_lost_total")
                        .Help("Workers declared lost (lease expired).")
                        .Register(*registry_)
                        .Add({})),
      heartbeats_(prometheus::BuildCounter()
                      .Name("tupa_worker_heartbeats_total")
                      .Help("Heartbeats received from workers.")
                      .Register(*registry_)
                      .Add({})),
      heartbeat_interval_(
          prometheus::BuildGauge()
              .Name("tupa_worker_heartbeat_interval_seconds")
              .Help("The heartbeat interval workers are told to use (grows "
                    "with the fleet: --max-heartbeats-per-s).")
              .Register(*registry_)
              .Add({})),
      idle_shutdowns_(prometheus::BuildCounter()
                          .Name("tupa_idle_shutdowns_total")
                          .Help("Workers stopped by the idle policy.")
                          .Register(*registry_)),
      saved_per_hour_(prometheus::BuildCounter()
                          .Name("tupa_idle_shutdown_saved_per_hour_total")
                          .Help("Sum over idle shutdowns of the price per hour "
                                "each stopped worker would have cost.")
                          .Register(*registry_)),
      scale_ups_(prometheus::BuildCounter()
                     .Name("tupa_scale_ups_total")
                     .Help("Scale-up requests made for pending jobs.")
                     .Register(*registry_)),
      zombies_(prometheus::BuildCounter()
                   .Name("tupa_zombie_jobs_total")
                   .Help("Jobs holding devices at near-zero activity past "
                         "zombie_jobs.after, by the action taken.")
                   .Register(*registry_)),
      idle_verdicts_(prometheus::BuildGauge()
                         .Name("tupa_idle_workers")
                         .Help("Live workers by the idle policy's verdict "
                               "(why each is kept or stopped; tupa workers "
                               "shows the reason per worker).")
                         .Register(*registry_)),
      gpu_seconds_(prometheus::BuildCounter()
                       .Name("tupa_gpu_seconds_allocated_total")
                       .Help("GPU-seconds allocated to jobs (share x devices "
                             "x time), by team, user and GPU type.")
                       .Register(*registry_)),
      gpu_seconds_idle_(prometheus::BuildCounter()
                            .Name("tupa_gpu_seconds_idle_total")
                            .Help("GPU-seconds of devices on up workers that "
                                  "no job held, by worker and GPU type.")
                            .Register(*registry_)),
      cost_(prometheus::BuildCounter()
                .Name("tupa_cost_accrued_total")
                .Help("Cost accrued by allocations, by team, user, GPU type "
                      "and currency (fed by the pricing integration).")
                .Register(*registry_)),
      idle_cost_(prometheus::BuildCounter()
                     .Name("tupa_idle_cost_total")
                     .Help("Cost of GPUs that were up but held by no job, by "
                           "GPU type and currency (fed by the pricing "
                           "integration).")
                     .Register(*registry_)),
      idle_saved_(prometheus::BuildCounter()
                      .Name("tupa_idle_shutdown_saved_total")
                      .Help("Money saved by idle shutdown: what the workers "
                            "the idle policy stopped would have cost while "
                            "down, by GPU type and currency.")
                      .Register(*registry_)),
      budget_(prometheus::BuildGauge()
                  .Name("tupa_team_monthly_budget")
                  .Help("A team's budget per calendar month, by currency "
                        "(fed by the pricing integration).")
                  .Register(*registry_)),
      queue_wait_(prometheus::BuildHistogram()
                      .Name("tupa_job_queue_wait_seconds")
                      .Help("Time from submission (or requeue) to the "
                            "attempt's assignment, by team.")
                      .Register(*registry_)),
      cycle_(prometheus::BuildHistogram()
                 .Name("tupa_scheduling_cycle_duration_seconds")
                 .Help("Duration of one scheduling cycle (leases, placement).")
                 .Register(*registry_)
                 .Add({}, CycleBuckets())),
      write_batch_(
          prometheus::BuildHistogram()
              .Name("tupa_scheduler_write_batch_size")
              .Help("Job state changes committed together in one "
                    "transaction (group commit of the scheduling loop).")
              .Register(*registry_)
              .Add({}, prometheus::Histogram::BucketBoundaries{
                           1, 4, 16, 64, 256, 1024, 4096})) {
  // The zombie-job actions are known up front; pools come with workers
  // (KnownPool).
  for (const char* action : {"flag", "cancel"})
    zombies_.Add({{"action", action}});
}

void SchedulerMetrics::BatchCommitted(size_t changes) {
  write_batch_.Observe(static_cast<double>(changes));
}

std::vector<std::weak_ptr<prometheus::Collectable>>
SchedulerMetrics::collectables() const {
  return {registry_, gauges_};
}

void SchedulerMetrics::TouchTeam(const std::string& team) {
  if (!teams_.insert(team).second) return;
  // Every team's series exist from its first job on, so rate() and
  // increase() see the first event.
  submissions_.Add({{"team", team}});
  placements_.Add({{"team", team}});
  failures_.Add({{"team", team}});
  requeues_.Add({{"team", team}});
  for (const char* s : {"succeeded", "failed", "cancelled"})
    finished_.Add({{"team", team}, {"state", s}});
  queue_wait_.Add({{"team", team}}, QueueWaitBuckets());
}

void SchedulerMetrics::JobSubmitted(const v1::JobSpec& spec) {
  absl::MutexLock lock(&mu_);
  TouchTeam(spec.team());
  submissions_.Add({{"team", spec.team()}}).Increment();
}

void SchedulerMetrics::JobPlaced(int64_t job_id, const std::string& team,
                                 const google::protobuf::Timestamp& created_at,
                                 absl::Time now) {
  absl::MutexLock lock(&mu_);
  TouchTeam(team);
  absl::Time since =
      absl::FromUnixMillis(TimeUtil::TimestampToMilliseconds(created_at));
  if (auto it = requeued_at_.find(job_id); it != requeued_at_.end()) {
    since = it->second;
    requeued_at_.erase(it);
  }
  placements_.Add({{"team", team}}).Increment();
  queue_wait_.Add({{"team", team}}, QueueWaitBuckets())
      .Observe(std::max(0.0, absl::ToDoubleSeconds(now - since)));
}

void SchedulerMetrics::JobRequeued(int64_t job_id, const std::string& team,
                                   absl::Time now) {
  absl::MutexLock lock(&mu_);
  TouchTeam(team);
  requeued_at_[job_id] = now;
  requeues_.Add({{"team", team}}).Increment();
}

void SchedulerMetrics::JobFinished(int64_t job_id, const std::string& team,
                                   v1::JobState state) {
  absl::MutexLock lock(&mu_);
  TouchTeam(team);
  requeued_at_.erase(job_id);
  if (state == v1::JOB_STATE_FAILED)
    failures_.Add({{"team", team}}).Increment();
  finished_.Add({{"team", team}, {"state", StateLabel(state)}}).Increment();
}

void SchedulerMetrics::WorkerLost() { workers_lost_.Increment(); }

void SchedulerMetrics::HeartbeatReceived() { heartbeats_.Increment(); }

void SchedulerMetrics::SetHeartbeatInterval(absl::Duration interval) {
  heartbeat_interval_.Set(absl::ToDoubleSeconds(interval));
}

void SchedulerMetrics::IdleShutdown(const std::string& gpu_type,
                                    double saved_per_hour) {
  idle_shutdowns_.Add({{"gpu_type", gpu_type}}).Increment();
  saved_per_hour_.Add({{"gpu_type", gpu_type}}).Increment(saved_per_hour);
}

void SchedulerMetrics::IdleVerdicts(const std::map<std::string, int>& counts) {
  absl::MutexLock lock(&mu_);
  for (const auto& [verdict, n] : counts) verdicts_seen_.insert(verdict);
  for (const std::string& verdict : verdicts_seen_) {
    auto it = counts.find(verdict);
    idle_verdicts_.Add({{"verdict", verdict}})
        .Set(it == counts.end() ? 0 : it->second);
  }
}

void SchedulerMetrics::ScaleUpRequested(const std::string& pool) {
  scale_ups_.Add({{"pool", pool}}).Increment();
}

void SchedulerMetrics::ZombieJob(const std::string& action) {
  zombies_.Add({{"action", action}}).Increment();
}

void SchedulerMetrics::KnownPool(const std::string& region,
                                 const std::string& gpu_type,
                                 const std::string& currency) {
  // Family::Add returns the existing child when there is one.
  idle_shutdowns_.Add({{"gpu_type", gpu_type}});
  saved_per_hour_.Add({{"gpu_type", gpu_type}});
  scale_ups_.Add({{"pool", idle::PoolKey(region, gpu_type)}});
  if (currency.empty()) return;
  idle_cost_.Add({{"gpu_type", gpu_type}, {"currency", currency}});
  idle_saved_.Add({{"gpu_type", gpu_type}, {"currency", currency}});
}

void SchedulerMetrics::AddCost(const std::string& team, const std::string& user,
                               const std::string& gpu_type,
                               const std::string& currency, double amount) {
  cost_
      .Add({{"team", team},
            {"user", user},
            {"gpu_type", gpu_type},
            {"currency", currency}})
      .Increment(amount);
}

void SchedulerMetrics::AddIdleCost(const std::string& gpu_type,
                                   const std::string& currency, double amount) {
  idle_cost_.Add({{"gpu_type", gpu_type}, {"currency", currency}})
      .Increment(amount);
}

void SchedulerMetrics::AddIdleShutdownSaved(const std::string& gpu_type,
                                            const std::string& currency,
                                            double amount) {
  idle_saved_.Add({{"gpu_type", gpu_type}, {"currency", currency}})
      .Increment(amount);
}

void SchedulerMetrics::SetTeamBudget(const std::string& team,
                                     const std::string& currency,
                                     double monthly_budget) {
  budget_.Add({{"team", team}, {"currency", currency}}).Set(monthly_budget);
}

void SchedulerMetrics::Update(const MetricsView& view, absl::Time now) {
  cycle_.Observe(absl::ToDoubleSeconds(view.cycle));
  absl::MutexLock lock(&mu_);
  const double dt =
      last_update_ == absl::InfinitePast()
          ? 0
          : std::max(0.0, absl::ToDoubleSeconds(now - last_update_));
  last_update_ = now;
  for (const MetricsView::Job& j : view.jobs) TouchTeam(j.team);

  // Jobs by state and team: every known team x active state, zeros included.
  std::map<std::pair<std::string, std::string>, double> jobs;
  for (const std::string& team : teams_)
    for (const char* s : {"pending", "assigned", "running"})
      jobs[{team, s}] = 0;
  GaugeFamily attempt("tupa_job_attempt",
                      "Current attempt (1-based) of each job not yet ended.");
  GaugeFamily step("tupa_training_step", "Last reported step, by job.");
  GaugeFamily epoch("tupa_training_epoch", "Last reported epoch, by job.");
  GaugeFamily loss("tupa_training_loss", "Last reported training loss.");
  GaugeFamily speed("tupa_training_samples_per_second",
                    "Global training throughput, last report.");
  GaugeFamily advanced("tupa_training_last_step_timestamp_seconds",
                       "Unix time the job's step last advanced.");
  std::map<int64_t, std::pair<int64_t, absl::Time>> steps;
  for (const MetricsView::Job& j : view.jobs) {
    jobs[{j.team, StateLabel(j.state)}] += 1;
    const std::string id = absl::StrCat(j.id);
    attempt.Add({{"job_id", id}, {"team", j.team}}, j.attempt);
    if (j.state != v1::JOB_STATE_RUNNING || !j.has_progress) continue;
    const v1::Progress& p = j.progress;
    auto& last = steps[j.id];
    last = {p.step(), now};
    if (auto it = steps_.find(j.id);
        it != steps_.end() && it->second.first == p.step())
      last.second = it->second.second;
    const Labels labels = {{"job_id", id}, {"team", j.team}};
    step.Add(labels, static_cast<double>(p.step()));
    epoch.Add(labels, p.epoch());
    loss.Add(labels, p.loss());
    speed.Add(labels, p.samples_per_s());
    advanced.Add(labels,
                 absl::ToDoubleSeconds(last.second - absl::UnixEpoch()));
  }
  steps_.swap(steps);
  GaugeFamily jobs_family("tupa_jobs",
                          "Jobs not yet ended, by state and team.");
  for (const auto& [key, n] : jobs)
    jobs_family.Add({{"state", key.second}, {"team", key.first}}, n);

  // GPUs per worker and type (up and draining workers).
  GaugeFamily capacity("tupa_gpus_capacity",
                       "GPUs of up or draining workers, by worker and type.");
  GaugeFamily allocated("tupa_gpus_allocated",
                        "GPUs (device shares) held by jobs.");
  GaugeFamily free("tupa_gpus_free", "GPUs (device shares) no job holds.");
  for (const NodeView& n : view.nodes) {
    std::map<std::string, std::pair<double, double>> by_type;  // total, free
    for (const DeviceSlot& d : n.devices) {
      by_type[d.gpu_type].first += 1;
      by_type[d.gpu_type].second += d.free_share;
    }
    for (const auto& [type, tf] : by_type) {
      const Labels labels = {{"worker", n.worker_id}, {"gpu_type", type}};
      capacity.Add(labels, tf.first);
      allocated.Add(labels, tf.first - tf.second);
      free.Add(labels, tf.second);
      if (dt > 0 && tf.second > kEps)
        gpu_seconds_idle_.Add({{"worker", n.worker_id}, {"gpu_type", type}})
            .Increment(tf.second * dt);
    }
  }
  const auto stranded_map = StrandedGpus(view.nodes, view.pending);
  GaugeFamily stranded("tupa_gpus_stranded",
                       "Free GPUs that no pending job can use now (on "
                       "workers where no pending request fits).");
  for (const NodeView& n : view.nodes) {
    std::set<std::string> types;
    for (const DeviceSlot& d : n.devices) types.insert(d.gpu_type);
    for (const std::string& type : types) {
      auto it = stranded_map.find({n.worker_id, type});
      stranded.Add({{"worker", n.worker_id}, {"gpu_type", type}},
                   it == stranded_map.end() ? 0 : it->second);
    }
  }
  for (const MetricsView::Allocation& a : view.allocations)
    if (dt > 0 && a.gpus > 0)
      gpu_seconds_
          .Add({{"team", a.team}, {"user", a.user}, {"gpu_type", a.gpu_type}})
          .Increment(a.gpus * dt);

  // Workers by state, and each worker's state (1 for the current one).
  const std::vector<v1::WorkerState> states = {
      v1::WORKER_STATE_UP, v1::WORKER_STATE_DRAINING, v1::WORKER_STATE_LOST,
      v1::WORKER_STATE_OFFLINE};
  std::map<std::string, double> by_state;
  for (v1::WorkerState s : states) by_state[WorkerStateLabel(s)] = 0;
  GaugeFamily worker_state("tupa_worker_state",
                           "1 for the worker's current state, else 0.");
  for (const auto& [id, state] : view.workers) {
    by_state[WorkerStateLabel(state)] += 1;
    for (v1::WorkerState s : states)
      worker_state.Add({{"worker", id}, {"state", WorkerStateLabel(s)}},
                       s == state ? 1 : 0);
  }
  GaugeFamily workers("tupa_workers", "Known workers, by state.");
  for (const auto& [s, n] : by_state) workers.Add({{"state", s}}, n);

  std::vector<prometheus::MetricFamily> families;
  for (GaugeFamily* f :
       {&jobs_family, &attempt, &capacity, &allocated, &free, &stranded,
        &workers, &worker_state, &step, &epoch, &loss, &speed, &advanced})
    families.push_back(f->Take());
  gauges_->Replace(std::move(families));
}

}  // namespace tupa::scheduler

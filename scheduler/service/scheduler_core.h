// SchedulerCore: the scheduler's in-memory view (active jobs, workers,
// allocations), its scheduling loop, and the state machine that the gRPC
// handlers drive.
//
// PostgreSQL (JobStore) is the source of truth: every state change is
// committed before it is acted on (an Assign is sent only after the
// allocation rows are committed), and Start() rebuilds the view from it.
// Workers hold a lease renewed by every message; a worker silent for
// `worker_timeout` is lost and its jobs requeue while retries remain.
// Fencing: every job message carries (job, attempt); results of an attempt
// that is not current are ignored and a worker still running one is told to
// cancel it. Thread-safe; one mutex guards the view.
//
// Fleet scale (DESIGN §5 "Throughput and responsiveness"): the view's
// writes of job state (assignments, RUNNING, allocation closes, job ends,
// progress) are queued in a WriteBatch and committed by the loop in one
// transaction per round (group commit); what depends on them (an Assign to
// a worker, an exit ack) happens only after that commit. GetJob, ListJobs
// and ListWorkers never take the view's mutex: they read the ReadView the
// loop publishes after each commit (at most one round old).
#ifndef TUPA_SCHEDULER_SERVICE_SCHEDULER_CORE_H_
#define TUPA_SCHEDULER_SERVICE_SCHEDULER_CORE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/idle/decide.h"
#include "scheduler/idle/policy.h"
#include "scheduler/placement/fit_bounds.h"
#include "scheduler/placement/placement.h"
#include "scheduler/placement/recent_mix.h"
#include "scheduler/pricing/budget.h"
#include "scheduler/pricing/cost.h"
#include "scheduler/pricing/price_catalog.h"
#include "scheduler/service/fleet_shapes.h"
#include "scheduler/service/heartbeat_rate.h"
#include "scheduler/service/log_store.h"
#include "scheduler/service/port_blocks.h"
#include "scheduler/service/read_view.h"
#include "scheduler/service/scheduler_metrics.h"
#include "scheduler/service/worker_session.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/stores.h"
#include "scheduler/store/submit_batcher.h"
#include "scheduler/store/usage_store.h"
#include "scheduler/store/worker_store.h"
#include "scheduler/store/write_batch.h"
#include "tupa/v1/cluster.pb.h"
#include "tupa/v1/job_service.pb.h"
#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::scheduler {

struct SchedulerOptions {
  absl::Duration worker_timeout = absl::Seconds(15);
  absl::Duration cycle_interval = absl::Milliseconds(200);
  // Workers heartbeat every heartbeat_interval, or less often once the
  // fleet would send more than max_heartbeats_per_second in all (0: no
  // limit); never less often than a third of worker_timeout
  // (heartbeat_rate.h).
  absl::Duration heartbeat_interval = absl::Seconds(1);
  double max_heartbeats_per_second = 250;
  std::string data_dir = ".";  // logs live under <data_dir>/logs
  int master_port_base = 29500;
  int master_port_count = 2000;
  PlacementOptions::Policy policy = PlacementOptions::Policy::kTupa;
  // Prices and budgets; null: nothing is priced and no budget applies.
  std::shared_ptr<const pricing::PriceCatalog> pricing;
  // Idle shutdown, scale-up and zombie-job policy; nullopt: off.
  std::optional<idle::IdlePolicy> idle;
  // A worker runs at most this many job nodes at once (Kubernetes caps
  // pods per node at 110 the same way).
  int max_nodes_per_worker = 110;
  // Bounds on one placement pass, so that a deep queue never holds the
  // view for long (Slurm's sched_max_job_start): at most this many jobs
  // start per pass; the rest wait for the next pass, which comes at once.
  int max_starts_per_pass = 2000;
};

// What placement needs of a job: its request per node, priority, team,
// submit time and max_runtime.
JobRequest RequestOf(const v1::Job& job);

class SchedulerCore {
 public:
  // `stores` outlives the core.
  SchedulerCore(Stores* stores, SchedulerOptions options);
  ~SchedulerCore();
  SchedulerCore(const SchedulerCore&) = delete;
  SchedulerCore& operator=(const SchedulerCore&) = delete;

  // Rebuilds the view from PostgreSQL and starts the scheduling loop.
  absl::Status Start();
  // Stops the loop and closes every worker session.
  void Shutdown();

  // Validates, checks the job could ever fit the known cluster
  // (InvalidArgument naming the field otherwise), commits (group commit,
  // SubmitBatcher), then queues. Returns at once without waiting for
  // PostgreSQL; `done` runs exactly once: inline for a refused spec, else on
  // a committer thread once the job is committed and in the view.
  void Submit(v1::JobSpec spec, std::string idempotency_key,
              SubmitBatcher::Done done);
  // A job array (the specs of ResolveSubmitJobRequest, one per index):
  // each task admitted like Submit, all stored in one statement
  // (JobStore::SubmitArray), then queued. Blocks until committed.
  absl::StatusOr<ArraySubmitResult> SubmitArray(
      std::vector<v1::JobSpec> tasks, const ArrayIndexes& array,
      const std::string& expression, const std::string& idempotency_key);
  // Cancels the array's tasks that have not ended; returns how many.
  int CancelArray(int64_t array_id, const std::string& reason);
  absl::StatusOr<v1::Job> GetJob(int64_t id);
  absl::StatusOr<std::vector<v1::Job>> ListJobs(const JobFilter& filter);
  // FailedPrecondition when the job already ended.
  absl::StatusOr<v1::Job> CancelJob(int64_t id, const std::string& reason);
  // The published worker list as a serialized ListWorkersResponse, shared
  // by every caller (ReadView::WorkersResponse).
  std::shared_ptr<const std::string> ListWorkersResponse(bool include_offline) {
    return reads_.WorkersResponse(include_offline);
  }
  // Drains a worker that is up, or (`undo`) takes any known worker back
  // into service. Both are stored before they are answered.
  absl::StatusOr<v1::Worker> DrainWorker(const std::string& id, bool undo);

  // A worker's stream opened with `hello`. Replaces an older session of the
  // same worker; reconciles what the worker says it runs.
  absl::StatusOr<std::shared_ptr<WorkerSession>> ConnectWorker(
      const v1::Hello& hello);
  // One message a worker sent on its session; applied in order, all under
  // one lock of the core (the worker inbox batches them: worker_stream.h).
  struct WorkerInput {
    std::shared_ptr<WorkerSession> session;
    const v1::WorkerMessage* message;
  };
  void HandleWorkerMessages(const std::vector<WorkerInput>& inputs);
  void HandleWorkerMessage(const std::shared_ptr<WorkerSession>& session,
                           const v1::WorkerMessage& message) {
    HandleWorkerMessages({{session, &message}});
  }
  void DisconnectWorker(const std::shared_ptr<WorkerSession>& session);
  // The interval workers are told to heartbeat at (in the Welcome and
  // every HeartbeatAck): options' heartbeat_interval, longer for a large
  // fleet (heartbeat_rate.h); refreshed every cycle.
  absl::Duration HeartbeatInterval() const {
    return absl::Milliseconds(heartbeat_interval_ms_.load());
  }
  // The same, as the protocol's heartbeat_interval_ms carries it.
  int32_t HeartbeatIntervalMs() const {
    return static_cast<int32_t>(heartbeat_interval_ms_.load());
  }

  // Blocks until the view changed after `seen` or `timeout` passed;
  // returns the current change counter.
  uint64_t WaitForChange(uint64_t seen, absl::Duration timeout);

  // Money (scheduler_core_money.cc).
  absl::StatusOr<v1::CostReport> CostReport(const v1::CostReportRequest& req);
  absl::StatusOr<v1::EstimateJobResponse> EstimateJob(v1::JobSpec spec);
  // Why a job waits (scheduler_core_why.cc): the last pass's reason, or one
  // computed now over the current view when no pass has decided it.
  absl::StatusOr<v1::WhyJobResponse> WhyJob(int64_t id);
  LogStore& logs() { return logs_; }
  SchedulerMetrics& metrics() { return *metrics_; }

 private:
  using AllocKey = std::tuple<int64_t, int32_t, int32_t>;  // job, attempt, node

  struct Alloc {
    std::string worker_id;
    std::vector<int32_t> devices;
    double share = 1;
    double cpu = 0;
    int64_t memory = 0;
    int32_t master_port = 0;
    // Ports its job holds from master_port on this worker (port_blocks.h).
    int32_t port_span = 1;
    bool running = false;
    absl::Time started;
    double gpus = 0;  // devices x share, what is priced
    std::string region;
    std::string gpu_type;
    std::optional<pricing::PriceEntry> price;  // from its worker
    std::string team;                          // of its job
    // What tupa_cost_accrued_total has counted of it so far (AccrueCost).
    pricing::Money accrued;
  };

  struct ActiveJob {
    v1::Job job;            // spec, state, attempt, progress
    bool terminal = false;  // ended in PostgreSQL; waits for its ranks to go
    int nodes_succeeded = 0;
    absl::Time assigned_at;
    absl::Time progress_written;
    pricing::Money closed_cost;  // allocations closed so far, all attempts
    std::string pending_reason;  // BUDGET while held
    // WAITING_OFF_PEAK while start_window: off-peak waits for a discount.
    std::string waiting_reason;
    absl::Time waiting_until = absl::InfiniteFuture();
    absl::Time budget_checked;
    // A node of this gang exited non-zero; the verdict waits in case the
    // exit was a peer's worker dying under it (see CheckGangFailures).
    struct NodeFailure {
      int32_t attempt = 0;
      int32_t exit_code = 0;
      std::string message;
      absl::Time decide_at;
    };
    std::optional<NodeFailure> gang_failure;
    // Its requeue waits for PostgreSQL (deferred): the old attempt is
    // over, and its nodes' exits decide nothing.
    bool requeue_deferred = false;
    // GPU-seconds of its closed allocations, all attempts.
    double closed_gpu_seconds = 0;
  };

  struct WorkerEntry {
    v1::Worker info;
    std::shared_ptr<WorkerSession> session;
    absl::Time last_seen;
    std::string gpu_type;  // of its devices ("" without devices)
    std::optional<pricing::PriceEntry> price;
    int64_t uptime_id = 0;  // open worker_uptime row, 0 if none
    absl::Time up_since;
    std::string stop_reason;  // set once told to shut down
    // `info`'s shape as counted in fleet_shapes_ (SetWorkerInfo).
    std::optional<WorkerShape> shape;
    // Drained by an operator: kept through a LOST spell, so a worker that
    // comes back after its lease ran out is still draining.
    bool drain_requested = false;
  };
  // Replaces a worker's info, keeping fleet_shapes_ in step.
  void SetWorkerInfo(WorkerEntry& entry, v1::Worker info)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void Loop();
  void RunCycle() ABSL_LOCKS_EXCLUDED(mu_);
  void CheckLeases(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Schedule(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Placement's inputs from the view: the pending jobs it may start (not
  // held) and what runs now.
  // Pending jobs placement may start now: not held (budget, start window,
  // an array's %N limit).
  std::vector<JobRequest> PendingRequests() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pending, and held by neither a budget nor a start window.
  static bool Startable(const ActiveJob& j);
  // Whether a pending job that is not held by budget or start window could
  // fit `bounds`, judged on the specs alone: a deep queue behind a full
  // fleet skips the pass without a request built for every pending job.
  // After an answer of no, for a second, bounds within those it answered
  // for are checked against the jobs that arrived since only (no_fit_); a
  // job already queued that becomes startable meanwhile (a requeue, a
  // budget or start window that opens) waits at most that second longer.
  bool AnyPendingCouldFit(const FitBounds& bounds, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pending tasks of job arrays that their %N limit holds back: an array
  // with N tasks holding resources, or about to, starts no more.
  std::set<int64_t> HeldByArrayLimit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<RunningJob> RunningJobs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The view's half of a committed assignment: allocations, ASSIGNED, and
  // an Assign to each node's worker.
  void StartPlacement(const JobPlacement& placement, int32_t master_port,
                      absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A worker told to shut down is gone: OFFLINE with its stop reason, its
  // uptime closed at `at`.
  void MarkStopped(WorkerEntry& w, absl::Time at)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLost(const std::string& id, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The current attempt of `job` lost a node: requeue while retries remain.
  // With the database down the requeue is deferred, and the job stays out
  // of placement until it is recorded.
  void RequeueOrFail(ActiveJob& job, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The view's half of a recorded requeue: attempt `next`, PENDING.
  void MarkRequeued(ActiveJob& job, int32_t next, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The outcome of RequeueJob (not UNAVAILABLE) into the view: the new
  // attempt, or on an error the requeue PostgreSQL already has (a commit
  // whose answer was lost), else a logged error.
  void RecordRequeue(ActiveJob& job, const absl::StatusOr<int32_t>& next,
                     const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishJob(ActiveJob& job, v1::JobState state, int32_t exit_code,
                 const std::string& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CancelAttemptNodes(int64_t job_id, int32_t attempt,
                          const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleWorkerMessageLocked(const std::shared_ptr<WorkerSession>& session,
                                 const v1::WorkerMessage& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnNodeStatus(WorkerEntry& worker, const v1::NodeStatus& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ASSIGNED -> RUNNING once every node of the current attempt runs (the
  // write is retried while PostgreSQL is down).
  void MaybeMarkRunning(ActiveJob& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A gang's node failed: FAILED, unless a peer node's worker turns out to
  // be lost, which requeues the job instead (a rank whose peer dies exits
  // with an error of its own, usually before the lease runs out). Decided
  // after kGangFailureGrace heartbeats, and not while a peer's worker is
  // unreachable (its lease then decides).
  void OnGangNodeFailed(ActiveJob& job, int32_t exit_code,
                        const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckGangFailures(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a worker holding a node of (job, attempt) is disconnected or
  // has missed heartbeats.
  bool PeerUnreachable(int64_t job_id, int32_t attempt, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnProgress(const v1::ProgressReport& report)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ForgetIfDone(int64_t job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<NodeView> NodeViews() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Worker `w` as placement sees it with nothing on it: devices, CPU,
  // memory, labels and its price at `now`.
  static NodeView EmptyView(const std::string& id, const WorkerEntry& w,
                            absl::Time now);
  // Appends the workers the idle policy stopped as bootable views (a
  // scale-up of their pool starts one like them): a long job may wait for
  // one (PendingReason::kWaitsForBoot).
  void AddBootableViews(absl::Time now, std::vector<NodeView>* nodes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The first port of a block of `span` ports (port_blocks.h) free on
  // every worker of `placement`.
  int32_t PickMasterPort(const JobPlacement& placement, int32_t attempt,
                         int32_t span) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Worker WorkerView(const WorkerEntry& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Send(const std::string& worker_id, v1::SchedulerMessage message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues one change in the round's WriteBatch (`add` puts it there).
  // `done` runs under mu_ once the change is final: with its status after
  // the batch commits; or, when the whole transaction failed, after
  // `single` (the same change as one JobStore call) ran on its own, at
  // once or, while the database is down, from RetryDeferred. A null
  // `single` gives `done` the transaction's error instead.
  void Write(std::string what, const std::function<size_t(WriteBatch&)>& add,
             std::function<absl::Status()> single,
             std::function<void(const absl::Status&)> done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Commits the queued batch and runs the changes' `done`, then publishes
  // the read entries of the jobs it changed (as they were when it was
  // taken: reads never show a state before it commits). One commit is in
  // flight at a time, in queue order. FlushWrites holds mu_ throughout;
  // FlushWritesReleasingLock releases it while PostgreSQL commits, so that
  // worker messages and submits go on meanwhile (their writes go into the
  // next batch). An assignment changes the view only in its `done`
  // (StartPlacement): what must not interleave with one waits with
  // AwaitNoCommit.
  void FlushWrites() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CommitQueuedWrites(/*release_lock=*/false);
  }
  void FlushWritesReleasingLock() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CommitQueuedWrites(/*release_lock=*/true);
  }
  void CommitQueuedWrites(bool release_lock) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits (releasing mu_) until no batch is being committed: for changes
  // that must not interleave with a pass's assignments in flight.
  void AwaitNoCommit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    mu_.Await(absl::Condition(
        +[](bool* committing) { return !*committing; }, &committing_));
  }
  // The read entries of the dirty jobs and the forgotten ones, taken out
  // of dirty_jobs_ / forgotten_ (published by the caller).
  std::vector<std::shared_ptr<const ReadView::JobEntry>> TakeDirtyReads()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The reads' copy of a job (read_view.h), and publishing what changed.
  std::shared_ptr<const ReadView::JobEntry> ReadEntryOf(const ActiveJob& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same without its open allocations (they are mu_'s): the whole entry
  // of a job that has none, such as one just submitted.
  std::shared_ptr<ReadView::JobEntry> ReadEntryWithoutAllocs(
      const ActiveJob& job) const;
  void Touch(int64_t job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    dirty_jobs_.insert(job_id);
  }
  void PublishReads(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<v1::Worker> BuildWorkerViews() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Something placement depends on changed: the next cycle runs a pass
  // (and comes sooner).
  void WakePlacement() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    wake_ = true;
    placement_dirty_ = true;
  }
  // Queues the assignment of each placement (one transaction for the
  // pass); StartPlacement runs for those that committed.
  void AssignPlacements(const std::vector<JobPlacement>& placed, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The rows AssignJob stores for `placement`.
  std::vector<AllocationRecord> RecordsOf(const JobPlacement& placement,
                                          int32_t attempt, int32_t master_port,
                                          absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Something a watcher (WaitForChange) or the published worker list may
  // show changed.
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++version_;
    workers_dirty_ = true;
  }
  // Adds (or replaces) an active job of the view, indexing it for the
  // per-cycle passes that only concern some jobs.
  void AddJob(ActiveJob active) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Submit's checks before the commit; the BUDGET hold reason ("" when
  // none) of an admitted spec.
  absl::StatusOr<std::string> Admit(v1::JobSpec& spec,
                                    const std::string& idempotency_key);
  // A committed submission joins the view (PENDING, or held for BUDGET
  // when `held` is not empty) and wakes the loop. A retry that found its
  // key stored (`created` false) adds the job only when the view lacks it
  // and it is still PENDING: its first commit was in doubt (the database
  // died after committing, before answering), so no one added it then.
  // A created job is queued in arrivals_ without waiting for mu_ (the
  // answers of every submit wait behind it); whatever looks a job up by
  // the id a client was given drains arrivals_ first (TakeArrivals).
  void AddSubmitted(const v1::Job& job, const std::string& held, bool created);
  // Moves the submitted jobs queued in arrivals_ into the view.
  void TakeArrivals() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // scheduler_core_money.cc: prices, usage and budgets.
  std::optional<pricing::PriceEntry> PriceFor(const std::string& region,
                                              const std::string& gpu_type,
                                              const std::string& offering);
  pricing::Money CostOf(const Alloc& alloc, absl::Time end);
  // Cost of the worker's open uptime span up to `end`; zero when unpriced.
  pricing::Money UptimeCost(const WorkerEntry& worker, absl::Time end);
  // Adds to tupa_idle_cost_total what each live worker's unallocated
  // devices cost since the last call (at most since it came up), and to
  // tupa_idle_shutdown_saved_total what each worker the idle policy
  // stopped would have cost meanwhile.
  void AccrueIdleCost(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds to tupa_cost_accrued_total what each open, priced allocation cost
  // since the last call, up to its worker's last contact (an allocation
  // never ends before that, so the counter never runs ahead of the cost
  // CloseAlloc records; it adds the rest).
  void AccrueRunningCost(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds `amount` of `alloc` (job `job_id`) to tupa_cost_accrued_total.
  void CountCost(int64_t job_id, const Alloc& alloc, pricing::Money amount)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends an allocation at `end`: prices it, records it (with the node's
  // exit code when its worker reported one), adds to its job. `recorded`
  // runs (under mu_) once the record is final: at once, or when a write
  // deferred while PostgreSQL is down lands.
  void CloseAlloc(const AllocKey& key, const Alloc& alloc, absl::Time end,
                  std::optional<int32_t> exit_code = std::nullopt,
                  std::function<void()> recorded = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After AssignJob was refused: if PostgreSQL has this attempt ASSIGNED
  // (an earlier commit in doubt landed), closes its never-started
  // allocations and requeues the job, which otherwise stays PENDING here
  // and refused there forever.
  void ReleaseStrandedAssignment(ActiveJob& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At start: the nodes of running attempts that ended before the restart
  // count as succeeded, or decide the job (FAILED, or a requeue for a node
  // closed without an exit status), as they would have without it.
  void ReconcileEndedNodes(const std::vector<EndedNode>& ended)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OpenUptime(WorkerEntry& worker, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseUptime(WorkerEntry& worker, absl::Time end)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Admission: Ok (admit), FailedPrecondition (refused), or sets `*held`.
  // `stored_spend`: StoredTeamSpend() of the job's team, read by the caller
  // (outside mu_ where it can), so that no database call runs here.
  absl::Status CheckBudget(const v1::JobSpec& spec, absl::Time now,
                           const std::optional<pricing::Money>& stored_spend,
                           std::string* held)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether CheckBudget has anything to judge: the job names a cost cap or
  // its team has a monthly budget. Needs no lock.
  bool BudgetApplies(const v1::JobSpec& spec) const;
  // fleet_shapes_.CouldEverFit, under its own mutex.
  absl::Status CouldEverFit(const v1::JobSpec& spec) const
      ABSL_LOCKS_EXCLUDED(shapes_mu_) {
    absl::MutexLock lock(&shapes_mu_);
    return fleet_shapes_.CouldEverFit(spec);
  }
  // What PostgreSQL has of `team`'s spend this month, when the team has a
  // monthly budget (nullopt otherwise). Needs no lock: Admit calls it
  // before taking mu_, so that a submit never waits on the database while
  // holding the core.
  absl::StatusOr<std::optional<pricing::Money>> StoredTeamSpend(
      const std::string& team, absl::Time now);
  // The cheapest estimate of `spec` over the live (UP or DRAINING) workers
  // of its GPU types; over every known worker of them only when none is
  // live (a pool stopped by the idle policy is started again for it). A
  // lost worker's price never undercuts the live ones.
  std::optional<pricing::Money> EstimateCost(const v1::JobSpec& spec,
                                             absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets waiting_reason of off-peak jobs: wait while no eligible worker is
  // in a discounted window, unless waiting would miss the job's deadline.
  void UpdateOffPeakWaits(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops running jobs past their max_cost; re-checks held jobs.
  void EnforceBudgets(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  pricing::Money AccruedCost(int64_t job_id, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What `team`'s open allocations started since `since` cost up to `now`:
  // the part of its spend PostgreSQL does not have yet (TeamSpend sums
  // closed allocations only).
  void AddAlloc(const AllocKey& key, Alloc alloc)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EraseAlloc(const AllocKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  pricing::Money RunningTeamCost(const std::string& team, absl::Time since,
                                 absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // scheduler_core_idle.cc: the idle policy, once a second.
  void RunIdlePolicy(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  idle::Snapshot IdleSnapshot(absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShutDownWorker(const idle::ShutdownDecision& d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs an operator hook on its own thread and records the outcome.
  void RunHookAsync(const std::string& command,
                    std::map<std::string, std::string> env,
                    std::string worker_id);
  void RecordEvent(const std::string& kind, const std::string& worker_id,
                   int64_t job_id, const std::string& reason,
                   double idle_seconds = 0,
                   std::optional<pricing::Money> saved = std::nullopt);
  // scheduler_core_metrics.cc: a snapshot for the gauges (SchedulerMetrics::
  // Update, which the loop calls without mu_).
  MetricsView GaugesView(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A write whose store call failed UNAVAILABLE (database down) is kept and
  // retried in order by the loop until it is recorded, so the end of a job,
  // of an allocation or of an uptime span outlives an outage.
  void Defer(std::string what, std::function<absl::Status()> write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RetryDeferred(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  JobStore* const job_store_;
  UsageStore* const usage_store_;
  WorkerStore* const worker_store_;
  const SchedulerOptions options_;
  // Offsets PickMasterPort's first choice per scheduler process. Without
  // it job 1 attempt 1 gets the same port under every scheduler, and two
  // clusters sharing a host (the e2e tests under ctest -j2) collide.
  const int64_t master_port_salt_ = std::random_device{}() % 65536;
  LogStore logs_;
  const std::unique_ptr<SchedulerMetrics> metrics_ =
      std::make_unique<SchedulerMetrics>();
  absl::Mutex mu_;
  std::map<int64_t, ActiveJob> jobs_ ABSL_GUARDED_BY(mu_);
  // Ids of the jobs_ whose spec asks for start_window off-peak, the only
  // ones UpdateOffPeakWaits looks at: a cycle must not walk a deep queue
  // while submits wait for mu_. Terminal or forgotten jobs leave lazily.
  std::set<int64_t> off_peak_jobs_ ABSL_GUARDED_BY(mu_);
  // Jobs with a gang_failure awaiting its verdict, and how many heartbeat
  // intervals the verdict waits (a killed worker's disconnect can reach us
  // just after its peer's exit).
  std::set<int64_t> gang_failures_ ABSL_GUARDED_BY(mu_);
  static constexpr int kGangFailureGrace = 3;
  // Shapes of the last jobs submitted: the request mix of the tupa policy.
  // Start() refills it from PostgreSQL.
  static constexpr size_t kRecentMixJobs = 4096;
  RecentMix recent_mix_ ABSL_GUARDED_BY(mu_){kRecentMixJobs};
  // Open allocations; add and erase them only with AddAlloc / EraseAlloc,
  // which keep team_allocs_ in step.
  std::map<AllocKey, Alloc> allocs_ ABSL_GUARDED_BY(mu_);
  // The keys of allocs_ by their job's team: a budgeted submit prices its
  // team's running allocations, not every open one (RunningTeamCost).
  std::map<std::string, std::set<AllocKey>> team_allocs_ ABSL_GUARDED_BY(mu_);
  // The keys of allocs_ by worker: what runs on each, without a walk of
  // every open allocation (AddAlloc / EraseAlloc keep it in step).
  std::map<std::string, std::set<AllocKey>> worker_allocs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, WorkerEntry> workers_ ABSL_GUARDED_BY(mu_);
  // The shapes of workers_ (every worker known, whatever its state), for
  // admission's "could this job ever fit" check. Its own mutex (taken
  // after mu_ where both are): a submit asks it without waiting for mu_.
  mutable absl::Mutex shapes_mu_ ABSL_ACQUIRED_AFTER(mu_);
  FleetShapes fleet_shapes_ ABSL_GUARDED_BY(shapes_mu_);
  // Why each job of the last placement pass waits; cleared when a cycle
  // skips placement, so WhyJob then computes the reason itself.
  std::map<int64_t, PendingInfo> last_pending_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  // The round's queued writes and, by index, what runs once each is final.
  WriteBatch batch_ ABSL_GUARDED_BY(mu_);
  struct QueuedWrite {
    std::string what;
    std::function<absl::Status()> single;
    std::function<void(const absl::Status&)> done;
  };
  std::vector<QueuedWrite> batch_writes_ ABSL_GUARDED_BY(mu_);
  // A batch is being committed (with mu_ released, or not).
  bool committing_ ABSL_GUARDED_BY(mu_) = false;
  // Committed submissions not in jobs_ yet (AddSubmitted, TakeArrivals).
  absl::Mutex arrivals_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::vector<ActiveJob> arrivals_ ABSL_GUARDED_BY(arrivals_mu_);
  // arrivals_ is not empty: read by the loop's wait condition.
  std::atomic<bool> has_arrivals_{false};
  // HeartbeatInterval(), set by CheckLeases from the connected workers.
  std::atomic<int64_t> heartbeat_interval_ms_{1000};
  // Jobs whose ReadView entry is stale, and the last entries of jobs the
  // view forgot (ForgetIfDone), published by PublishReads.
  std::set<int64_t> dirty_jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<const ReadView::JobEntry>> forgotten_
      ABSL_GUARDED_BY(mu_);
  bool workers_dirty_ ABSL_GUARDED_BY(mu_) = true;
  absl::Time workers_published_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Whether a placement pass could start something it could not before.
  bool placement_dirty_ ABSL_GUARDED_BY(mu_) = true;
  // The last AnyPendingCouldFit over every job that answered no: when, for
  // which bounds (narrowed by the checks since), and the jobs added since.
  struct NoFit {
    absl::Time at;
    FitBounds bounds;
    std::vector<int64_t> arrived;
  };
  std::optional<NoFit> no_fit_ ABSL_GUARDED_BY(mu_);
  absl::Time last_pass_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Cycles are due at this time (cycle_interval after the last).
  absl::Time next_cycle_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  ReadView reads_;
  // Port blocks given to this pass's assignments before they commit, on
  // every worker of each.
  std::map<std::string, std::vector<PortRange>> taken_ports_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  struct DeferredWrite {
    std::string what;
    std::function<absl::Status()> write;
  };
  std::deque<DeferredWrite> deferred_ ABSL_GUARDED_BY(mu_);
  // Node exits whose allocation close is deferred: not acked to the worker
  // until it lands, so that a scheduler crash meanwhile loses nothing (the
  // worker resends an unacked EXITED to the next scheduler).
  std::set<AllocKey> exit_ack_pending_ ABSL_GUARDED_BY(mu_);
  absl::Time deferred_retry_at_ ABSL_GUARDED_BY(mu_);
  idle::PolicyState idle_state_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, idle::WorkerVerdict> verdicts_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> stopped_reasons_ ABSL_GUARDED_BY(mu_);
  absl::Time last_idle_run_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time last_gauges_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time idle_accrued_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration last_gauges_took_;  // the loop thread's alone
  absl::Mutex hooks_mu_;
  // Hooks run on threads of their own; finished ones are joined when the
  // next hook starts (and all at Shutdown), so they do not pile up.
  struct HookThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<HookThread> hook_threads_ ABSL_GUARDED_BY(hooks_mu_);
  std::thread loop_;
  // Last, so destroyed first: committers finish their batches (and
  // callbacks, which touch the view) while the rest of the core exists.
  SubmitBatcher submits_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_SCHEDULER_CORE_H_

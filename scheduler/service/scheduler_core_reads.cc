// SchedulerCore: the read RPCs (GetJob, ListJobs) and what the loop
// publishes for them (read_view.h). No read takes mu_: the loop publishes
// after each commit round, so a read shows committed state at most one
// round old (a job submitted since is there from its ack); jobs the view never
// had (ended before the last restart, or long ago) are read from PostgreSQL.
#include <glog/logging.h>

#include <set>

#include "common/status_macros.h"
#include "scheduler/service/scheduler_core.h"

namespace tupa::scheduler {
namespace {

// A job read from PostgreSQL: every allocation it has is closed (the view
// holds all open ones), so its stored usage is its whole usage.
void FillStoredUsage(v1::Job& job, const JobUsage& usage) {
  job.set_gpu_seconds(usage.gpu_seconds);
  if (usage.currency.empty()) return;
  job.set_cost(usage.closed_cost.has_value() ? usage.closed_cost->ToString()
                                             : "0");
  job.set_currency(usage.currency);
}

}  // namespace

std::shared_ptr<ReadView::JobEntry> SchedulerCore::ReadEntryWithoutAllocs(
    const ActiveJob& active) const {
  auto e = std::make_shared<ReadView::JobEntry>();
  e->job = active.job;
  e->job.clear_gpu_seconds();
  e->job.clear_cost();
  e->job.clear_currency();
  e->job.clear_pending_reason();
  if (active.job.state() == v1::JOB_STATE_PENDING) {
    if (!active.pending_reason.empty()) {
      e->job.set_pending_reason(active.pending_reason);
    } else if (!active.waiting_reason.empty()) {
      e->job.set_pending_reason(active.waiting_reason);
    }
  }
  e->closed_cost = active.closed_cost;
  e->closed_gpu_seconds = active.closed_gpu_seconds;
  if (options_.pricing) e->currency = options_.pricing->currency();
  return e;
}

std::shared_ptr<const ReadView::JobEntry> SchedulerCore::ReadEntryOf(
    const ActiveJob& active) {
  std::shared_ptr<ReadView::JobEntry> e = ReadEntryWithoutAllocs(active);
  const int64_t id = active.job.id();
  for (auto it = allocs_.lower_bound({id, 0, 0});
       it != allocs_.end() && std::get<0>(it->first) == id; ++it)
    e->open.push_back({it->second.price, it->second.gpus, it->second.started});
  return e;
}

std::vector<std::shared_ptr<const ReadView::JobEntry>>
SchedulerCore::TakeDirtyReads() {
  std::vector<std::shared_ptr<const ReadView::JobEntry>> entries =
      std::move(forgotten_);
  forgotten_.clear();
  entries.reserve(entries.size() + dirty_jobs_.size());
  for (int64_t id : dirty_jobs_) {
    auto it = jobs_.find(id);
    if (it != jobs_.end()) entries.push_back(ReadEntryOf(it->second));
  }
  dirty_jobs_.clear();
  return entries;
}

void SchedulerCore::PublishReads(absl::Time now) {
  // Changes queued but not committed yet (they came while a batch was
  // committing with mu_ released) are published by the flush that
  // commits them.
  if (batch_.empty() && !committing_) reads_.PutJobs(TakeDirtyReads());
  // The worker list changes with every placement and exit: rebuilt at most
  // every 100 ms, and every second for last_seen and utilisation.
  if ((workers_dirty_ && now - workers_published_ >= absl::Milliseconds(100)) ||
      now - workers_published_ >= absl::Seconds(1)) {
    workers_dirty_ = false;
    workers_published_ = now;
    reads_.PutWorkers(BuildWorkerViews());
  }
}

absl::StatusOr<v1::Job> SchedulerCore::GetJob(int64_t id) {
  if (auto entry = reads_.FindJob(id))
    return ReadView::Materialize(*entry, absl::Now());
  ASSIGN_OR_RETURN(v1::Job job, job_store_->GetJob(id));
  ASSIGN_OR_RETURN(JobUsage usage, usage_store_->GetJobUsage(id));
  FillStoredUsage(job, usage);
  return job;
}

absl::StatusOr<std::vector<v1::Job>> SchedulerCore::ListJobs(
    const JobFilter& filter) {
  ASSIGN_OR_RETURN(std::vector<v1::Job> jobs, job_store_->ListJobs(filter));
  const absl::Time now = absl::Now();
  std::vector<int64_t> stored;  // not in the view: usage from PostgreSQL
  for (v1::Job& job : jobs) {
    // The view's copy is as fresh (progress: fresher) and knows what runs.
    if (auto entry = reads_.FindJob(job.id())) {
      job = ReadView::Materialize(*entry, now);
    } else {
      stored.push_back(job.id());
    }
  }
  if (stored.empty()) return jobs;
  ASSIGN_OR_RETURN(auto usage, usage_store_->GetJobsUsage(stored));
  const std::set<int64_t> from_store(stored.begin(), stored.end());
  for (v1::Job& job : jobs)
    if (from_store.count(job.id())) FillStoredUsage(job, usage[job.id()]);
  return jobs;
}

}  // namespace tupa::scheduler

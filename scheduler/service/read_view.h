// ReadView: what GetJob, ListJobs and ListWorkers answer from, so that a
// read never waits on the scheduling loop's mutex or on PostgreSQL.
//
// The loop publishes into it after each commit round (SchedulerCore::
// PublishReads): a new entry for every job whose state changed, the last
// entry of each job the view forgot (kept for the most recent
// `max_ended` of them; older ones are read from PostgreSQL), and the
// worker list. A submitted job's first entry is published by the submit
// itself, before its ack and before the loop can see the job
// (SchedulerCore::AddSubmitted). An entry carries what its cost needs, so a
// running job's cost and GPU-seconds are computed at read time, not frozen at
// publish. Entries are immutable and shared: a reader holds the lock only for a
// lookup. Thread-safe.
#ifndef TUPA_SCHEDULER_SERVICE_READ_VIEW_H_
#define TUPA_SCHEDULER_SERVICE_READ_VIEW_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/pricing/money.h"
#include "scheduler/pricing/price_catalog.h"
#include "tupa/v1/cluster.pb.h"
#include "tupa/v1/job.pb.h"

namespace tupa::scheduler {

class ReadView {
 public:
  struct OpenAlloc {
    std::optional<pricing::PriceEntry> price;  // none: unpriced
    double gpus = 0;
    absl::Time started;
  };
  struct JobEntry {
    v1::Job job;  // cost, currency and gpu_seconds unset
    pricing::Money closed_cost;
    double closed_gpu_seconds = 0;
    std::vector<OpenAlloc> open;
    std::string currency;  // empty: no price catalog
    // Whether the view forgot the job (ended, nothing left running).
    bool final = false;
  };

  explicit ReadView(size_t max_ended = 100000) : max_ended_(max_ended) {}

  // Writer side (the loop). `entries` replace those of the same jobs.
  void PutJobs(std::vector<std::shared_ptr<const JobEntry>> entries);
  void PutWorkers(std::vector<v1::Worker> workers);

  // Reader side. Null when the view has no entry for the job.
  std::shared_ptr<const JobEntry> FindJob(int64_t id) const;
  // The serialized ListWorkersResponse of the last PutWorkers (with or
  // without the LOST and OFFLINE workers); an empty response before the
  // first. Serialized by the first read of each published list and shared
  // by the later ones: a listing copies no worker, and the loop serializes
  // nothing.
  std::shared_ptr<const std::string> WorkersResponse(
      bool include_offline) const;
  // The job as a read returns it: cost and GPU-seconds up to `now`.
  static v1::Job Materialize(const JobEntry& entry, absl::Time now);

 private:
  const size_t max_ended_;
  mutable absl::Mutex mu_;
  std::unordered_map<int64_t, std::shared_ptr<const JobEntry>> jobs_
      ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> ended_ ABSL_GUARDED_BY(mu_);  // oldest first
  struct WorkerList {
    std::vector<v1::Worker> workers;
    // Serialized once, by the first read that wants each (under once_mu).
    mutable absl::Mutex once_mu;
    mutable std::shared_ptr<const std::string> live ABSL_GUARDED_BY(once_mu);
    mutable std::shared_ptr<const std::string> all ABSL_GUARDED_BY(once_mu);
  };
  std::shared_ptr<const WorkerList> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_READ_VIEW_H_

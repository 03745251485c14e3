// SchedulerCore::GaugesView: the snapshot of the view that the scheduling
// cycle hands to SchedulerMetrics.
#include <algorithm>
#include <set>
#include <tuple>

#include "scheduler/service/scheduler_core.h"

namespace tupa::scheduler {

MetricsView SchedulerCore::GaugesView(absl::Time now) {
  MetricsView view;
  view.cycle = absl::Now() - now;
  // Requests without a type or label, by shape: a deep queue of copies adds
  // one request, not one per job.
  std::set<std::tuple<double, double, int64_t>> plain_shapes;
  for (const auto& [id, j] : jobs_) {
    if (j.terminal) continue;
    const v1::JobSpec& spec = j.job.spec();
    MetricsView::Job job;
    job.id = id;
    job.team = spec.team();
    job.state = j.job.state();
    job.attempt = j.job.attempt();
    job.has_progress = j.job.has_progress();
    if (job.has_progress) job.progress = j.job.progress();
    view.jobs.push_back(std::move(job));
    const v1::Resources& r = spec.resources();
    if (j.job.state() != v1::JOB_STATE_PENDING || r.gpus() <= 0) continue;
    if (r.gpu_type_size() == 0 && r.labels_size() == 0 &&
        !plain_shapes.emplace(r.gpus(), r.cpu(), r.memory_bytes()).second) {
      continue;
    }
    view.pending.push_back(RequestOf(j.job));
  }
  for (const auto& [key, a] : allocs_) {
    auto j = jobs_.find(std::get<0>(key));
    auto w = workers_.find(a.worker_id);
    if (j == jobs_.end() || w == workers_.end() || a.devices.empty()) continue;
    MetricsView::Allocation alloc;
    alloc.team = j->second.job.spec().team();
    alloc.user = j->second.job.spec().user();
    for (const v1::Device& d : w->second.info.devices())
      if (d.index() == a.devices[0]) alloc.gpu_type = d.gpu_type();
    alloc.gpus = a.share * static_cast<double>(a.devices.size());
    view.allocations.push_back(std::move(alloc));
  }
  view.nodes = NodeViews();
  for (const auto& [id, w] : workers_)
    view.workers.emplace_back(id, w.info.state());
  return view;
}

}  // namespace tupa::scheduler

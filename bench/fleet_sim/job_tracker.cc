#include "bench/fleet_sim/job_tracker.h"

#include <algorithm>

namespace tupa::fleet_sim {

void JobTracker::Acked(int64_t job_id, absl::Time at) {
  absl::MutexLock lock(&mu_);
  Entry& e = jobs_[job_id];
  if (e.acked) return;
  e.acked = at;
  acked_ids_.push_back(job_id);
}

void JobTracker::SubmitFailed() {
  absl::MutexLock lock(&mu_);
  ++failed_;
}

void JobTracker::Assigned(int64_t job_id, absl::Time at) {
  absl::MutexLock lock(&mu_);
  Entry& e = jobs_[job_id];
  if (!e.assigned) e.assigned = at;
}

void JobTracker::NodeAcked(int64_t job_id, int32_t attempt, int nnodes,
                           absl::Time at) {
  absl::MutexLock lock(&mu_);
  Entry& e = jobs_[job_id];
  if (++e.nodes_acked[attempt] >= std::max(1, nnodes)) Complete(e, at);
}

void JobTracker::Completed(int64_t job_id, absl::Time at) {
  absl::MutexLock lock(&mu_);
  Complete(jobs_[job_id], at);
}

void JobTracker::Complete(Entry& e, absl::Time at) {
  if (e.completed) return;
  e.completed = at;
  ++completed_;
}

std::optional<int64_t> JobTracker::RandomAcked(std::mt19937_64& rng) {
  absl::MutexLock lock(&mu_);
  if (acked_ids_.empty()) return std::nullopt;
  return acked_ids_[rng() % acked_ids_.size()];
}

std::vector<int64_t> JobTracker::Outstanding(size_t max) {
  absl::MutexLock lock(&mu_);
  while (oldest_ < acked_ids_.size() && jobs_[acked_ids_[oldest_]].completed)
    ++oldest_;
  std::vector<int64_t> out;
  for (size_t i = oldest_; i < acked_ids_.size() && out.size() < max; ++i)
    if (!jobs_[acked_ids_[i]].completed) out.push_back(acked_ids_[i]);
  return out;
}

bool JobTracker::WaitFor(absl::Time deadline,
                         const std::function<bool(long, long, long)>& done) {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (done(static_cast<long>(acked_ids_.size()), failed_, completed_))
      return true;
    if (absl::Now() >= deadline) return false;
    // Polled: the counters change thousands of times a second.
    mu_.Unlock();
    absl::SleepFor(absl::Milliseconds(50));
    mu_.Lock();
  }
}

long JobTracker::acked() {
  absl::MutexLock lock(&mu_);
  return static_cast<long>(acked_ids_.size());
}

long JobTracker::failed() {
  absl::MutexLock lock(&mu_);
  return failed_;
}

long JobTracker::completed() {
  absl::MutexLock lock(&mu_);
  return completed_;
}

std::vector<double> JobTracker::AssignLatencies() {
  absl::MutexLock lock(&mu_);
  std::vector<double> out;
  for (const auto& [id, e] : jobs_)
    if (e.acked && e.assigned)
      out.push_back(
          std::max(0.0, absl::ToDoubleMilliseconds(*e.assigned - *e.acked)));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<absl::Time> JobTracker::CompletionTimes() {
  absl::MutexLock lock(&mu_);
  std::vector<absl::Time> out;
  for (const auto& [id, e] : jobs_)
    if (e.completed && e.acked) out.push_back(*e.completed);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tupa::fleet_sim

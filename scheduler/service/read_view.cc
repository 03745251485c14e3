#include "scheduler/service/read_view.h"

#include <algorithm>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"
#include "scheduler/pricing/cost.h"

namespace tupa::scheduler {
namespace {

bool IsGone(const v1::Worker& w) {
  return w.state() == v1::WORKER_STATE_LOST ||
         w.state() == v1::WORKER_STATE_OFFLINE;
}

}  // namespace

void ReadView::PutJobs(std::vector<std::shared_ptr<const JobEntry>> entries) {
  if (entries.empty()) return;
  // What is replaced is destroyed after the lock is released.
  std::vector<std::shared_ptr<const JobEntry>> old;
  old.reserve(entries.size());
  absl::MutexLock lock(&mu_);  // released before `old` is destroyed
  for (auto& e : entries) {
    const int64_t id = e->job.id();
    if (e->final) ended_.push_back(id);
    auto [it, inserted] = jobs_.try_emplace(id, e);
    if (!inserted) {
      old.push_back(std::move(it->second));
      it->second = std::move(e);
    }
  }
  while (ended_.size() > max_ended_) {
    auto it = jobs_.find(ended_.front());
    // A job forgotten twice (ended, requeued by a restart...) is dropped
    // only with its last final entry.
    if (it != jobs_.end() && it->second->final) {
      old.push_back(std::move(it->second));
      jobs_.erase(it);
    }
    ended_.pop_front();
  }
}

void ReadView::PutWorkers(std::vector<v1::Worker> workers) {
  // A ListWorkersResponse is its workers, each as field 1: the bytes of
  // both responses are the workers' encodings, concatenated.
  auto live = std::make_shared<std::string>();
  auto all = std::make_shared<std::string>();
  std::string one;
  for (const v1::Worker& w : workers) {
    one.clear();
    {
      google::protobuf::io::StringOutputStream raw(&one);
      google::protobuf::io::CodedOutputStream out(&raw);
      const std::string body = w.SerializeAsString();
      out.WriteTag(google::protobuf::internal::WireFormatLite::MakeTag(
          v1::ListWorkersResponse::kWorkersFieldNumber,
          google::protobuf::internal::WireFormatLite::
              WIRETYPE_LENGTH_DELIMITED));
      out.WriteVarint32(static_cast<uint32_t>(body.size()));
      out.WriteString(body);
    }
    all->append(one);
    if (!IsGone(w)) live->append(one);
  }
  auto next =
      std::make_shared<const std::vector<v1::Worker>>(std::move(workers));
  std::shared_ptr<const std::string> next_live = std::move(live);
  std::shared_ptr<const std::string> next_all = std::move(all);
  absl::MutexLock lock(&mu_);  // released before the old lists go
  workers_.swap(next);
  live_response_.swap(next_live);
  all_response_.swap(next_all);
}

std::shared_ptr<const std::string> ReadView::WorkersResponse(
    bool include_offline) const {
  absl::ReaderMutexLock lock(&mu_);
  const auto& bytes = include_offline ? all_response_ : live_response_;
  if (bytes) return bytes;
  static const auto* const kEmpty = new std::shared_ptr<const std::string>(
      std::make_shared<const std::string>());
  return *kEmpty;
}

std::shared_ptr<const ReadView::JobEntry> ReadView::FindJob(int64_t id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second;
}

std::shared_ptr<const std::vector<v1::Worker>> ReadView::Workers() const {
  absl::ReaderMutexLock lock(&mu_);
  return workers_;
}

v1::Job ReadView::Materialize(const JobEntry& entry, absl::Time now) {
  v1::Job job = entry.job;
  double gpu_seconds = entry.closed_gpu_seconds;
  pricing::Money cost = entry.closed_cost;
  for (const OpenAlloc& a : entry.open) {
    const absl::Time end = std::max(now, a.started);
    gpu_seconds += a.gpus * absl::ToDoubleSeconds(end - a.started);
    if (!a.price) continue;
    auto c = pricing::Cost(*a.price, a.gpus, a.started, end);
    if (c.ok()) cost += *c;
  }
  job.set_gpu_seconds(gpu_seconds);
  if (!entry.currency.empty()) {
    job.set_cost(cost.ToString());
    job.set_currency(entry.currency);
  }
  return job;
}

}  // namespace tupa::scheduler

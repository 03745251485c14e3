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
  auto next = std::make_shared<WorkerList>();
  next->workers = std::move(workers);
  std::shared_ptr<const WorkerList> published = std::move(next);
  absl::MutexLock lock(&mu_);  // released before the old list goes
  workers_.swap(published);
}

std::shared_ptr<const std::string> ReadView::WorkersResponse(
    bool include_offline) const {
  std::shared_ptr<const WorkerList> list;
  {
    absl::ReaderMutexLock lock(&mu_);
    list = workers_;
  }
  if (list == nullptr) {
    static const auto* const kEmpty = new std::shared_ptr<const std::string>(
        std::make_shared<const std::string>());
    return *kEmpty;
  }
  absl::MutexLock once(&list->once_mu);
  std::shared_ptr<const std::string>& bytes =
      include_offline ? list->all : list->live;
  if (bytes == nullptr) {
    // A ListWorkersResponse is its workers, each as field 1 (tag, length,
    // the worker's encoding), concatenated.
    auto out = std::make_shared<std::string>();
    for (const v1::Worker& w : list->workers) {
      if (!include_offline && IsGone(w)) continue;
      const std::string body = w.SerializeAsString();
      google::protobuf::io::StringOutputStream raw(out.get());
      google::protobuf::io::CodedOutputStream coded(&raw);
      coded.WriteTag(google::protobuf::internal::WireFormatLite::MakeTag(
          v1::ListWorkersResponse::kWorkersFieldNumber,
          google::protobuf::internal::WireFormatLite::
              WIRETYPE_LENGTH_DELIMITED));
      coded.WriteVarint32(static_cast<uint32_t>(body.size()));
      coded.WriteString(body);
    }
    bytes = std::move(out);
  }
  return bytes;
}

std::shared_ptr<const ReadView::JobEntry> ReadView::FindJob(int64_t id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second;
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

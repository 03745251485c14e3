#include <google/protobuf/util/message_differencer.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {
namespace {

bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED;
}

grpc::Status BadId(int64_t id) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      absl::StrCat("id: must be a positive job id, got ", id));
}

}  // namespace

grpc::Status JobServiceImpl::SubmitJob(grpc::ServerContext*,
                                       const v1::SubmitJobRequest* req,
                                       v1::SubmitJobResponse* resp) {
  auto result = core_->Submit(req->spec(), req->idempotency_key());
  if (!result.ok()) return ToGrpcStatus(result.status());
  *resp->mutable_job() = std::move(result->job);
  resp->set_created(result->created);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext*,
                                    const v1::GetJobRequest* req,
                                    v1::Job* resp) {
  if (req->id() <= 0) return BadId(req->id());
  auto job = core_->GetJob(req->id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *resp = std::move(*job);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext*,
                                      const v1::ListJobsRequest* req,
                                      v1::ListJobsResponse* resp) {
  if (req->limit() < 0)
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "limit: must be >= 0");
  JobFilter filter;
  for (int s : req->states()) filter.states.push_back(static_cast<v1::JobState>(s));
  filter.user = req->user();
  filter.team = req->team();
  if (req->limit() > 0) filter.limit = req->limit();
  auto jobs = core_->ListJobs(filter);
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (auto& j : *jobs) *resp->add_jobs() = std::move(j);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext*,
                                       const v1::CancelJobRequest* req,
                                       v1::Job* resp) {
  if (req->id() <= 0) return BadId(req->id());
  auto job = core_->CancelJob(req->id(), req->reason());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *resp = std::move(*job);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::WatchJob(grpc::ServerContext* ctx,
                                      const v1::GetJobRequest* req,
                                      grpc::ServerWriter<v1::Job>* writer) {
  if (req->id() <= 0) return BadId(req->id());
  uint64_t seen = 0;
  v1::Job last;
  bool first = true;
  while (!ctx->IsCancelled()) {
    auto job = core_->GetJob(req->id());
    if (!job.ok()) return ToGrpcStatus(job.status());
    job->clear_progress();  // progress alone does not make a new event...
    if (first || !google::protobuf::util::MessageDifferencer::Equals(*job, last)) {
      last = *job;
      auto full = core_->GetJob(req->id());  // ...but is sent along with one
      if (!full.ok()) return ToGrpcStatus(full.status());
      if (!writer->Write(*full)) return grpc::Status::OK;
      first = false;
    }
    if (IsTerminal(job->state())) return grpc::Status::OK;
    seen = core_->WaitForChange(seen, absl::Seconds(1));
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
}

grpc::Status JobServiceImpl::StreamLogs(
    grpc::ServerContext* ctx, const v1::StreamLogsRequest* req,
    grpc::ServerWriter<v1::LogChunk>* writer) {
  if (req->id() <= 0) return BadId(req->id());
  auto job = core_->GetJob(req->id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  const int32_t attempt = req->attempt() > 0 ? req->attempt() : job->attempt();
  std::map<int32_t, int64_t> offsets;
  uint64_t seen = 0;
  bool drained_after_end = false;
  while (!ctx->IsCancelled()) {
    bool wrote = false;
    std::vector<int32_t> ranks = core_->logs().Ranks(req->id(), attempt);
    for (int32_t rank : ranks) {
      if (req->rank() >= 0 && rank != req->rank()) continue;
      while (true) {
        std::string data =
            core_->logs().Read(req->id(), attempt, rank, offsets[rank], 64 << 10);
        if (data.empty()) break;
        offsets[rank] += static_cast<int64_t>(data.size());
        v1::LogChunk chunk;
        chunk.set_job_id(req->id());
        chunk.set_attempt(attempt);
        chunk.set_rank(rank);
        chunk.set_data(std::move(data));
        if (!writer->Write(chunk)) return grpc::Status::OK;
        wrote = true;
      }
    }
    if (!req->follow()) return grpc::Status::OK;
    auto now = core_->GetJob(req->id());
    if (!now.ok()) return ToGrpcStatus(now.status());
    // Follow ends once the attempt is over and its last lines are sent.
    const bool over = IsTerminal(now->state()) || now->attempt() != attempt;
    if (over && !wrote) {
      if (drained_after_end) return grpc::Status::OK;
      drained_after_end = true;  // one more pass for lines still in flight
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    seen = core_->WaitForChange(seen, absl::Milliseconds(500));
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "log stream cancelled");
}

grpc::Status JobServiceImpl::GetCostReport(grpc::ServerContext*,
                                           const v1::CostReportRequest* req,
                                           v1::CostReport* resp) {
  auto report = core_->CostReport(*req);
  if (!report.ok()) return ToGrpcStatus(report.status());
  *resp = std::move(*report);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::EstimateJob(grpc::ServerContext*,
                                         const v1::EstimateJobRequest* req,
                                         v1::EstimateJobResponse* resp) {
  auto estimate = core_->EstimateJob(req->spec());
  if (!estimate.ok()) return ToGrpcStatus(estimate.status());
  *resp = std::move(*estimate);
  return grpc::Status::OK;
}

}  // namespace tupa::scheduler

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/job_spec.h"
#include "scheduler/service/request_validation.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {
namespace {

bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
         s == v1::JOB_STATE_CANCELLED;
}

// The job `id` if `p` may read it; other teams' jobs are NOT_FOUND, as if
// they did not exist.
absl::StatusOr<v1::Job> ReadableJob(SchedulerCore* core, const Principal& p,
                                    int64_t id) {
  absl::StatusOr<v1::Job> job = core->GetJob(id);
  if (job.ok() && !CanReadJob(p, job->spec()))
    return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  return job;
}

grpc::Status BadId(int64_t id) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      absl::StrCat("id: must be a positive job id, got ", id));
}

}  // namespace

grpc::ServerUnaryReactor* JobServiceImpl::SubmitJob(
    grpc::CallbackServerContext* ctx, const v1::SubmitJobRequest* req,
    v1::SubmitJobResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  // A token the cache does not hold costs one indexed lookup here, the only
  // wait on PostgreSQL outside the group commit.
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) {
    reactor->Finish(ToGrpcStatus(caller.status()));
    return reactor;
  }
  absl::StatusOr<SubmittedSpecs> resolved = ResolveSubmitJobRequest(*req);
  if (!resolved.ok()) {
    reactor->Finish(ToGrpcStatus(resolved.status()));
    return reactor;
  }
  for (v1::JobSpec& spec : resolved->specs) ApplySubmitter(*caller, spec);
  if (resolved->array) {
    // Arrays are rare and whole: committed here, not by the group commit.
    absl::StatusOr<ArraySubmitResult> array =
        core_->SubmitArray(std::move(resolved->specs), *resolved->array,
                           req->array(), req->idempotency_key());
    if (!array.ok()) {
      reactor->Finish(ToGrpcStatus(array.status()));
      return reactor;
    }
    *resp->mutable_job() = std::move(array->tasks[0].job);
    resp->set_created(array->created);
    resp->set_array_id(array->array_id);
    resp->set_array_size(static_cast<int32_t>(array->tasks.size()));
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  v1::JobSpec spec = std::move(resolved->specs[0]);
  core_->Submit(std::move(spec), req->idempotency_key(),
                [reactor, resp](absl::StatusOr<SubmitResult> result) {
                  if (!result.ok()) {
                    reactor->Finish(ToGrpcStatus(result.status()));
                    return;
                  }
                  *resp->mutable_job() = std::move(result->job);
                  resp->set_created(result->created);
                  reactor->Finish(grpc::Status::OK);
                });
  return reactor;
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* ctx,
                                    const v1::GetJobRequest* req,
                                    v1::Job* resp) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (req->id() <= 0) return BadId(req->id());
  auto job = ReadableJob(core_, *caller, req->id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *resp = std::move(*job);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext* ctx,
                                      const v1::ListJobsRequest* req,
                                      v1::ListJobsResponse* resp) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (auto s = ValidateListJobsRequest(*req); !s.ok()) return ToGrpcStatus(s);
  JobFilter filter;
  for (int s : req->states())
    filter.states.push_back(static_cast<v1::JobState>(s));
  filter.user = req->user();
  filter.team = req->team();
  if (req->limit() > 0) filter.limit = req->limit();
  filter.array_id = req->array_id();
  if (!ScopeJobFilter(*caller, filter)) return grpc::Status::OK;
  auto jobs = core_->ListJobs(filter);
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (auto& j : *jobs)
    if (CanReadJob(*caller, j.spec())) *resp->add_jobs() = std::move(j);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext* ctx,
                                       const v1::CancelJobRequest* req,
                                       v1::Job* resp) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (req->id() <= 0) return BadId(req->id());
  if (auto s = ValidateCancelJobRequest(*req); !s.ok()) return ToGrpcStatus(s);
  {
    auto target = ReadableJob(core_, *caller, req->id());
    if (!target.ok()) return ToGrpcStatus(target.status());
    if (!CanCancelJob(*caller, target->spec()))
      return ToGrpcStatus(PermissionDenied(
          *caller,
          absl::StrCat("job ", req->id(), " belongs to ", target->spec().user(),
                       "; only its owner or an admin may cancel it")));
  }
  auto job = core_->CancelJob(req->id(), req->reason());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *resp = std::move(*job);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::CancelArray(grpc::ServerContext* ctx,
                                         const v1::CancelArrayRequest* req,
                                         v1::CancelArrayResponse* resp) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (req->array_id() <= 0)
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("array_id: must be a positive id, got ", req->array_id()));
  if (req->reason().size() > 1024)
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "reason: longer than 1024 bytes");
  // The array's owner and size, from one of its tasks.
  JobFilter filter;
  filter.array_id = req->array_id();
  filter.limit = 1;
  auto tasks = core_->ListJobs(filter);
  if (!tasks.ok()) return ToGrpcStatus(tasks.status());
  if (tasks->empty() || !CanReadJob(*caller, (*tasks)[0].spec()))
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("array ", req->array_id(), " not found"));
  const v1::JobSpec& spec = (*tasks)[0].spec();
  if (!CanCancelJob(*caller, spec))
    return ToGrpcStatus(PermissionDenied(
        *caller,
        absl::StrCat("array ", req->array_id(), " belongs to ", spec.user(),
                     "; only its owner or an admin may cancel it")));
  resp->set_array_id(req->array_id());
  resp->set_size(spec.array().size());
  resp->set_cancelled(core_->CancelArray(req->array_id(), req->reason()));
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::WatchJob(grpc::ServerContext* ctx,
                                      const v1::GetJobRequest* req,
                                      grpc::ServerWriter<v1::Job>* writer) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (req->id() <= 0) return BadId(req->id());
  if (auto job = ReadableJob(core_, *caller, req->id()); !job.ok())
    return ToGrpcStatus(job.status());
  uint64_t seen = 0;
  v1::Job last;
  bool first = true;
  while (!ctx->IsCancelled()) {
    auto job = core_->GetJob(req->id());
    if (!job.ok()) return ToGrpcStatus(job.status());
    job->clear_progress();  // progress alone does not make a new event...
    if (first ||
        !google::protobuf::util::MessageDifferencer::Equals(*job, last)) {
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
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (req->id() <= 0) return BadId(req->id());
  if (auto s = ValidateStreamLogsRequest(*req); !s.ok()) return ToGrpcStatus(s);
  auto job = ReadableJob(core_, *caller, req->id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  const int32_t attempt = req->attempt() > 0 ? req->attempt() : job->attempt();
  if (attempt > job->attempt())
    return ToGrpcStatus(absl::NotFoundError(
        absl::StrCat("job ", req->id(), " has no attempt ", attempt,
                     " (it is at attempt ", job->attempt(), ")")));
  const int64_t world = int64_t{std::max(1, job->spec().resources().nodes())} *
                        RanksPerNode(job->spec());
  if (req->rank() >= world)
    return ToGrpcStatus(absl::NotFoundError(
        absl::StrCat("job ", req->id(), " has no rank ", req->rank(),
                     " (its ranks are 0..", world - 1, ")")));
  std::map<int32_t, int64_t> offsets;
  uint64_t seen = 0;
  bool drained_after_end = false;
  while (!ctx->IsCancelled()) {
    bool wrote = false;
    std::vector<int32_t> ranks = core_->logs().Ranks(req->id(), attempt);
    for (int32_t rank : ranks) {
      if (req->rank() >= 0 && rank != req->rank()) continue;
      while (true) {
        std::string data = core_->logs().Read(req->id(), attempt, rank,
                                              offsets[rank], 64 << 10);
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

grpc::Status JobServiceImpl::GetCostReport(grpc::ServerContext* ctx,
                                           const v1::CostReportRequest* req,
                                           v1::CostReport* resp) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (auto s = ValidateCostReportRequest(*req); !s.ok()) return ToGrpcStatus(s);
  const bool all_teams = CanSeeAllCosts(*caller);
  if (!all_teams && !req->group_by().empty() && req->group_by() != "team")
    return ToGrpcStatus(PermissionDenied(
        *caller, "the cost report by " + req->group_by() +
                     " covers every team and needs an admin; use --by team "
                     "for your own team's"));
  auto report = core_->CostReport(*req);
  if (!report.ok()) return ToGrpcStatus(report.status());
  *resp = std::move(*report);
  if (!all_teams) {
    // Only the caller's team's row; cluster-wide idle cost is not theirs.
    const std::string team = caller->team.empty() ? "-" : caller->team;
    v1::CostRow mine;
    mine.set_key(team);
    mine.set_cost("0");
    for (const v1::CostRow& row : resp->rows())
      if (row.key() == team) mine = row;
    resp->clear_rows();
    *resp->add_rows() = mine;
    resp->set_total(mine.cost());
    resp->set_total_gpu_seconds(mine.gpu_seconds());
    // Idle cost and idle-shutdown savings are the fleet's, not the team's.
    resp->clear_idle_cost();
    resp->clear_idle_gpu_seconds();
    resp->clear_idle_shutdown_saved();
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::EstimateJob(grpc::ServerContext* ctx,
                                         const v1::EstimateJobRequest* req,
                                         v1::EstimateJobResponse* resp) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (!CanEstimate(*caller))
    return ToGrpcStatus(PermissionDenied(*caller, "estimating jobs"));
  auto estimate = core_->EstimateJob(req->spec());
  if (!estimate.ok()) return ToGrpcStatus(estimate.status());
  *resp = std::move(*estimate);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::WhyJob(grpc::ServerContext* ctx,
                                    const v1::GetJobRequest* req,
                                    v1::WhyJobResponse* resp) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (req->id() <= 0) return BadId(req->id());
  if (auto job = ReadableJob(core_, *caller, req->id()); !job.ok())
    return ToGrpcStatus(job.status());
  auto why = core_->WhyJob(req->id());
  if (!why.ok()) return ToGrpcStatus(why.status());
  *resp = std::move(*why);
  return grpc::Status::OK;
}

}  // namespace tupa::scheduler

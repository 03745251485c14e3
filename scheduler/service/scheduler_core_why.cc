// `tupa why`: why a job waits. The reason comes from the last placement
// pass when it decided the job; otherwise (a pass skipped because no worker
// could take jobs, or the job arrived since) placement runs once over the
// current view, dry: nothing is started.
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "scheduler/service/scheduler_core.h"

namespace tupa::scheduler {
namespace {

using google::protobuf::util::TimeUtil;

// "4 GPUs of type A100 on 1 node", "a 0.25 share of one GPU on 1 node".
std::string DescribeNeed(const v1::JobSpec& spec) {
  const auto& r = spec.resources();
  const int nodes = std::max(1, r.nodes());
  std::string gpus;
  if (r.gpus() <= 0) {
    gpus = "no GPU";
  } else if (r.gpus() < 1) {
    gpus = absl::StrCat("a ", r.gpus(), " share of one GPU");
  } else {
    gpus = absl::StrCat(r.gpus(), r.gpus() == 1 ? " GPU" : " GPUs");
  }
  if (r.gpus() > 0 && !r.gpu_type().empty())
    absl::StrAppend(&gpus, " of type ", absl::StrJoin(r.gpu_type(), " or "));
  std::string where =
      nodes == 1 ? "on 1 node" : absl::StrCat("on each of ", nodes, " nodes");
  return absl::StrCat("needs ", gpus, " ", where);
}

std::string Explain(PendingReason reason, const v1::JobSpec& spec) {
  switch (reason) {
    case PendingReason::kNoFitNow:
      return "no worker has that free now";
    case PendingReason::kGangIncomplete:
      return absl::StrCat("fewer than ", std::max(1, spec.resources().nodes()),
                          " nodes have it free at once, and a gang starts on "
                          "all its nodes or none");
    case PendingReason::kBehindPriority:
      return "the free resources are reserved for a higher-priority job "
             "ahead of it";
    case PendingReason::kNoSuchGpuType:
      return "no worker has that GPU type, or that many GPUs of it";
    case PendingReason::kNeverFits:
      return "no worker (or the whole cluster) is large enough";
    case PendingReason::kWaitsForBoot:
      return "a long job: a stopped worker costs less to keep up for its "
             "whole run than the free one it fits, so it waits for that "
             "worker's pool to boot one";
    case PendingReason::kWaitsForRelease:
      return "a long job: a live worker that a job ending soon frees costs "
             "less to keep up for its whole run than the free one it fits, "
             "so it waits for that worker";
    case PendingReason::kNone:
      break;
  }
  return "it fits now; the next scheduling pass starts it";
}

}  // namespace

absl::StatusOr<v1::WhyJobResponse> SchedulerCore::WhyJob(int64_t id) {
  v1::WhyJobResponse resp;
  resp.set_job_id(id);
  {
    absl::MutexLock lock(&mu_);
    TakeArrivals();
    auto it = jobs_.find(id);
    if (it != jobs_.end() && !it->second.terminal &&
        it->second.job.state() == v1::JOB_STATE_PENDING) {
      const ActiveJob& job = it->second;
      const v1::JobSpec& spec = job.job.spec();
      resp.set_state(v1::JOB_STATE_PENDING);
      if (!job.pending_reason.empty()) {
        // Held at admission; the reason names the budget ("BUDGET: ...").
        resp.set_reason_code(
            absl::StartsWith(job.pending_reason, "BUDGET")
                ? "BUDGET"
                : job.pending_reason.substr(0, job.pending_reason.find(':')));
        resp.set_message(
            absl::StrCat(DescribeNeed(spec), "; held: ", job.pending_reason));
        return resp;
      }
      if (!job.waiting_reason.empty()) {
        // start_window: off-peak, waiting for a cheaper price window.
        resp.set_reason_code(
            job.waiting_reason.substr(0, job.waiting_reason.find(':')));
        resp.set_message(
            absl::StrCat(DescribeNeed(spec), "; ", job.waiting_reason));
        if (job.waiting_until != absl::InfiniteFuture())
          *resp.mutable_estimated_start() =
              google::protobuf::util::TimeUtil::MillisecondsToTimestamp(
                  absl::ToUnixMillis(job.waiting_until));
        return resp;
      }
      if (spec.array().max_running() > 0 && HeldByArrayLimit().count(id)) {
        resp.set_reason_code("ARRAY_LIMIT");
        resp.set_message(absl::StrCat(
            DescribeNeed(spec), "; array ", spec.array().array_id(),
            " already runs ", spec.array().max_running(),
            " tasks, its limit (%", spec.array().max_running(), ")"));
        return resp;
      }
      PendingInfo info;
      auto last = last_pending_.find(id);
      bool any_schedulable = false;
      std::vector<NodeView> nodes = NodeViews();
      for (const NodeView& n : nodes) any_schedulable |= n.schedulable;
      if (last != last_pending_.end()) {
        info = last->second;
      } else {
        PlacementOptions options;
        options.policy = options_.policy;
        options.now_ms = absl::ToUnixMillis(absl::Now());
        PlacementPlan plan = PlaceJobs(std::move(nodes), PendingRequests(),
                                       RunningJobs(), options);
        auto p = plan.pending.find(id);
        if (p != plan.pending.end()) info = p->second;
      }
      bool permanent = info.reason == PendingReason::kNoSuchGpuType ||
                       info.reason == PendingReason::kNeverFits;
      if (permanent && CouldEverFit(spec).ok()) {
        // Too big for the live workers only: it fits the known fleet, and
        // workers that are down (lost, stopped idle, restarting) may return.
        permanent = false;
        info.reason = PendingReason::kNoFitNow;
      }
      if (!any_schedulable && !permanent) {
        resp.set_reason_code("NO_WORKERS");
        resp.set_message(absl::StrCat(
            DescribeNeed(spec),
            "; no worker takes jobs now (none connected, or all draining)"));
      } else {
        resp.set_reason_code(info.reason == PendingReason::kNone
                                 ? "SCHEDULING"
                                 : PendingReasonName(info.reason));
        resp.set_message(
            absl::StrCat(DescribeNeed(spec), "; ", Explain(info.reason, spec)));
      }
      resp.set_jobs_ahead(info.jobs_ahead);
      if (info.estimated_start_ms > 0)
        *resp.mutable_estimated_start() =
            TimeUtil::MillisecondsToTimestamp(info.estimated_start_ms);
      return resp;
    }
    if (it != jobs_.end()) {
      resp.set_state(it->second.job.state());
      resp.set_reason_code("NOT_PENDING");
      resp.set_message(absl::StrCat("job ", id, " is ",
                                    StateName(it->second.job.state()),
                                    ", not waiting"));
      return resp;
    }
  }
  // Not in the view: ended (or unknown, NotFound from the store).
  ASSIGN_OR_RETURN(v1::Job job, job_store_->GetJob(id));
  resp.set_state(job.state());
  if (job.state() == v1::JOB_STATE_PENDING) {  // committed, not queued yet
    resp.set_reason_code("SCHEDULING");
    resp.set_message("just submitted; the next scheduling pass decides it");
    return resp;
  }
  resp.set_reason_code("NOT_PENDING");
  resp.set_message(absl::StrCat("job ", id, " is ", StateName(job.state()),
                                ", not waiting"));
  return resp;
}

}  // namespace tupa::scheduler

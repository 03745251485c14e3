#include "scheduler/service/request_validation.h"

#include <google/protobuf/util/time_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/job_spec.h"
#include "common/status_macros.h"

namespace tupa::scheduler {
namespace {

using google::protobuf::util::TimeUtil;

constexpr size_t kMaxReason = 1024;
constexpr size_t kMaxWorkerId = 256;

absl::Status PositiveId(int64_t id, absl::string_view field) {
  if (id > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": must be a positive id, got ", id));
}

absl::Status ValidTimestamp(const google::protobuf::Timestamp& t,
                            absl::string_view field) {
  if (t.seconds() < TimeUtil::kTimestampMinSeconds ||
      t.seconds() > TimeUtil::kTimestampMaxSeconds || t.nanos() < 0 ||
      t.nanos() > 999999999)
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": not a valid timestamp"));
  return absl::OkStatus();
}

absl::Status ValidSpec(const v1::JobSpec& spec) {
  v1::JobSpec copy = spec;
  ApplyJobSpecDefaults(copy);
  return ValidateJobSpec(copy);
}

}  // namespace

absl::Status ValidatePrincipalName(absl::string_view name,
                                   absl::string_view field) {
  if (name.empty())
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must not be empty"));
  if (name.size() > 64)
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": longer than 64 characters"));
  for (char c : name) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
        c == '_' || c == '@' || c == '-')
      continue;
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": may hold only letters, digits and . _ @ -"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SubmittedSpecs> ResolveSubmitJobRequest(
    const v1::SubmitJobRequest& req) {
  if (!req.idempotency_key().empty())  // none: every submit is new
    RETURN_IF_ERROR(
        ValidateIdempotencyKey(req.idempotency_key(), "idempotency_key"));
  const bool yaml = !req.spec_yaml().empty();
  if (yaml && req.has_spec())
    return absl::InvalidArgumentError(
        "spec_yaml: give either spec or spec_yaml, not both");
  if (req.spec().has_array())
    return absl::InvalidArgumentError(
        "spec.array: set by the scheduler; submit an array with `array`");
  SubmittedSpecs out;
  if (req.array().empty()) {
    if (req.array_tasks_size() > 0)
      return absl::InvalidArgumentError("array_tasks: given without `array`");
    if (yaml) {
      ASSIGN_OR_RETURN(v1::JobSpec spec, ParseJobSpecYaml(req.spec_yaml()));
      out.specs.push_back(std::move(spec));
    } else {
      out.specs.push_back(req.spec());
    }
    RETURN_IF_ERROR(ValidSpec(out.specs[0]));
    return out;
  }
  ASSIGN_OR_RETURN(ArrayIndexes array, ParseArrayIndexes(req.array(), "array"));
  const size_t size = array.indexes.size();
  if (req.array_tasks_size() > 0 &&
      static_cast<size_t>(req.array_tasks_size()) != size)
    return absl::InvalidArgumentError(
        absl::StrCat("array_tasks: ", req.array_tasks_size(), " specs for ",
                     size, " indexes; send one per index, or none"));
  out.specs.reserve(size);
  for (size_t i = 0; i < size; ++i) {
    const int32_t index = array.indexes[i];
    absl::StatusOr<v1::JobSpec> task;
    if (req.array_tasks_size() > 0) {
      task = req.array_tasks(static_cast<int>(i));
      if (task->has_array())
        task = absl::InvalidArgumentError(
            "spec.array: set by the scheduler, not the caller");
    } else if (yaml) {
      task = ParseJobSpecYaml(SubstituteArrayIndex(req.spec_yaml(), index));
    } else {
      task = SubstituteArrayIndex(req.spec(), index);
    }
    absl::Status valid = task.ok() ? ValidSpec(*task) : task.status();
    if (!valid.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("array task ", index, ": ", valid.message()));
    out.specs.push_back(*std::move(task));
  }
  out.array = std::move(array);
  return out;
}

absl::Status ValidateSubmitJobRequest(const v1::SubmitJobRequest& req) {
  return ResolveSubmitJobRequest(req).status();
}

absl::Status ValidateGetJobRequest(const v1::GetJobRequest& req) {
  return PositiveId(req.id(), "id");
}

absl::Status ValidateListJobsRequest(const v1::ListJobsRequest& req) {
  if (req.limit() < 0) return absl::InvalidArgumentError("limit: must be >= 0");
  for (int s : req.states())
    if (!v1::JobState_IsValid(s))
      return absl::InvalidArgumentError(
          absl::StrCat("states: unknown job state ", s));
  return absl::OkStatus();
}

absl::Status ValidateCancelJobRequest(const v1::CancelJobRequest& req) {
  if (req.reason().size() > kMaxReason)
    return absl::InvalidArgumentError("reason: longer than 1024 bytes");
  return PositiveId(req.id(), "id");
}

absl::Status ValidateStreamLogsRequest(const v1::StreamLogsRequest& req) {
  if (req.attempt() < 0)
    return absl::InvalidArgumentError("attempt: must be >= 0 (0: current)");
  return PositiveId(req.id(), "id");
}

absl::Status ValidateCostReportRequest(const v1::CostReportRequest& req) {
  const std::string& g = req.group_by();
  if (!(g.empty() || g == "team" || g == "user" || g == "gpu-type" ||
        g == "region" || g == "day" || g == "job" || g == "array"))
    return absl::InvalidArgumentError(
        "group_by: must be team, user, gpu-type, region, day, job or array");
  if (req.has_since()) {
    absl::Status s = ValidTimestamp(req.since(), "since");
    if (!s.ok()) return s;
  }
  if (req.has_until()) {
    absl::Status s = ValidTimestamp(req.until(), "until");
    if (!s.ok()) return s;
  }
  if (req.has_since() && req.has_until() &&
      TimeUtil::TimestampToNanoseconds(req.since()) >
          TimeUtil::TimestampToNanoseconds(req.until()))
    return absl::InvalidArgumentError("since: must be before until");
  return absl::OkStatus();
}

absl::Status ValidateEstimateJobRequest(const v1::EstimateJobRequest& req) {
  return ValidSpec(req.spec());
}

absl::Status ValidateListWorkersRequest(const v1::ListWorkersRequest&) {
  return absl::OkStatus();
}

absl::Status ValidateDrainWorkerRequest(const v1::DrainWorkerRequest& req) {
  if (req.worker_id().empty())
    return absl::InvalidArgumentError("worker_id: must not be empty");
  if (req.worker_id().size() > kMaxWorkerId)
    return absl::InvalidArgumentError("worker_id: longer than 256 bytes");
  return absl::OkStatus();
}

absl::Status ValidateHello(const v1::Hello& hello) {
  if (hello.worker_id().empty())
    return absl::InvalidArgumentError("hello.worker_id: must not be empty");
  if (hello.worker_id().size() > kMaxWorkerId)
    return absl::InvalidArgumentError("hello.worker_id: longer than 256 bytes");
  for (const v1::Device& d : hello.devices())
    if (d.gpu_type().empty())
      return absl::InvalidArgumentError(
          absl::StrCat("hello.devices[", d.index(), "].gpu_type: empty"));
  return absl::OkStatus();
}

absl::Status ValidateCreateTokenRequest(const v1::CreateTokenRequest& req) {
  absl::Status s = ValidatePrincipalName(req.user(), "user");
  if (!s.ok()) return s;
  if (req.team().empty() && req.admin()) return absl::OkStatus();
  // The token's team becomes every submitted job's team: it must pass the
  // job spec's team rule, or all of the holder's submits would fail.
  return ValidateJobName(req.team(), "team");
}

absl::Status ValidateListTokensRequest(const v1::ListTokensRequest&) {
  return absl::OkStatus();
}

absl::Status ValidateRevokeTokenRequest(const v1::RevokeTokenRequest& req) {
  return PositiveId(req.id(), "id");
}

}  // namespace tupa::scheduler

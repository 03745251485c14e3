// Request validation for every RPC of the scheduler, as pure functions of
// the request message: the handlers call these before anything else, and
// the fuzz targets (fuzz/) call them on arbitrary bytes. InvalidArgument
// names the field. No I/O, no global state; thread-safe. Depends only on
// the protos and common/, so the fuzz build stays small.
#ifndef TUPA_SCHEDULER_SERVICE_REQUEST_VALIDATION_H_
#define TUPA_SCHEDULER_SERVICE_REQUEST_VALIDATION_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/job_array.h"
#include "tupa/v1/admin.pb.h"
#include "tupa/v1/cluster.pb.h"
#include "tupa/v1/job_service.pb.h"
#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::scheduler {

// JobService.
// What a SubmitJob request asks to create: one spec, or one per array
// index in the expression's order with `{{index}}` replaced (the array's
// id and TUPA_ARRAY_* are set when it is stored). `spec_yaml`, when given,
// is parsed here. Every spec is validated (defaults applied on a copy);
// an array task's error is prefixed "array task INDEX: ".
struct SubmittedSpecs {
  std::vector<v1::JobSpec> specs;
  std::optional<ArrayIndexes> array;  // set for an array
};
absl::StatusOr<SubmittedSpecs> ResolveSubmitJobRequest(
    const v1::SubmitJobRequest& req);
absl::Status ValidateSubmitJobRequest(const v1::SubmitJobRequest& req);
absl::Status ValidateGetJobRequest(const v1::GetJobRequest& req);
absl::Status ValidateListJobsRequest(const v1::ListJobsRequest& req);
absl::Status ValidateCancelJobRequest(const v1::CancelJobRequest& req);
absl::Status ValidateStreamLogsRequest(const v1::StreamLogsRequest& req);
absl::Status ValidateCostReportRequest(const v1::CostReportRequest& req);
absl::Status ValidateEstimateJobRequest(const v1::EstimateJobRequest& req);

// ClusterService.
absl::Status ValidateListWorkersRequest(const v1::ListWorkersRequest& req);
absl::Status ValidateDrainWorkerRequest(const v1::DrainWorkerRequest& req);

// WorkerService: the first message of a stream.
absl::Status ValidateHello(const v1::Hello& hello);

// AdminService.
absl::Status ValidateCreateTokenRequest(const v1::CreateTokenRequest& req);
absl::Status ValidateListTokensRequest(const v1::ListTokensRequest& req);
absl::Status ValidateRevokeTokenRequest(const v1::RevokeTokenRequest& req);

// A user or team name: 1..64 of [A-Za-z0-9._@-]. `field` names it in the
// error.
absl::Status ValidatePrincipalName(absl::string_view name,
                                   absl::string_view field);

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_REQUEST_VALIDATION_H_

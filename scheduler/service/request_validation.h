// Request validation for every RPC of the scheduler, as pure functions of
// the request message: the handlers call these before anything else, and
// the fuzz targets (fuzz/) call them on arbitrary bytes. InvalidArgument
// names the field. No I/O, no global state; thread-safe. Depends only on
// the protos and common/, so the fuzz build stays small.
#ifndef TUPA_SCHEDULER_SERVICE_REQUEST_VALIDATION_H_
#define TUPA_SCHEDULER_SERVICE_REQUEST_VALIDATION_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tupa/v1/admin.pb.h"
#include "tupa/v1/cluster.pb.h"
#include "tupa/v1/job_service.pb.h"
#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::scheduler {

// JobService.
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

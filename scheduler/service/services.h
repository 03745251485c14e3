// The gRPC services of tupa-scheduler: thin handlers that validate, call
// one SchedulerCore function and convert its status (common/grpc_status.h).
// Sync API, except SubmitJob and the workers' Connect (callback API): each
// other streaming call (WatchJob, StreamLogs) holds one server thread for
// its life.
#ifndef TUPA_SCHEDULER_SERVICE_SERVICES_H_
#define TUPA_SCHEDULER_SERVICE_SERVICES_H_

#include "scheduler/service/auth.h"
#include "scheduler/service/scheduler_core.h"
#include "scheduler/service/worker_stream.h"
#include "tupa/v1/admin.grpc.pb.h"
#include "tupa/v1/cluster.grpc.pb.h"
#include "tupa/v1/job_service.grpc.pb.h"
#include "tupa/v1/worker_protocol.grpc.pb.h"

namespace tupa::scheduler {

// SubmitJob uses the callback API: the call waits for its group commit
// without holding a server thread, and is finished from the committer.
class JobServiceImpl final
    : public v1::JobService::WithCallbackMethod_SubmitJob<
          v1::JobService::Service> {
 public:
  JobServiceImpl(SchedulerCore* core, Authenticator* auth)
      : core_(core), auth_(auth) {}
  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* ctx,
                                      const v1::SubmitJobRequest* req,
                                      v1::SubmitJobResponse* resp) override;
  grpc::Status GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                      v1::Job* resp) override;
  grpc::Status ListJobs(grpc::ServerContext* ctx,
                        const v1::ListJobsRequest* req,
                        v1::ListJobsResponse* resp) override;
  grpc::Status CancelJob(grpc::ServerContext* ctx,
                         const v1::CancelJobRequest* req,
                         v1::Job* resp) override;
  grpc::Status WatchJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                        grpc::ServerWriter<v1::Job>* writer) override;
  grpc::Status StreamLogs(grpc::ServerContext* ctx,
                          const v1::StreamLogsRequest* req,
                          grpc::ServerWriter<v1::LogChunk>* writer) override;
  grpc::Status GetCostReport(grpc::ServerContext* ctx,
                             const v1::CostReportRequest* req,
                             v1::CostReport* resp) override;
  grpc::Status EstimateJob(grpc::ServerContext* ctx,
                           const v1::EstimateJobRequest* req,
                           v1::EstimateJobResponse* resp) override;
  grpc::Status WhyJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                      v1::WhyJobResponse* resp) override;
  grpc::Status CancelArray(grpc::ServerContext* ctx,
                           const v1::CancelArrayRequest* req,
                           v1::CancelArrayResponse* resp) override;

 private:
  SchedulerCore* const core_;
  Authenticator* const auth_;
};

// ListWorkers is served raw on the callback API: the answer is the bytes
// the loop serialized when it published the worker list (ReadView::
// WorkersResponse), shared by every call, never a copy of each worker.
class ClusterServiceImpl final
    : public v1::ClusterService::WithRawCallbackMethod_ListWorkers<
          v1::ClusterService::Service> {
 public:
  ClusterServiceImpl(SchedulerCore* core, Authenticator* auth)
      : core_(core), auth_(auth) {}
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* ctx,
                                        const grpc::ByteBuffer* req,
                                        grpc::ByteBuffer* resp) override;
  grpc::Status DrainWorker(grpc::ServerContext* ctx,
                           const v1::DrainWorkerRequest* req,
                           v1::Worker* resp) override;

 private:
  SchedulerCore* const core_;
  Authenticator* const auth_;
};

// Workers' Connect streams on the callback API (worker_stream.h): no
// thread per worker; what they send is applied by one inbox thread.
class WorkerServiceImpl final : public v1::WorkerService::CallbackService {
 public:
  // A non-empty `join_token` must match every Hello's. With
  // `require_client_cert` (mTLS: the scheduler has a client CA) a worker
  // must also present a client certificate that the CA signed; people's
  // CLIs on the same port need none.
  WorkerServiceImpl(SchedulerCore* core, std::string join_token,
                    bool require_client_cert = false)
      : inbox_(core),
        join_token_(std::move(join_token)),
        require_client_cert_(require_client_cert) {}
  grpc::ServerBidiReactor<v1::WorkerMessage, v1::SchedulerMessage>* Connect(
      grpc::CallbackServerContext* ctx) override;

 private:
  // The join token and the hello's fields, before the core sees them.
  absl::Status Admit(const std::string& peer, const v1::Hello& hello) const;

  WorkerInbox inbox_;
  std::string join_token_;  // empty: no join token is required
  const bool require_client_cert_;
};

// Token administration; every call needs an admin (auth.h).
class AdminServiceImpl final : public v1::AdminService::Service {
 public:
  AdminServiceImpl(TokenStore* store, Authenticator* auth)
      : store_(store), auth_(auth) {}
  grpc::Status CreateToken(grpc::ServerContext* ctx,
                           const v1::CreateTokenRequest* req,
                           v1::CreateTokenResponse* resp) override;
  grpc::Status ListTokens(grpc::ServerContext* ctx,
                          const v1::ListTokensRequest* req,
                          v1::ListTokensResponse* resp) override;
  grpc::Status RevokeToken(grpc::ServerContext* ctx,
                           const v1::RevokeTokenRequest* req,
                           v1::ApiToken* resp) override;

 private:
  TokenStore* const store_;
  Authenticator* const auth_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_SERVICES_H_

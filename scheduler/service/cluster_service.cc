#include "common/grpc_status.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {

grpc::Status ClusterServiceImpl::ListWorkers(grpc::ServerContext*,
                                             const v1::ListWorkersRequest* req,
                                             v1::ListWorkersResponse* resp) {
  for (auto& w : core_->ListWorkers(req->include_offline()))
    *resp->add_workers() = std::move(w);
  return grpc::Status::OK;
}

grpc::Status ClusterServiceImpl::DrainWorker(grpc::ServerContext*,
                                             const v1::DrainWorkerRequest* req,
                                             v1::Worker* resp) {
  if (req->worker_id().empty())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "worker_id: must not be empty");
  auto w = core_->DrainWorker(req->worker_id());
  if (!w.ok()) return ToGrpcStatus(w.status());
  *resp = std::move(*w);
  return grpc::Status::OK;
}

}  // namespace tupa::scheduler

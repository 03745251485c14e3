#include "common/grpc_status.h"
#include "scheduler/service/request_validation.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {

grpc::Status ClusterServiceImpl::ListWorkers(grpc::ServerContext* ctx,
                                             const v1::ListWorkersRequest* req,
                                             v1::ListWorkersResponse* resp) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (!CanListWorkers(*caller))
    return ToGrpcStatus(PermissionDenied(*caller, "listing workers"));
  for (auto& w : core_->ListWorkers(req->include_offline()))
    *resp->add_workers() = std::move(w);
  return grpc::Status::OK;
}

grpc::Status ClusterServiceImpl::DrainWorker(grpc::ServerContext* ctx,
                                             const v1::DrainWorkerRequest* req,
                                             v1::Worker* resp) {
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (!CanDrainWorker(*caller))
    return ToGrpcStatus(
        PermissionDenied(*caller, "draining a worker needs an admin"));
  if (auto s = ValidateDrainWorkerRequest(*req); !s.ok())
    return ToGrpcStatus(s);
  auto w = core_->DrainWorker(req->worker_id(), req->undo());
  if (!w.ok()) return ToGrpcStatus(w.status());
  *resp = std::move(*w);
  return grpc::Status::OK;
}

}  // namespace tupa::scheduler

#include <grpcpp/support/proto_buffer_reader.h>

#include <memory>
#include <string>

#include "common/grpc_status.h"
#include "scheduler/service/request_validation.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {

namespace {

// A slice over `bytes` that keeps them alive until gRPC is done with it.
grpc::Slice SharedSlice(std::shared_ptr<const std::string> bytes) {
  auto* hold = new std::shared_ptr<const std::string>(std::move(bytes));
  return grpc::Slice(
      const_cast<char*>((*hold)->data()), (*hold)->size(),
      [](void* p) {
        delete static_cast<std::shared_ptr<const std::string>*>(p);
      },
      hold);
}

}  // namespace

grpc::ServerUnaryReactor* ClusterServiceImpl::ListWorkers(
    grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
    grpc::ByteBuffer* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto caller = auth_->Authenticate(*ctx);
  if (!caller.ok()) {
    reactor->Finish(ToGrpcStatus(caller.status()));
    return reactor;
  }
  if (!CanListWorkers(*caller)) {
    reactor->Finish(ToGrpcStatus(PermissionDenied(*caller, "listing workers")));
    return reactor;
  }
  v1::ListWorkersRequest request;
  grpc::ByteBuffer copy(*req);  // Deserialize consumes its buffer
  if (grpc::Status s =
          grpc::SerializationTraits<v1::ListWorkersRequest>::Deserialize(
              &copy, &request);
      !s.ok()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "ListWorkersRequest: " + s.error_message()));
    return reactor;
  }
  grpc::Slice slice =
      SharedSlice(core_->ListWorkersResponse(request.include_offline()));
  grpc::ByteBuffer answer(&slice, 1);
  resp->Swap(&answer);
  reactor->Finish(grpc::Status::OK);
  return reactor;
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

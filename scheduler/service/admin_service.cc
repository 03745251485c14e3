// AdminService: API tokens. Every call needs an admin (auth.h).
#include <google/protobuf/util/time_util.h>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "scheduler/service/request_validation.h"
#include "scheduler/service/services.h"

namespace tupa::scheduler {
namespace {

using google::protobuf::util::TimeUtil;

v1::ApiToken ToProto(const ApiTokenRecord& r) {
  v1::ApiToken t;
  t.set_id(r.id);
  t.set_user(r.user);
  t.set_team(r.team);
  t.set_role(r.admin ? v1::ROLE_ADMIN : v1::ROLE_USER);
  *t.mutable_created_at() = TimeUtil::MillisecondsToTimestamp(r.created_at_ms);
  if (r.revoked_at_ms != 0)
    *t.mutable_revoked_at() =
        TimeUtil::MillisecondsToTimestamp(r.revoked_at_ms);
  return t;
}

// The caller if they may administer tokens.
absl::StatusOr<Principal> Admin(Authenticator* auth,
                                const grpc::ServerContext& ctx) {
  absl::StatusOr<Principal> caller = auth->Authenticate(ctx);
  if (!caller.ok()) return caller.status();
  if (!CanAdministerTokens(*caller))
    return PermissionDenied(*caller, "token administration needs an admin");
  if (!auth->enabled())
    return absl::FailedPreconditionError(
        "auth is disabled on this scheduler (--auth=false): tokens would not "
        "be checked");
  return caller;
}

}  // namespace

grpc::Status AdminServiceImpl::CreateToken(grpc::ServerContext* ctx,
                                           const v1::CreateTokenRequest* req,
                                           v1::CreateTokenResponse* resp) {
  if (auto caller = Admin(auth_, *ctx); !caller.ok())
    return ToGrpcStatus(caller.status());
  if (auto s = ValidateCreateTokenRequest(*req); !s.ok())
    return ToGrpcStatus(s);
  const std::string secret = NewToken();
  auto record = store_->CreateToken(HashToken(secret), req->user(), req->team(),
                                    req->admin());
  if (!record.ok()) return ToGrpcStatus(record.status());
  *resp->mutable_token() = ToProto(*record);
  resp->set_secret(secret);
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::ListTokens(grpc::ServerContext* ctx,
                                          const v1::ListTokensRequest* req,
                                          v1::ListTokensResponse* resp) {
  if (auto caller = Admin(auth_, *ctx); !caller.ok())
    return ToGrpcStatus(caller.status());
  auto tokens = store_->ListTokens();
  if (!tokens.ok()) return ToGrpcStatus(tokens.status());
  for (const ApiTokenRecord& r : *tokens)
    if (req->include_revoked() || r.revoked_at_ms == 0)
      *resp->add_tokens() = ToProto(r);
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::RevokeToken(grpc::ServerContext* ctx,
                                           const v1::RevokeTokenRequest* req,
                                           v1::ApiToken* resp) {
  if (auto caller = Admin(auth_, *ctx); !caller.ok())
    return ToGrpcStatus(caller.status());
  if (auto s = ValidateRevokeTokenRequest(*req); !s.ok())
    return ToGrpcStatus(s);
  auto record = store_->RevokeToken(req->id());
  if (!record.ok()) return ToGrpcStatus(record.status());
  auth_->InvalidateCache();  // effective at once on this scheduler
  *resp = ToProto(*record);
  return grpc::Status::OK;
}

}  // namespace tupa::scheduler

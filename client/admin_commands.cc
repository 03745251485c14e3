// tupa admin token create|list|revoke: API token administration.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/output.h"
#include "common/job_spec.h"
#include "common/status_macros.h"

namespace tupa::client {
namespace {

std::string RoleName(v1::Role role) {
  return role == v1::ROLE_ADMIN ? "admin" : "user";
}

absl::Status CreateToken(CommandContext& context, const ParsedArgs& args) {
  if (args.positional().size() != 2)
    return absl::InvalidArgumentError(
        "usage: tupa admin token create --user U --team T [--admin]");
  RETURN_IF_ERROR(ValidateText(args.Value("user"), "--user"));
  RETURN_IF_ERROR(ValidateText(args.Value("team"), "--team"));
  v1::CreateTokenRequest request;
  request.set_user(args.Value("user"));
  request.set_team(args.Value("team"));
  request.set_admin(args.Bool("admin"));
  if (request.user().empty())
    return absl::InvalidArgumentError("--user: required");
  if (request.team().empty() && !request.admin())
    return absl::InvalidArgumentError("--team: required (except with --admin)");
  Connection connection(context.connection);
  v1::CreateTokenResponse response;
  // Not retried: a retry after a lost reply would mint a second token.
  std::unique_ptr<grpc::ClientContext> call =
      connection.NewContext(context.connection.call_timeout);
  RETURN_IF_ERROR(connection.Convert(
      connection.admin().CreateToken(call.get(), request, &response)));
  if (context.output == OutputFormat::kJson) {
    *context.out << ToJson(response);
  } else {
    *context.out << response.secret() << "\n";
    *context.err << "token " << response.token().id() << " for "
                 << response.token().user() << " (team "
                 << (response.token().team().empty() ? "-"
                                                     : response.token().team())
                 << ", " << RoleName(response.token().role())
                 << "): shown once, store it now\n";
  }
  return absl::OkStatus();
}

absl::Status ListTokens(CommandContext& context, const ParsedArgs& args) {
  if (args.positional().size() != 2)
    return absl::InvalidArgumentError("usage: tupa admin token list [--all]");
  v1::ListTokensRequest request;
  request.set_include_revoked(args.Bool("all"));
  Connection connection(context.connection);
  v1::ListTokensResponse response;
  RETURN_IF_ERROR(connection.Call([&](grpc::ClientContext* call) {
    response.Clear();
    return connection.admin().ListTokens(call, request, &response);
  }));
  if (context.output == OutputFormat::kJson) {
    *context.out << ToJson(response);
    return absl::OkStatus();
  }
  Table table({"ID", "USER", "TEAM", "ROLE", "CREATED", "REVOKED"});
  for (const v1::ApiToken& t : response.tokens())
    table.AddRow({absl::StrCat(t.id()), t.user(),
                  t.team().empty() ? "-" : t.team(), RoleName(t.role()),
                  HumanAgo(ToTime(t.created_at()), context.now),
                  HumanAgo(ToTime(t.revoked_at()), context.now)});
  *context.out << table.Render();
  return absl::OkStatus();
}

absl::Status RevokeToken(CommandContext& context, const ParsedArgs& args) {
  if (args.positional().size() != 3)
    return absl::InvalidArgumentError("usage: tupa admin token revoke ID");
  v1::RevokeTokenRequest request;
  int64_t id = 0;
  if (!absl::SimpleAtoi(args.positional()[2], &id) || id <= 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "ID: must be a positive token id, got \"", args.positional()[2], "\""));
  request.set_id(id);
  Connection connection(context.connection);
  v1::ApiToken token;
  RETURN_IF_ERROR(connection.Call([&](grpc::ClientContext* call) {
    token.Clear();
    return connection.admin().RevokeToken(call, request, &token);
  }));
  if (context.output == OutputFormat::kJson) {
    *context.out << ToJson(token);
  } else {
    *context.out << "token " << token.id() << " (" << token.user()
                 << ") revoked\n";
  }
  return absl::OkStatus();
}

}  // namespace

void AddAdminFlags(FlagSet& flags) {
  flags.AddValue("user", "U", "token create: the user the token acts as")
      .AddValue("team", "T", "token create: the user's team")
      .AddBool("admin", "token create: an admin token")
      .AddBool("all", "token list: include revoked tokens");
}

absl::Status RunAdmin(CommandContext& context, const ParsedArgs& args) {
  const std::vector<std::string>& words = args.positional();
  if (words.size() < 2 || words[0] != "token")
    return absl::InvalidArgumentError(
        "usage: tupa admin token create|list|revoke (see tupa help admin)");
  if (words[1] == "create") return CreateToken(context, args);
  if (words[1] == "list") return ListTokens(context, args);
  if (words[1] == "revoke") return RevokeToken(context, args);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown token command \"", words[1], "\" (create, list, revoke)"));
}

}  // namespace tupa::client

// tupa cost, tupa estimate: what jobs cost and what one would cost.
#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/cost_format.h"
#include "client/exit_codes.h"
#include "client/spec_overrides.h"
#include "common/status_macros.h"

namespace tupa::client {
namespace {

constexpr absl::Duration kDefaultCostWindow = absl::Hours(7 * 24);

void SetTimestamp(absl::Time t, google::protobuf::Timestamp* ts) {
  const absl::Duration since_epoch = t - absl::UnixEpoch();
  ts->set_seconds(absl::ToInt64Seconds(since_epoch));
  ts->set_nanos(static_cast<int32_t>(
      absl::ToInt64Nanoseconds(since_epoch - absl::Seconds(ts->seconds()))));
}

// A scheduler from before the money API answers UNIMPLEMENTED; say so
// (exit 1) instead of passing on gRPC's bare "unimplemented".
absl::Status ExplainUnimplemented(const absl::Status& status,
                                  const CommandContext& context,
                                  absl::string_view what) {
  if (status.code() != absl::StatusCode::kUnimplemented) return status;
  return OperationFailedError(absl::StrCat(
      "the scheduler at ", context.connection.target, " does not support ",
      what, " (it is older than this tupa; upgrade the scheduler)"));
}

}  // namespace

void AddCostFlags(FlagSet& flags) {
  flags
      .AddValue(
          "by", "GROUP",
          "group by team (default), user, gpu-type, region, day, job or array")
      .AddValue("since", "WHEN",
                "start: a duration ago (7d), a date (2026-11-01) or an RFC "
                "3339 time (default: 7 days before --until)")
      .AddValue("until", "WHEN", "end, in the same forms (default: now)");
}

absl::Status RunCost(CommandContext& context, const ParsedArgs& args) {
  if (!args.positional().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", args.positional()[0], "\""));
  }
  v1::CostReportRequest request;
  ASSIGN_OR_RETURN(*request.mutable_group_by(),
                   ParseCostGroup(args.Value("by", "team")));
  // Both bounds are always sent, so the header names the window even when
  // the scheduler does not echo it. --since defaults to a week before the
  // end, so `--until 30d` alone means the week that ended 30 days ago.
  absl::Time until = context.now;
  if (args.Has("until")) {
    ASSIGN_OR_RETURN(
        until, ParseTimeBound(args.Value("until"), "--until", context.now));
  }
  absl::Time since = until - kDefaultCostWindow;
  if (args.Has("since")) {
    ASSIGN_OR_RETURN(
        since, ParseTimeBound(args.Value("since"), "--since", context.now));
  }
  if (since >= until) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--since: ", FormatUtc(since), " is not before ",
        args.Has("until") ? "--until " : "now ", FormatUtc(until)));
  }
  SetTimestamp(since, request.mutable_since());
  SetTimestamp(until, request.mutable_until());
  Connection connection(context.connection);
  v1::CostReport report;
  const absl::Status status = connection.Call([&](grpc::ClientContext* call) {
    report.Clear();
    return connection.jobs().GetCostReport(call, request, &report);
  });
  RETURN_IF_ERROR(ExplainUnimplemented(status, context, "cost reports"));
  if (report.group_by().empty()) report.set_group_by(request.group_by());
  if (!report.has_since()) *report.mutable_since() = request.since();
  if (!report.has_until()) *report.mutable_until() = request.until();
  *context.out << (context.output == OutputFormat::kJson
                       ? ToJson(report)
                       : RenderCostReport(report));
  return absl::OkStatus();
}

void AddEstimateFlags(FlagSet& flags) { AddSpecFlags(flags); }

absl::Status RunEstimate(CommandContext& context, const ParsedArgs& args) {
  if (!args.positional().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument \"", args.positional()[0],
        "\" (put the command after --, e.g. tupa estimate --gpus 1 -- python "
        "train.py)"));
  }
  v1::EstimateJobRequest request;
  ASSIGN_OR_RETURN(*request.mutable_spec(), BuildJobSpec(args));
  Connection connection(context.connection);
  v1::EstimateJobResponse response;
  const absl::Status status = connection.Call([&](grpc::ClientContext* call) {
    response.Clear();
    return connection.jobs().EstimateJob(call, request, &response);
  });
  RETURN_IF_ERROR(ExplainUnimplemented(status, context, "estimates"));
  *context.out << (context.output == OutputFormat::kJson
                       ? ToJson(response)
                       : RenderEstimates(response, context.now));
  if (response.estimates_size() == 0) {
    return OperationFailedError(
        "no region or GPU type in the cluster can run this job (check "
        "resources.gpus, resources.nodes, resources.gpu_type, resources.cpu, "
        "resources.memory and resources.labels against the live workers)");
  }
  return absl::OkStatus();
}

}  // namespace tupa::client

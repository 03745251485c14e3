// tupa list, tupa get: read jobs.
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/job_format.h"
#include "common/job_spec.h"
#include "common/status_macros.h"

namespace tupa::client {

absl::StatusOr<std::string> OnePositional(const ParsedArgs& args,
                                          absl::string_view name) {
  if (args.positional().size() == 1 && !args.has_separator())
    return args.positional()[0];
  if (args.positional().empty())
    return absl::InvalidArgumentError(absl::StrCat(name, ": missing"));
  return absl::InvalidArgumentError(absl::StrCat(
      "expected one ", name, ", got ", args.positional().size(), " arguments"));
}

void AddListFlags(FlagSet& flags) {
  flags
      .AddRepeated("state", "S",
                   "only jobs in these states (pending, running, ...; comma "
                   "list)")
      .AddValue("user", "U", "only this user's jobs")
      .AddValue("team", "T", "only this team's jobs")
      .AddValue("limit", "N", "at most N jobs (default: the scheduler's, 500)")
      .AddValue("array", "ID", "only the tasks of this job array")
      .AddBool("expand",
               "list a job array's tasks one per row (default: "
               "one row per array)");
}

absl::Status RunList(CommandContext& context, const ParsedArgs& args) {
  if (!args.positional().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", args.positional()[0], "\""));
  }
  v1::ListJobsRequest request;
  for (const std::string& text : args.Values("state")) {
    ASSIGN_OR_RETURN(std::vector<v1::JobState> states, ParseJobStates(text));
    for (v1::JobState s : states) request.add_states(s);
  }
  RETURN_IF_ERROR(ValidateText(args.Value("user"), "--user"));
  RETURN_IF_ERROR(ValidateText(args.Value("team"), "--team"));
  request.set_user(args.Value("user"));
  request.set_team(args.Value("team"));
  if (args.Has("limit")) {
    int32_t limit;
    if (!absl::SimpleAtoi(args.Value("limit"), &limit) || limit < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--limit: bad value \"", args.Value("limit"),
                       "\" (a non-negative integer)"));
    }
    request.set_limit(limit);
  }
  if (args.Has("array")) {
    ASSIGN_OR_RETURN(int64_t array_id, ParseJobId(args.Value("array")));
    request.set_array_id(array_id);
  }
  Connection connection(context.connection);
  v1::ListJobsResponse response;
  RETURN_IF_ERROR(connection.Call([&](grpc::ClientContext* call) {
    response.Clear();
    return connection.jobs().ListJobs(call, request, &response);
  }));
  if (context.output == OutputFormat::kJson) {
    *context.out << ToJson(response);
  } else {
    // One array's tasks are listed as rows when asked for by --array.
    const bool fold = !args.Bool("expand") && !args.Has("array");
    *context.out << RenderJobsTable(
        {response.jobs().begin(), response.jobs().end()}, context.now, fold);
  }
  return absl::OkStatus();
}

absl::Status RunGet(CommandContext& context, const ParsedArgs& args) {
  ASSIGN_OR_RETURN(std::string word, OnePositional(args, "JOB"));
  v1::GetJobRequest request;
  ASSIGN_OR_RETURN(int64_t id, ParseJobId(word));
  request.set_id(id);
  Connection connection(context.connection);
  v1::Job job;
  RETURN_IF_ERROR(connection.Call([&](grpc::ClientContext* call) {
    job.Clear();
    return connection.jobs().GetJob(call, request, &job);
  }));
  *context.out << (context.output == OutputFormat::kJson
                       ? ToJson(job)
                       : RenderJobDetails(job, context.now));
  return absl::OkStatus();
}

}  // namespace tupa::client

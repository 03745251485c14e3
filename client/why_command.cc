// tupa why: why a job is not running yet.
#include <string>

#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/job_format.h"
#include "client/output.h"
#include "common/status_macros.h"

namespace tupa::client {

// "job 42 is PENDING: NO_FIT_NOW — needs 4 GPUs of type A100 on 1 node; no
// worker has that free now; 3 jobs ahead; estimated start in 12m".
std::string FormatWhy(const v1::WhyJobResponse& why, absl::Time now) {
  // The message quotes the spec (GPU types), which any user may write.
  const std::string message = EscapeControl(why.message());
  if (why.reason_code() == "NOT_PENDING") return absl::StrCat(message, "\n");
  std::string line =
      absl::StrCat("job ", why.job_id(), " is ", JobStateName(why.state()),
                   ": ", EscapeControl(why.reason_code()), " \u2014 ", message);
  if (why.state() == v1::JOB_STATE_PENDING) {
    absl::StrAppend(&line, "; ", why.jobs_ahead(),
                    why.jobs_ahead() == 1 ? " job ahead" : " jobs ahead");
    if (why.has_estimated_start()) {
      const absl::Time start = ToTime(why.estimated_start());
      absl::StrAppend(&line, "; estimated start ",
                      start <= now ? "any moment" : HumanAgo(start, now));
    } else {
      absl::StrAppend(&line, "; start time unknown");
    }
  }
  return absl::StrCat(line, "\n");
}

absl::Status RunWhy(CommandContext& context, const ParsedArgs& args) {
  ASSIGN_OR_RETURN(std::string word, OnePositional(args, "JOB"));
  v1::GetJobRequest request;
  ASSIGN_OR_RETURN(int64_t id, ParseJobId(word));
  request.set_id(id);
  Connection connection(context.connection);
  v1::WhyJobResponse why;
  RETURN_IF_ERROR(connection.Call([&](grpc::ClientContext* call) {
    why.Clear();
    return connection.jobs().WhyJob(call, request, &why);
  }));
  if (context.output == OutputFormat::kJson) {
    *context.out << ToJson(why);
  } else {
    *context.out << FormatWhy(why, context.now);
  }
  return absl::OkStatus();
}

}  // namespace tupa::client

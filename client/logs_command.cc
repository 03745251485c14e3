// tupa logs: print what a job's ranks wrote; -f follows until the job ends.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/job_format.h"
#include "client/log_printer.h"
#include "common/quantity.h"
#include "common/status_macros.h"

namespace tupa::client {
namespace {

absl::StatusOr<int32_t> IntFlag(const ParsedArgs& args, absl::string_view flag,
                                int32_t min) {
  int32_t v;
  if (!absl::SimpleAtoi(args.Value(flag), &v) || v < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": bad value \"", args.Value(flag),
                     "\" (an integer >= ", min, ")"));
  }
  return v;
}

}  // namespace

void AddLogsFlags(FlagSet& flags) {
  flags
      .AddBool("follow",
               "keep printing until the job ends, or until --timeout D "
               "passes (then stop, exit 0)",
               "f")
      .AddValue("rank", "R", "only this rank (default: all, prefixed)")
      .AddValue("attempt", "A", "this attempt (default: the current one)")
      .AddBool("no-prefix", "do not prefix lines with [rank R]");
}

absl::Status RunLogs(CommandContext& context, const ParsedArgs& args) {
  ASSIGN_OR_RETURN(std::string word, OnePositional(args, "JOB"));
  v1::StreamLogsRequest request;
  ASSIGN_OR_RETURN(int64_t id, ParseJobId(word));
  request.set_id(id);
  request.set_follow(args.Bool("follow"));
  request.set_rank(-1);
  if (args.Has("rank")) {
    ASSIGN_OR_RETURN(int32_t rank, IntFlag(args, "rank", 0));
    request.set_rank(rank);
  }
  if (args.Has("attempt")) {
    ASSIGN_OR_RETURN(int32_t attempt, IntFlag(args, "attempt", 1));
    request.set_attempt(attempt);
  }
  // Following has no deadline unless --timeout says so.
  const absl::Duration timeout =
      request.follow() ? context.timeout_flag.value_or(absl::InfiniteDuration())
                       : context.connection.call_timeout;
  Connection connection(context.connection);
  std::unique_ptr<grpc::ClientContext> call = connection.NewContext(timeout);
  std::unique_ptr<grpc::ClientReader<v1::LogChunk>> reader =
      connection.jobs().StreamLogs(call.get(), request);
  LogPrinter printer(*context.out,
                     request.rank() < 0 && !args.Bool("no-prefix"));
  v1::LogChunk chunk;
  bool reached = false;
  while (reader->Read(&chunk)) {
    reached = true;
    printer.Write(chunk);
  }
  printer.Finish();
  const grpc::Status status = reader->Finish();
  // The user's own --timeout ending a follow is the expected way out, not a
  // transport failure; a scheduler never reached still is one.
  if (request.follow() && context.timeout_flag.has_value() &&
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      (reached || connection.Connected())) {
    *context.err << "tupa: stopped following job " << id << " after "
                 << HumanDuration(*context.timeout_flag) << " (--timeout)\n";
    return absl::OkStatus();
  }
  return connection.Convert(status);
}

}  // namespace tupa::client

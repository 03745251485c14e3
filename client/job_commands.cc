// tupa cancel, tupa wait: change and follow one job.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/commands.h"
#include "client/exit_codes.h"
#include "client/job_format.h"
#include "client/output.h"
#include "client/progress_line.h"
#include "common/job_spec.h"
#include "common/quantity.h"
#include "common/status_macros.h"

namespace tupa::client {
namespace {

bool IsRetryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE;
}

// How a terminal job ends `tupa wait`: SUCCEEDED is OK, the rest fail.
absl::Status WaitResult(CommandContext& context, const v1::Job& job) {
  if (context.output == OutputFormat::kJson) *context.out << ToJson(job);
  if (job.state() == v1::JOB_STATE_SUCCEEDED) {
    if (context.output == OutputFormat::kTable)
      *context.out << "job " << job.id() << " SUCCEEDED\n";
    return absl::OkStatus();
  }
  std::string message =
      absl::StrCat("job ", job.id(), " ", JobStateName(job.state()));
  if (job.state() == v1::JOB_STATE_FAILED)
    absl::StrAppend(&message, " (exit code ", job.exit_code(), ")");
  if (!job.message().empty())
    absl::StrAppend(&message, ": ", EscapeControl(job.message()));
  return OperationFailedError(message);
}

}  // namespace

void AddCancelFlags(FlagSet& flags) {
  flags.AddValue("reason", "TEXT", "recorded as the job's message");
}

absl::Status RunCancel(CommandContext& context, const ParsedArgs& args) {
  ASSIGN_OR_RETURN(std::string word, OnePositional(args, "JOB"));
  v1::CancelJobRequest request;
  ASSIGN_OR_RETURN(int64_t id, ParseJobId(word));
  request.set_id(id);
  // Checked here: protobuf would refuse to serialize it, with no message.
  RETURN_IF_ERROR(ValidateText(args.Value("reason"), "--reason"));
  request.set_reason(args.Value("reason"));
  Connection connection(context.connection);
  v1::Job job;
  absl::Status cancelled = connection.Call([&](grpc::ClientContext* call) {
    job.Clear();
    return connection.jobs().CancelJob(call, request, &job);
  });
  if (absl::IsNotFound(cancelled)) {
    // Not a job: a job array's id (they never equal a job's).
    v1::CancelArrayRequest array_request;
    array_request.set_array_id(id);
    array_request.set_reason(request.reason());
    v1::CancelArrayResponse array;
    absl::Status array_cancelled =
        connection.Call([&](grpc::ClientContext* call) {
          array.Clear();
          return connection.jobs().CancelArray(call, array_request, &array);
        });
    // An older scheduler (UNIMPLEMENTED) or no such array: the job's error.
    if (absl::IsNotFound(array_cancelled) ||
        absl::IsUnimplemented(array_cancelled))
      return cancelled;
    RETURN_IF_ERROR(array_cancelled);
    if (context.output == OutputFormat::kJson) {
      *context.out << ToJson(array);
    } else {
      *context.out << "array " << id << ": " << array.cancelled() << " of "
                   << array.size() << " tasks cancelled (the rest had ended)\n";
    }
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(cancelled);
  if (context.output == OutputFormat::kJson) {
    *context.out << ToJson(job);
  } else {
    *context.out << "job " << id << " " << JobStateName(job.state()) << "\n";
  }
  return absl::OkStatus();
}

// Follows WatchJob until the job is terminal. A broken stream is reopened
// (the scheduler may restart) while the scheduler has been unreachable for
// less than the retry window; --timeout bounds the whole wait (default:
// no limit). A wait that runs out of time while the scheduler is
// unreachable reports that (exit 5), not a timeout (exit 1).
absl::Status RunWait(CommandContext& context, const ParsedArgs& args) {
  ASSIGN_OR_RETURN(std::string word, OnePositional(args, "JOB"));
  v1::GetJobRequest request;
  ASSIGN_OR_RETURN(int64_t id, ParseJobId(word));
  request.set_id(id);
  const absl::Time start = absl::Now();
  const absl::Time deadline = context.timeout_flag.has_value()
                                  ? start + *context.timeout_flag
                                  : absl::InfiniteFuture();
  Connection connection(context.connection);
  // Table output shows the job's progress while it waits; JSON output is
  // the final job only.
  std::optional<ProgressPrinter> progress;
  if (context.output == OutputFormat::kTable)
    progress.emplace(context.out, context.out_is_terminal,
                     context.terminal_columns);
  v1::Job last;
  bool seen = false;
  absl::Time unreachable_since = absl::InfiniteFuture();
  grpc::Status unreachable_status;  // the last UNAVAILABLE
  absl::Duration backoff = absl::ZeroDuration();
  while (true) {
    std::unique_ptr<grpc::ClientContext> call = connection.NewContext(
        deadline == absl::InfiniteFuture() ? absl::InfiniteDuration()
                                           : deadline - absl::Now());
    std::unique_ptr<grpc::ClientReader<v1::Job>> reader =
        connection.jobs().WatchJob(call.get(), request);
    v1::Job job;
    while (reader->Read(&job)) {
      last = job;
      seen = true;
      unreachable_since = absl::InfiniteFuture();
      backoff = absl::ZeroDuration();
      if (IsTerminal(job.state())) {
        call->TryCancel();
        reader->Finish().ok();  // CANCELLED by us; nothing to report
        // The last line keeps the final step, loss and cost on screen.
        if (progress && context.out_is_terminal) {
          progress->Show(job, absl::Now());
          progress->Finish();
        }
        return WaitResult(context, job);
      }
      if (progress) progress->Show(job, absl::Now());
    }
    const grpc::Status status = reader->Finish();
    const absl::Time now = absl::Now();
    if (progress) progress->Finish();
    if (IsRetryable(status.error_code())) {
      unreachable_since = std::min(unreachable_since, now);
      unreachable_status = status;
    }
    if (now >= deadline) {
      // Out of time while the scheduler could not be reached (no state
      // since it last failed, or none at all): that is the news, not the
      // job's state.
      if (unreachable_since != absl::InfiniteFuture())
        return connection.Convert(unreachable_status);
      if (!seen && !status.ok()) return connection.Convert(status);
      return OperationFailedError(absl::StrCat(
          "timed out after ", HumanDuration(now - start), " waiting for job ",
          id,
          seen ? absl::StrCat(" (still ", JobStateName(last.state()), ")")
               : ""));
    }
    if (!status.ok() && !IsRetryable(status.error_code()))
      return connection.Convert(status);
    if (!status.ok() && now - unreachable_since >= context.connection.retry_for)
      return connection.Convert(status);
    // The stream ended without a terminal state (scheduler restart or a
    // clean close): back off and watch again.
    backoff = NextBackoff(backoff);
    absl::SleepFor(std::min(backoff, deadline - now));
  }
}

}  // namespace tupa::client

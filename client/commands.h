// The CLI's subcommands. Each declares its own flags and runs against a
// CommandContext; each returns a Status that the dispatcher turns into a
// message on stderr and an exit code (exit_codes.h). Output goes to
// `context.out` only. Not thread-safe.
#ifndef TUPA_CLIENT_COMMANDS_H_
#define TUPA_CLIENT_COMMANDS_H_

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/args.h"
#include "client/connection.h"
#include "client/output.h"

namespace tupa::client {

// What every command gets: where to connect and how to print.
struct CommandContext {
  ConnectionOptions connection;
  // --timeout as given; commands with their own default (wait, logs -f)
  // look here, the rest use connection.call_timeout.
  std::optional<absl::Duration> timeout_flag;
  OutputFormat output = OutputFormat::kTable;
  absl::Time now;  // for humanised times
  std::ostream* out;
  std::ostream* err;
  bool out_is_terminal = false;  // CliEnvironment's
  int terminal_columns = 0;
};

void AddSubmitFlags(FlagSet& flags);
absl::Status RunSubmit(CommandContext& context, const ParsedArgs& args);

void AddListFlags(FlagSet& flags);
absl::Status RunList(CommandContext& context, const ParsedArgs& args);
absl::Status RunGet(CommandContext& context, const ParsedArgs& args);

void AddCancelFlags(FlagSet& flags);
absl::Status RunCancel(CommandContext& context, const ParsedArgs& args);
absl::Status RunWait(CommandContext& context, const ParsedArgs& args);

void AddLogsFlags(FlagSet& flags);
absl::Status RunLogs(CommandContext& context, const ParsedArgs& args);

void AddWorkersFlags(FlagSet& flags);
absl::Status RunWorkers(CommandContext& context, const ParsedArgs& args);
void AddDrainFlags(FlagSet& flags);
absl::Status RunDrain(CommandContext& context, const ParsedArgs& args);

// `cost` and `estimate`. A scheduler without the money API (UNIMPLEMENTED)
// is reported as such, exit 1. `estimate` fails (exit 1) when no region or
// GPU type can run the spec.
void AddCostFlags(FlagSet& flags);
absl::Status RunCost(CommandContext& context, const ParsedArgs& args);
void AddEstimateFlags(FlagSet& flags);
absl::Status RunEstimate(CommandContext& context, const ParsedArgs& args);

// `why`: the reason code, jobs ahead and estimated start of a job.
absl::Status RunWhy(CommandContext& context, const ParsedArgs& args);
// The table form of a WhyJob answer, one line ending in '\n'.
std::string FormatWhy(const v1::WhyJobResponse& why, absl::Time now);

// `tupa admin token create|list|revoke` (admin_commands.cc).
void AddAdminFlags(FlagSet& flags);
absl::Status RunAdmin(CommandContext& context, const ParsedArgs& args);

// A fresh random idempotency key: 128 bits as 32 hex digits.
std::string NewIdempotencyKey();

// The single positional argument of a command ("JOB", "WORKER"), or
// InvalidArgument naming it.
absl::StatusOr<std::string> OnePositional(const ParsedArgs& args,
                                          absl::string_view name);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_COMMANDS_H_

#include "client/cli.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/args.h"
#include "client/commands.h"
#include "client/exit_codes.h"
#include "common/files.h"
#include "common/quantity.h"
#include "common/status_macros.h"

namespace tupa::client {
namespace {

struct Command {
  const char* name;
  const char* synopsis;
  const char* summary;
  void (*add_flags)(FlagSet&);
  absl::Status (*run)(CommandContext&, const ParsedArgs&);
  // Default retry window for UNAVAILABLE; --retry-for overrides it.
  absl::Duration retry_for;
};

void NoFlags(FlagSet&) {}

const Command kCommands[] = {
    {"submit",
     "tupa submit [-f job.yaml] [--array 0-99%10] [flags] [-- CMD ARGS]",
     "submit a job", AddSubmitFlags, RunSubmit, absl::Seconds(60)},
    {"list",
     "tupa list [--state S] [--user U] [--team T] [--limit N] [--array ID] "
     "[--expand]",
     "list jobs", AddListFlags, RunList, absl::ZeroDuration()},
    {"get", "tupa get JOB", "show one job", NoFlags, RunGet,
     absl::ZeroDuration()},
    {"logs", "tupa logs [-f] [--rank R] [--attempt A] JOB",
     "print (and follow) a job's logs", AddLogsFlags, RunLogs,
     absl::ZeroDuration()},
    {"cancel", "tupa cancel JOB|ARRAY [--reason TEXT]",
     "cancel a job, or every unfinished task of a job array", AddCancelFlags,
     RunCancel, absl::ZeroDuration()},
    {"wait", "tupa wait JOB [--timeout D]",
     "wait for a job to end; exit 0 only if it SUCCEEDED", NoFlags, RunWait,
     absl::Seconds(60)},
    {"workers", "tupa workers [--all]", "list workers", AddWorkersFlags,
     RunWorkers, absl::ZeroDuration()},
    {"drain", "tupa drain WORKER [--undo]",
     "stop placing new work on a worker (--undo: start again)", AddDrainFlags,
     RunDrain, absl::ZeroDuration()},
    {"cost",
     "tupa cost [--by team|user|gpu-type|region|day|job|array] [--since WHEN] "
     "[--until WHEN]",
     "money spent per group, with totals and idle cost", AddCostFlags, RunCost,
     absl::ZeroDuration()},
    {"admin",
     "tupa admin token create --user U --team T [--admin] | "
     "tupa admin token list [--all] | tupa admin token revoke ID",
     "manage API tokens (admin only)", AddAdminFlags, RunAdmin,
     absl::ZeroDuration()},
    {"estimate", "tupa estimate [-f job.yaml] [flags] [-- CMD ARGS]",
     "cost and finish time per region and GPU type; submits nothing",
     AddEstimateFlags, RunEstimate, absl::ZeroDuration()},
    {"why", "tupa why JOB",
     "why a job waits: reason code, jobs ahead, estimated start", NoFlags,
     RunWhy, absl::ZeroDuration()},
};

const Command* FindCommand(absl::string_view name) {
  for (const Command& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

FlagSet CommandFlags(const Command& command) {
  FlagSet flags(command.synopsis);
  command.add_flags(flags);
  flags.AddValue("output", "FORMAT", "table (default) or json", "o")
      .AddValue("scheduler", "HOST:PORT",
                "scheduler address (env TUPA_SCHEDULER, default "
                "localhost:50051)")
      .AddValue("timeout", "D",
                "deadline per call (default 30s; wait: how long to wait; "
                "logs -f: how long to follow)")
      .AddValue("retry-for", "D",
                "keep retrying an unreachable scheduler this long")
      .AddValue("tls-ca", "FILE",
                "PEM CA of the scheduler's certificate: use TLS (env "
                "TUPA_TLS_CA)")
      .AddValue("tls-cert", "FILE",
                "PEM client certificate, for mTLS (env TUPA_TLS_CERT)")
      .AddValue("tls-key", "FILE", "PEM key of --tls-cert (env TUPA_TLS_KEY)")
      .AddBool("help", "show this help", "h");
  return flags;
}

std::string GeneralUsage() {
  std::string text =
      "usage: tupa COMMAND [flags]\n\n"
      "Runs and inspects jobs on a tupa cluster.\n\ncommands:\n";
  for (const Command& c : kCommands)
    absl::StrAppend(&text, "  ", c.name, std::string(10 - strlen(c.name), ' '),
                    c.summary, "\n");
  absl::StrAppend(&text,
                  "  version   print the version\n"
                  "  help      show help (tupa help COMMAND)\n\n"
                  "environment: TUPA_SCHEDULER (host:port), TUPA_TOKEN "
                  "(bearer token), TUPA_TLS_CA, TUPA_TLS_CERT, TUPA_TLS_KEY\n"
                  "exit codes: 0 ok, 1 failed, 2 bad usage, 3 not found, "
                  "4 permission denied, 5 scheduler unreachable\n");
  return text;
}

// Splits `args` into the command name and the rest, letting the shared
// flags come before the command (`tupa --scheduler H:P list`).
std::pair<std::string, std::vector<std::string>> SplitCommand(
    const std::vector<std::string>& args) {
  static const Command kShared = {"",      "",      "",
                                  NoFlags, nullptr, absl::ZeroDuration()};
  const FlagSet flags = CommandFlags(kShared);
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;
    if (absl::StartsWith(word, "-") && word.size() > 1) {
      rest.push_back(word);
      if (flags.TakesSeparateValue(word) && i + 1 < args.size())
        rest.push_back(args[++i]);
      continue;
    }
    rest.insert(rest.end(), args.begin() + i + 1, args.end());
    return {word, rest};
  }
  return {"", args};
}

// Reads the PEM file at `path`, which `source` (a flag or an environment
// variable) named. Checked here, because gRPC reports an unusable PEM only
// as log lines and an "empty address list" at the first call.
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view source) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", path, " is a directory, not a PEM file"));
  errno = 0;
  std::optional<std::string> text = ReadWholeFile(path);
  if (!text) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": cannot read ", path,
        errno != 0 ? absl::StrCat(": ", std::strerror(errno)) : ""));
  }
  if (!absl::StrContains(*text, "-----BEGIN "))
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", path, " is not PEM (no -----BEGIN line)"));
  return *std::move(text);
}

absl::Status ResolveContext(const ParsedArgs& parsed, const CliEnvironment& env,
                            const Command& command, CommandContext& context) {
  ConnectionOptions& c = context.connection;
  c.target = parsed.Value(
      "scheduler", env.scheduler.empty() ? kDefaultScheduler : env.scheduler);
  if (c.target.empty())
    return absl::InvalidArgumentError("--scheduler: must not be empty");
  // A token read from a file often ends in a newline; any other byte that
  // an HTTP/2 header cannot carry is refused here, without echoing it (gRPC
  // would abort and print the whole secret).
  c.token = std::string(absl::StripAsciiWhitespace(env.token));
  for (unsigned char ch : c.token)
    if (ch < 0x21 || ch > 0x7e)
      return absl::InvalidArgumentError(
          "TUPA_TOKEN: contains a space, control or non-ASCII character");
  const struct {
    const char* flag;
    const char* env_name;
    const std::string& env_value;
    std::string* pem;
  } tls[] = {{"tls-ca", "TUPA_TLS_CA", env.tls_ca, &c.tls_ca_pem},
             {"tls-cert", "TUPA_TLS_CERT", env.tls_cert, &c.tls_cert_pem},
             {"tls-key", "TUPA_TLS_KEY", env.tls_key, &c.tls_key_pem}};
  for (const auto& t : tls) {
    const bool from_flag = parsed.Has(t.flag);
    const std::string path = from_flag ? parsed.Value(t.flag) : t.env_value;
    if (path.empty()) continue;
    ASSIGN_OR_RETURN(*t.pem,
                     ReadPemFile(path, from_flag ? absl::StrCat("--", t.flag)
                                                 : std::string(t.env_name)));
  }
  if (c.tls_cert_pem.empty() != c.tls_key_pem.empty())
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key: give both or neither");
  if (parsed.Has("timeout")) {
    ASSIGN_OR_RETURN(absl::Duration d,
                     ParseDuration(parsed.Value("timeout"), "--timeout"));
    if (d <= absl::ZeroDuration())
      return absl::InvalidArgumentError("--timeout: must be positive");
    context.timeout_flag = d;
    c.call_timeout = d;
  }
  c.retry_for = command.retry_for;
  if (parsed.Has("retry-for")) {
    ASSIGN_OR_RETURN(c.retry_for,
                     ParseDuration(parsed.Value("retry-for"), "--retry-for"));
  }
  ASSIGN_OR_RETURN(context.output, ParseOutputFormat(parsed.Value("output")));
  return absl::OkStatus();
}

// An error without a message (gRPC gives none when protobuf refuses to
// serialize a request) is still named, by its status code.
int Fail(std::ostream& err, const absl::Status& status) {
  err << "tupa: "
      << (status.message().empty() ? absl::StatusCodeToString(status.code())
                                   : std::string(status.message()))
      << "\n";
  return ExitCodeFor(status);
}

}  // namespace

int RunCli(const std::vector<std::string>& args, const CliEnvironment& env,
           std::ostream& out, std::ostream& err) {
  auto [name, rest] = SplitCommand(args);
  if (name.empty()) {
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      out << GeneralUsage();
      return kExitOk;
    }
    if (!args.empty() && args[0] == "--version")
      name = "version";
    else {
      err << GeneralUsage();
      return kExitUsage;
    }
  }
  if (name == "version") {
    out << "tupa " << kVersion << "\n";
    return kExitOk;
  }
  if (name == "help") {
    if (rest.empty()) {
      out << GeneralUsage();
      return kExitOk;
    }
    const Command* command = FindCommand(rest[0]);
    if (command == nullptr) {
      return Fail(err,
                  absl::InvalidArgumentError(absl::StrCat(
                      "unknown command \"", rest[0], "\" (see tupa help)")));
    }
    out << CommandFlags(*command).Usage();
    return kExitOk;
  }
  const Command* command = FindCommand(name);
  if (command == nullptr) {
    return Fail(err, absl::InvalidArgumentError(absl::StrCat(
                         "unknown command \"", name, "\" (see tupa help)")));
  }
  const FlagSet flags = CommandFlags(*command);
  absl::StatusOr<ParsedArgs> parsed = flags.Parse(rest);
  if (!parsed.ok()) return Fail(err, parsed.status());
  if (parsed->Bool("help")) {
    out << flags.Usage();
    return kExitOk;
  }
  CommandContext context;
  context.out = &out;
  context.err = &err;
  context.now = absl::Now();
  context.out_is_terminal = env.out_is_terminal;
  context.terminal_columns = env.terminal_columns;
  if (absl::Status s = ResolveContext(*parsed, env, *command, context);
      !s.ok()) {
    return Fail(err, s);
  }
  const absl::Status status = command->run(context, *parsed);
  out.flush();
  if (!status.ok()) return Fail(err, status);
  return kExitOk;
}

}  // namespace tupa::client

// The `tupa` command line: finds the subcommand, parses its flags, resolves
// the connection settings and runs it. main() only gathers argv and the
// environment and calls RunCli; tests call RunCli directly.
#ifndef TUPA_CLIENT_CLI_H_
#define TUPA_CLIENT_CLI_H_

#include <ostream>
#include <string>
#include <vector>

namespace tupa::client {

inline constexpr char kVersion[] = "0.1.0";

// What the CLI takes from the process environment.
struct CliEnvironment {
  std::string scheduler;  // TUPA_SCHEDULER; empty = default
  std::string token;      // TUPA_TOKEN; empty = none
  // TLS (file paths): TUPA_TLS_CA enables TLS; TUPA_TLS_CERT/TUPA_TLS_KEY
  // are a client certificate for a scheduler that requires mTLS.
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  // Whether standard output is a terminal, and its width (0 = unknown):
  // `tupa wait` then redraws a progress line in place.
  bool out_is_terminal = false;
  int terminal_columns = 0;
};

// Runs `tupa ARGS...` (`args` excludes the program name). Writes results to
// `out` and "tupa: <message>" errors to `err`. Returns the exit code
// (exit_codes.h).
int RunCli(const std::vector<std::string>& args, const CliEnvironment& env,
           std::ostream& out, std::ostream& err);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_CLI_H_

// tupa: the command-line client of the tupa scheduler (DESIGN §3).
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "client/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  tupa::client::CliEnvironment env;
  if (const char* s = std::getenv("TUPA_SCHEDULER")) env.scheduler = s;
  if (const char* t = std::getenv("TUPA_TOKEN")) env.token = t;
  if (const char* v = std::getenv("TUPA_TLS_CA")) env.tls_ca = v;
  if (const char* v = std::getenv("TUPA_TLS_CERT")) env.tls_cert = v;
  if (const char* v = std::getenv("TUPA_TLS_KEY")) env.tls_key = v;
  env.out_is_terminal = isatty(STDOUT_FILENO) == 1;
  if (winsize ws{};
      env.out_is_terminal && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
    env.terminal_columns = ws.ws_col;
  return tupa::client::RunCli(args, env, std::cout, std::cerr);
}

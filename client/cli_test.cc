// RunCli without a scheduler: bad input exits 2 naming the field, before any
// connection is made. A listening socket stands in for the scheduler and
// proves that nothing connected to it.
#include "client/cli.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/exit_codes.h"

namespace tupa::client {
namespace {

// A TCP listener on a free loopback port that never accepts.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(fd_, 16);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    fcntl(fd_, F_SETFL, O_NONBLOCK);
  }
  ~Listener() { close(fd_); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  // True when a client has connected (the connection is pending).
  bool Connected() const {
    const int c = accept(fd_, nullptr, nullptr);
    if (c >= 0) close(c);
    return c >= 0;
  }

 private:
  int fd_;
  int port_ = 0;
};

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunTupa(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliEnvironment env;
  const int code = RunCli(args, env, out, err);
  return {code, out.str(), err.str()};
}

// `tupa COMMAND --scheduler <listener> ARGS...`.
Result RunAgainst(const Listener& scheduler, const std::string& command,
                  const std::vector<std::string>& args) {
  std::vector<std::string> all = {command, "--scheduler", scheduler.address()};
  all.insert(all.end(), args.begin(), args.end());
  return RunTupa(all);
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path) << text;
  return path;
}

struct BadInput {
  const char* what;
  std::vector<std::string> args;  // after "COMMAND --scheduler ADDR"
  const char* field;              // must appear in the message
};

TEST(CliTest, BadSubmitInputExitsTwoNamingTheFieldAndSendsNothing) {
  const std::string bad_yaml =
      WriteFile("cli_test_bad.yaml", "name: [unclosed\nresources: {gpus: 1\n");
  const std::string unknown_field = WriteFile(
      "cli_test_unknown.yaml", "command: [echo]\nresources: {gpu: 1}\n");
  const std::string negative_gpus = WriteFile(
      "cli_test_negative.yaml", "command: [echo]\nresources: {gpus: -4}\n");
  const BadInput cases[] = {
      {"unknown flag", {"--gpuz", "1", "--", "echo"}, "--gpuz"},
      {"negative gpus", {"--gpus", "-1", "--", "echo"}, "--gpus"},
      {"absurd gpus", {"--gpus", "100000", "--", "echo"}, "resources.gpus"},
      {"non-numeric gpus", {"--gpus", "abc", "--", "echo"}, "--gpus"},
      {"zero nodes", {"--nodes", "0", "--", "echo"}, "--nodes"},
      {"absurd nodes", {"--nodes", "999999", "--", "echo"}, "--nodes"},
      {"bad duration", {"--max-runtime", "2x", "--", "echo"}, "--max-runtime"},
      {"bad memory", {"--memory", "lots", "--", "echo"}, "--memory"},
      {"bad money", {"--max-cost", "-3", "--", "echo"}, "--max-cost"},
      {"bad priority", {"--priority", "101", "--", "echo"}, "priority"},
      {"bad launch", {"--launch", "sideways", "--", "echo"}, "--launch"},
      {"bad env", {"--env", "NOEQUALS", "--", "echo"}, "--env"},
      {"empty command", {"--gpus", "1", "--"}, "command"},
      {"no command", {"--gpus", "1"}, "command"},
      {"stray argument", {"echo", "hi"}, "--"},
      {"bad YAML", {"-f", bad_yaml}, "spec"},
      {"unknown YAML field", {"-f", unknown_field}, "resources.gpu"},
      {"negative YAML gpus", {"-f", negative_gpus}, "resources.gpus"},
      {"missing file", {"-f", "/nonexistent/job.yaml"}, "-f"},
      {"directory", {"-f", ::testing::TempDir()}, "is a directory"},
      {"missing flag value", {"--gpus"}, "--gpus"},
      {"bad output format", {"-o", "xml", "--", "echo"}, "-o"},
      {"bad timeout", {"--timeout", "soon", "--", "echo"}, "--timeout"},
  };
  Listener scheduler;
  for (const BadInput& c : cases) {
    const Result r = RunAgainst(scheduler, "submit", c.args);
    EXPECT_EQ(r.code, kExitUsage) << c.what << ": " << r.err;
    EXPECT_TRUE(absl::StartsWith(r.err, "tupa: ")) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.field), std::string::npos)
        << c.what << ": expected \"" << c.field << "\" in: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.what;
  }
  EXPECT_FALSE(scheduler.Connected()) << "a bad submit reached the scheduler";
}

TEST(CliTest, BadArgumentsToOtherCommandsExitTwo) {
  Listener scheduler;
  const std::vector<std::vector<std::string>> cases = {
      {"get"},
      {"get", "abc"},
      {"get", "-5"},
      {"get", "1", "2"},
      {"cancel"},
      {"wait", "x"},
      {"wait", "1", "--timeout", "forever"},
      {"logs", "1", "--rank", "-2"},
      {"logs", "1", "--attempt", "0"},
      {"list", "--state", "sleeping"},
      {"list", "--limit", "many"},
      {"drain"},
      {"frobnicate"},
  };
  for (auto args : cases) {
    args.push_back("--scheduler=" + scheduler.address());
    const Result r = RunTupa(args);
    EXPECT_EQ(r.code, kExitUsage) << args[0] << ": " << r.err;
    EXPECT_TRUE(absl::StartsWith(r.err, "tupa: ")) << r.err;
  }
  EXPECT_FALSE(scheduler.Connected());
}

// protobuf refuses to serialize such a request: it used to fail with an
// empty message after connecting.
TEST(CliTest, TextThatIsNotUtf8ExitsTwoNamingTheFlagAndSendsNothing) {
  const std::string bad = "bad\xffutf8";
  const BadInput cases[] = {
      {"cancel reason", {"cancel", "2", "--reason", bad}, "--reason: "},
      {"list user", {"list", "--user", bad}, "--user: "},
      {"list team", {"list", "--team", bad}, "--team: "},
      {"drain worker", {"drain", bad}, "WORKER: "},
      {"token user",
       {"admin", "token", "create", "--user", bad, "--team", "t"},
       "--user: "},
      {"token team",
       {"admin", "token", "create", "--user", "u", "--team", bad},
       "--team: "},
  };
  Listener scheduler;
  for (const BadInput& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back("--scheduler=" + scheduler.address());
    const Result r = RunTupa(args);
    EXPECT_EQ(r.code, kExitUsage) << c.what << ": " << r.err;
    EXPECT_EQ(r.err, absl::StrCat("tupa: ", c.field, "is not valid UTF-8\n"))
        << c.what;
  }
  EXPECT_FALSE(scheduler.Connected()) << "bad text reached the scheduler";
}

TEST(CliTest, TlsFilesThatAreNotPemExitTwoNamingTheFlag) {
  const std::string text = WriteFile("cli_test_not_pem.txt", "myhost\n");
  const BadInput cases[] = {
      {"not PEM", {"--tls-ca", text}, "--tls-ca: "},
      {"missing",
       {"--tls-ca", ::testing::TempDir() + "/cli_test_no_such_ca.pem"},
       "--tls-ca: "},
      {"directory", {"--tls-cert", ::testing::TempDir()}, "--tls-cert: "},
  };
  Listener scheduler;
  for (const BadInput& c : cases) {
    const Result r = RunAgainst(scheduler, "list", c.args);
    EXPECT_EQ(r.code, kExitUsage) << c.what << ": " << r.err;
    EXPECT_TRUE(absl::StartsWith(r.err, absl::StrCat("tupa: ", c.field)))
        << c.what << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  std::ostringstream out, err;
  CliEnvironment env;
  env.scheduler = scheduler.address();
  env.tls_ca = text;
  EXPECT_EQ(RunCli({"list"}, env, out, err), kExitUsage);
  EXPECT_TRUE(absl::StartsWith(err.str(), "tupa: TUPA_TLS_CA: ")) << err.str();
  EXPECT_FALSE(scheduler.Connected());
}

TEST(CliTest, BadCostAndEstimateInputExitsTwoNamingTheFieldAndSendsNothing) {
  const std::string negative_gpus = WriteFile(
      "cli_test_estimate.yaml", "command: [echo]\nresources: {gpus: -4}\n");
  const BadInput cases[] = {
      {"unknown group", {"cost", "--by", "month"}, "--by"},
      {"empty group", {"cost", "--by="}, "--by"},
      {"word for since", {"cost", "--since", "yesterday"}, "--since"},
      {"negative since", {"cost", "--since", "-7d"}, "--since"},
      {"bad date", {"cost", "--until", "2026-13-01"}, "--until"},
      {"since after until",
       {"cost", "--since", "1d", "--until", "2d"},
       "--since"},
      {"since in the future", {"cost", "--since", "2999-01-01"}, "--since"},
      {"stray argument", {"cost", "team"}, "team"},
      {"bad gpus", {"estimate", "--gpus", "-1", "--", "echo"}, "--gpus"},
      {"bad money",
       {"estimate", "--max-cost", "x", "--", "echo"},
       "--max-cost"},
      {"no command", {"estimate", "--gpus", "1"}, "command"},
      {"bad YAML field", {"estimate", "-f", negative_gpus}, "resources.gpus"},
  };
  Listener scheduler;
  for (const BadInput& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back("--scheduler=" + scheduler.address());
    const Result r = RunTupa(args);
    EXPECT_EQ(r.code, kExitUsage) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.field), std::string::npos)
        << c.what << ": expected \"" << c.field << "\" in: " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.what;
  }
  EXPECT_FALSE(scheduler.Connected()) << "bad input reached the scheduler";
}

TEST(CliTest, DryRunPrintsTheMergedSpecAsJson) {
  const Result r =
      RunTupa({"submit", "--dry-run", "--gpus", "2", "--nodes", "2",
               "--gpu-type", "A100,H100", "--", "echo", "hi"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("\"gpu_type\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"LAUNCH_MODE_PER_GPU\""), std::string::npos);
}

TEST(CliTest, UnreachableSchedulerExitsFive) {
  std::string closed;  // a port that was free a moment ago
  {
    Listener l;
    closed = l.address();
  }
  const Result r = RunTupa({"list", "--scheduler", closed, "--timeout", "2s"});
  EXPECT_EQ(r.code, kExitUnreachable) << r.err;
  EXPECT_NE(r.err.find(closed), std::string::npos) << r.err;
}

// Running out of --timeout while the scheduler cannot be reached is not a
// job that is still running.
TEST(CliTest, WaitTimingOutOnAnUnreachableSchedulerExitsFive) {
  std::string closed;
  {
    Listener l;
    closed = l.address();
  }
  const Result refused =
      RunTupa({"wait", "1", "--scheduler", closed, "--timeout", "1s"});
  EXPECT_EQ(refused.code, kExitUnreachable) << refused.err;
  EXPECT_NE(refused.err.find(closed), std::string::npos) << refused.err;
  Listener silent;  // accepts the connection, never answers
  const Result hung = RunTupa(
      {"wait", "1", "--scheduler", silent.address(), "--timeout", "1s"});
  EXPECT_EQ(hung.code, kExitUnreachable) << hung.err;
  EXPECT_EQ(hung.err.find("timed out"), std::string::npos) << hung.err;
}

// The probe behind the "sends nothing" checks above does see a real call.
TEST(CliTest, ListenerSeesAValidRequest) {
  Listener scheduler;
  const Result r = RunTupa(
      {"get", "1", "--scheduler", scheduler.address(), "--timeout", "500ms"});
  EXPECT_EQ(r.code, kExitUnreachable) << r.err;
  EXPECT_TRUE(scheduler.Connected());
}

TEST(CliTest, HelpAndVersionExitZero) {
  EXPECT_EQ(RunTupa({"help"}).code, kExitOk);
  EXPECT_EQ(RunTupa({"--help"}).code, kExitOk);
  EXPECT_EQ(RunTupa({"version"}).code, kExitOk);
  const Result help = RunTupa({"submit", "--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_NE(help.out.find("--gpu-type"), std::string::npos);
  EXPECT_EQ(RunTupa({"help", "logs"}).code, kExitOk);
  const Result cost = RunTupa({"help", "cost"});
  EXPECT_EQ(cost.code, kExitOk);
  EXPECT_NE(cost.out.find("--since WHEN"), std::string::npos) << cost.out;
  EXPECT_NE(cost.out.find("gpu-type"), std::string::npos) << cost.out;
  const Result estimate = RunTupa({"estimate", "--help"});
  EXPECT_EQ(estimate.code, kExitOk);
  EXPECT_NE(estimate.out.find("--max-runtime"), std::string::npos);
  EXPECT_EQ(estimate.out.find("--idempotency-key"), std::string::npos);
  const Result general = RunTupa({"help"});
  EXPECT_NE(general.out.find("  estimate  "), std::string::npos);
  EXPECT_NE(general.out.find("  cost      "), std::string::npos);
}

TEST(CliTest, NoCommandIsUsageError) {
  const Result r = RunTupa({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("usage"), std::string::npos);
}

}  // namespace
}  // namespace tupa::client

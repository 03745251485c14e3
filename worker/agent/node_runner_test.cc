#include "worker/agent/node_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/synchronization/notification.h"

namespace tupa::worker {
namespace {

struct Result {
  absl::Notification done;
  int code = -1;
  std::string message;
};

// Each test runs twice: ranks started through tupa-rank-shim (built beside
// this test) and through the fallback, a fork of this process.
std::string rank_shim;

class NodeRunnerTest : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    rank_shim.clear();
    if (GetParam()) {
      rank_shim = RankShimBesideThisProgram();
      ASSERT_FALSE(rank_shim.empty()) << "tupa-rank-shim is not built";
    }
  }
};

INSTANTIATE_TEST_SUITE_P(BothWays, NodeRunnerTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "RankShimProgram" : "ForkedShim";
                         });

// Which way this instance runs, for paths of its own (the two may run at
// once under ctest -j).
std::string Way() { return rank_shim.empty() ? "fork" : "shim"; }

NodeRunnerOptions Options(std::vector<std::vector<std::string>> argvs,
                          Result* result) {
  NodeRunnerOptions o;
  o.rank_shim = rank_shim;
  for (size_t i = 0; i < argvs.size(); ++i) {
    RankProcess r;
    r.global_rank = static_cast<int>(i);
    r.argv = argvs[i];
    r.env["TUPA_TEST_RANK"] = std::to_string(i);
    o.ranks.push_back(r);
  }
  std::string name =
      testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');
  o.log_dir = testing::TempDir() + "/node_runner_" + name;
  std::filesystem::remove_all(o.log_dir);  // logs are appended to
  o.kill_grace = absl::Seconds(1);
  o.on_exit = [result](int code, const std::string& message) {
    result->code = code;
    result->message = message;
    result->done.Notify();
  };
  return o;
}

// Whether any live (non-zombie) process belongs to process group `pgid`.
bool GroupHasLiveMembers(int pgid) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (sscanf(line.c_str() + close + 1, " %c %d %d", &state, &ppid, &pgrp) !=
        3)
      continue;
    if (pgrp == pgid && state != 'Z') return true;
  }
  return false;
}

bool Alive(int pid) { return GroupHasLiveMembers(pid); }

// The first line rank `rank` wrote.
std::string FirstLogLine(const NodeRunnerOptions& o, int rank) {
  std::ifstream log(o.log_dir + "/rank-" + std::to_string(rank) + ".log");
  std::string line;
  std::getline(log, line);
  return line;
}

TEST_P(NodeRunnerTest, AllRanksSucceedAndLogPerRank) {
  Result result;
  auto o = Options({{"sh", "-c", "echo hello from $TUPA_TEST_RANK"},
                    {"sh", "-c", "echo hello from $TUPA_TEST_RANK"}},
                   &result);
  NodeRunner runner(o);
  runner.Start();
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(result.code, 0);
  EXPECT_EQ(FirstLogLine(o, 1), "hello from 1");
}

TEST_P(NodeRunnerTest, OneFailingRankKillsTheOthers) {
  Result result;
  NodeRunner runner(
      Options({{"sh", "-c", "exit 3"}, {"sleep", "300"}}, &result));
  runner.Start();
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(result.code, 3);
  EXPECT_EQ(result.message, "rank 0 exited with code 3");
  for (int pid : runner.pids()) EXPECT_FALSE(Alive(pid));
}

TEST_P(NodeRunnerTest, CancelKillsEveryProcessGroupIncludingChildren) {
  Result result;
  // Each rank starts a grandchild in its group; both must die.
  NodeRunner runner(Options({{"sh", "-c", "sleep 300 & sleep 300; wait"},
                             {"sh", "-c", "trap '' TERM; sleep 300"}},
                            &result));
  runner.Start();
  absl::SleepFor(absl::Milliseconds(300));
  runner.Cancel("user asked");
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(result.message, "cancelled: user asked");
  for (int pid : runner.pids()) {
    EXPECT_FALSE(GroupHasLiveMembers(pid)) << "group " << pid << " lives on";
  }
}

TEST_P(NodeRunnerTest, MaxRuntimeKillsTheNode) {
  Result result;
  auto o = Options({{"sleep", "300"}}, &result);
  o.max_runtime = absl::Milliseconds(300);
  NodeRunner runner(o);
  runner.Start();
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(result.code, 124);
  EXPECT_NE(result.message.find("max_runtime exceeded"), std::string::npos);
}

TEST_P(NodeRunnerTest, MissingProgramFailsWith127) {
  Result result;
  NodeRunner runner(Options({{"/nonexistent/program"}}, &result));
  runner.Start();
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(result.code, 127);
}

TEST_P(NodeRunnerTest, FindsTheCommandOnTheRanksOwnPath) {
  // A program that exists only on the PATH the job's env gives its rank.
  const std::string bin = testing::TempDir() + "/node_runner_path_bin_" + Way();
  std::filesystem::create_directories(bin);
  const std::string program = bin + "/tupa-test-only-on-job-path";
  {
    std::ofstream out(program);
    out << "#!/bin/sh\nexit 7\n";
  }
  std::filesystem::permissions(program, std::filesystem::perms::owner_all);
  Result result;
  NodeRunnerOptions o = Options({{"tupa-test-only-on-job-path"}}, &result);
  o.ranks[0].env["PATH"] = bin + "-missing:" + bin;
  NodeRunner runner(std::move(o));
  runner.Start();
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(result.code, 7);  // ran it; 127 would mean not found
}

TEST_P(NodeRunnerTest, RanksInheritNoDescriptorOfTheWorker) {
  // A descriptor the worker holds without O_CLOEXEC (like the write end of
  // another node's output pipe, which the shim held because it never
  // execs): the rank must not get it.
  // Moved above the low numbers: the listing shell's own pipe to `tr`
  // (3 and 4 while it forks) must not be taken for it.
  const std::string held = testing::TempDir() + "/node_runner_held_fd_" + Way();
  const int low = open(held.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(low, 3);
  const int fd = fcntl(low, F_DUPFD, 50);  // no FD_CLOEXEC, like `low`
  close(low);
  ASSERT_GE(fd, 50);
  Result result;
  NodeRunnerOptions o =
      Options({{"sh", "-c", "ls /proc/$$/fd | tr '\\n' ' '"}}, &result);
  NodeRunner runner(o);
  runner.Start();
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  close(fd);
  const std::string fds = FirstLogLine(o, 0);
  EXPECT_EQ(result.code, 0);
  EXPECT_EQ(fds.find(" " + std::to_string(fd) + " "), std::string::npos)
      << "the rank's descriptors: " << fds;
}

TEST_P(NodeRunnerTest, AProcessThatLeftTheRankGroupDoesNotHoldTheNodeOpen) {
  // The rank exits at once, leaving a child in a session of its own that
  // keeps the output pipe open for 30 s.
  Result result;
  NodeRunner runner(Options(
      {{"sh", "-c", "setsid sleep 30 & echo started; exit 0"}}, &result));
  const absl::Time start = absl::Now();
  runner.Start();
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(result.code, 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_P(NodeRunnerTest, AWorkDirThatCannotBeEnteredFailsWithAMessage) {
  Result result;
  NodeRunnerOptions o = Options({{"true"}}, &result);
  o.work_dir = o.log_dir + "/no-such-work-dir";
  NodeRunner runner(o);
  runner.Start();
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(result.code, 126);
  const std::string line = FirstLogLine(o, 0);
  EXPECT_NE(line.find("cannot enter the work directory " + o.work_dir),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace tupa::worker

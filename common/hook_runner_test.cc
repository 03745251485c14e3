#include "common/hook_runner.h"

#include <gtest/gtest.h>

#include <fstream>

namespace tupa {
namespace {

TEST(RunHook, PassesTheEnvironment) {
  const std::string out = testing::TempDir() + "/hook_env";
  ASSERT_TRUE(RunHook("echo \"$TUPA_WORKER_ID $TUPA_REASON\" > " + out,
                      {{"TUPA_WORKER_ID", "w-3"}, {"TUPA_REASON", "IDLE"}})
                  .ok());
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "w-3 IDLE");
}

TEST(RunHook, RetriesThenReportsTheFailureWithOutput) {
  const std::string count = testing::TempDir() + "/hook_count";
  std::remove(count.c_str());
  HookOptions options;
  options.attempts = 3;
  options.backoff = absl::Milliseconds(10);
  absl::Status s =
      RunHook("echo x >> " + count + "; echo boom; exit 4", {}, options);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exited with 4"), std::string::npos) << s;
  EXPECT_NE(s.message().find("boom"), std::string::npos) << s;
  std::ifstream in(count);
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  EXPECT_EQ(lines, 3);
}

TEST(RunHook, SucceedsOnALaterAttempt) {
  const std::string flag = testing::TempDir() + "/hook_flag";
  std::remove(flag.c_str());
  HookOptions options;
  options.backoff = absl::Milliseconds(10);
  EXPECT_TRUE(RunHook("test -e " + flag + " || { touch " + flag + "; exit 1; }",
                      {}, options)
                  .ok());
}

TEST(RunHook, TimesOut) {
  HookOptions options;
  options.attempts = 1;
  options.timeout = absl::Milliseconds(200);
  absl::Status s = RunHook("sleep 30", {}, options);
  EXPECT_NE(s.message().find("timed out"), std::string::npos) << s;
}

}  // namespace
}  // namespace tupa

#include "scheduler/service/log_store.h"

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace tupa::scheduler {
namespace {

class LogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/log_store_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(root_);
  }
  std::string ReadAll(const LogStore& logs) {
    return logs.Read(7, 1, 0, 0, 1 << 20);
  }
  std::string root_;
};

TEST_F(LogStoreTest, ChunksWithoutOffsetAreAppended) {
  LogStore logs(root_);
  ASSERT_TRUE(logs.Append(7, 1, 0, "a\n").ok());
  ASSERT_TRUE(logs.Append(7, 1, 0, "a\n").ok());
  EXPECT_EQ(ReadAll(logs), "a\na\n");
}

TEST_F(LogStoreTest, ResentChunksAreKeptOnce) {
  LogStore logs(root_);
  ASSERT_TRUE(logs.Append(7, 1, 0, "tick 1\n", 0).ok());
  ASSERT_TRUE(logs.Append(7, 1, 0, "tick 2\n", 7).ok());
  // A new stream resends the tail: all of it already stored.
  ASSERT_TRUE(logs.Append(7, 1, 0, "tick 1\ntick 2\n", 0).ok());
  EXPECT_EQ(ReadAll(logs), "tick 1\ntick 2\n");
  // A tail that overlaps and goes further: only the new bytes are added.
  ASSERT_TRUE(logs.Append(7, 1, 0, "tick 2\nended\n", 7).ok());
  EXPECT_EQ(ReadAll(logs), "tick 1\ntick 2\nended\n");
  // Bytes lost in between (past the end): what arrived is kept at its own
  // offset, after a hole, so that the chunks after it, and their resends,
  // still line up (appended early, every later resend would duplicate).
  ASSERT_TRUE(logs.Append(7, 1, 0, "late\n", 100).ok());
  ASSERT_TRUE(logs.Append(7, 1, 0, "later\n", 105).ok());
  ASSERT_TRUE(logs.Append(7, 1, 0, "late\nlater\n", 100).ok());
  const std::string stored = ReadAll(logs);
  ASSERT_EQ(stored.size(), 111u);
  EXPECT_EQ(stored.substr(0, 20), "tick 1\ntick 2\nended\n");
  EXPECT_EQ(stored.substr(20, 80), std::string(80, '\0'));
  EXPECT_EQ(stored.substr(100), "late\nlater\n");
  EXPECT_EQ(logs.Ranks(7, 1), std::vector<int32_t>{0});
}

}  // namespace
}  // namespace tupa::scheduler

#include "common/checkpoint_fence.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tupa {
namespace {

namespace fs = std::filesystem;

std::string TempDir() {
  const std::string dir =
      fs::temp_directory_path() /
      absl::StrCat(
          "fence_test_", ::getpid(), "_",
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dir);
  return dir;
}

TEST(CheckpointFenceTest, RaisingCreatesTheDirectoryAndOnlyGoesUp) {
  const std::string dir = TempDir();
  EXPECT_EQ(ReadCheckpointFence(dir), 0);
  ASSERT_TRUE(RaiseCheckpointFence(dir, 2).ok());
  EXPECT_EQ(ReadCheckpointFence(dir), 2);
  ASSERT_TRUE(RaiseCheckpointFence(dir, 2).ok());  // the same attempt again
  ASSERT_TRUE(RaiseCheckpointFence(dir, 5).ok());
  EXPECT_EQ(ReadCheckpointFence(dir), 5);
}

TEST(CheckpointFenceTest, AnOlderAttemptCannotLowerTheFence) {
  const std::string dir = TempDir();
  ASSERT_TRUE(RaiseCheckpointFence(dir, 3).ok());
  const absl::Status s = RaiseCheckpointFence(dir, 2);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("attempt 2 is stale: attempt 3"),
            std::string::npos)
      << s;
  EXPECT_EQ(ReadCheckpointFence(dir), 3);
}

TEST(CheckpointFenceTest, PublishRunsOnlyForTheFencedAttemptOrNewer) {
  const std::string dir = TempDir();
  ASSERT_TRUE(RaiseCheckpointFence(dir, 2).ok());
  int ran = 0;
  auto publish = [&] {
    ++ran;
    return absl::OkStatus();
  };
  EXPECT_TRUE(PublishFenced(dir, 2, publish).ok());
  EXPECT_TRUE(PublishFenced(dir, 3, publish).ok());
  EXPECT_EQ(ran, 2);
  const absl::Status stale = PublishFenced(dir, 1, publish);
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  EXPECT_EQ(ran, 2);  // not run
}

TEST(CheckpointFenceTest, AttemptZeroIsUnfenced) {
  const std::string dir = TempDir();
  ASSERT_TRUE(RaiseCheckpointFence(dir, 0).ok());
  EXPECT_FALSE(fs::exists(dir));  // a run by hand changes nothing
  ASSERT_TRUE(RaiseCheckpointFence(dir, 4).ok());
  int ran = 0;
  EXPECT_TRUE(PublishFenced(dir, 0, [&] {
                ++ran;
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(ran, 1);
}

TEST(CheckpointFenceTest, AGarbledFenceReadsAsNone) {
  const std::string dir = TempDir();
  fs::create_directories(dir);
  {
    std::FILE* f = std::fopen((fs::path(dir) / "FENCE").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a number\n", f);
    std::fclose(f);
  }
  EXPECT_EQ(ReadCheckpointFence(dir), 0);
  EXPECT_TRUE(RaiseCheckpointFence(dir, 1).ok());
  EXPECT_EQ(ReadCheckpointFence(dir), 1);
}

}  // namespace
}  // namespace tupa

#include "worker/agent/checkpoint_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tupa::worker {
namespace {

namespace fs = std::filesystem;

std::string FreshRoot() {
  const fs::path root =
      fs::path(testing::TempDir()) /
      (std::string("ckpt_") +
       testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(root);
  return root.string();
}

void Touch(const fs::path& file) { std::ofstream(file) << "x"; }

TEST(ClaimCheckpointDir, TheSameJobKeepsItsCheckpointsAcrossAttempts) {
  const std::string root = FreshRoot();
  auto dir = ClaimCheckpointDir(root, 7, 1000);
  ASSERT_TRUE(dir.ok()) << dir.status();
  Touch(fs::path(*dir) / "ckpt-000000000010.bin");
  auto again = ClaimCheckpointDir(root, 7, 1000);  // the next attempt
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *dir);
  EXPECT_TRUE(fs::exists(fs::path(*dir) / "ckpt-000000000010.bin"));
}

TEST(ClaimCheckpointDir, AnotherJobWithTheSameIdStartsCleanAndLosesNothing) {
  // The database was reset: job 7 is a new job submitted later.
  const std::string root = FreshRoot();
  auto old_dir = ClaimCheckpointDir(root, 7, 1000);
  ASSERT_TRUE(old_dir.ok());
  Touch(fs::path(*old_dir) / "ckpt-000000000010.bin");
  auto dir = ClaimCheckpointDir(root, 7, 2000);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, *old_dir);
  EXPECT_FALSE(fs::exists(fs::path(*dir) / "ckpt-000000000010.bin"));
  EXPECT_TRUE(fs::exists(fs::path(root) / "job-7.stale-7@1000" /
                         "ckpt-000000000010.bin"));
}

TEST(ClaimCheckpointDir, ADirectoryWithoutAnOwnerIsAdopted) {
  // Written by a worker from before owners were recorded: its job resumes.
  const std::string root = FreshRoot();
  fs::create_directories(fs::path(root) / "job-3");
  Touch(fs::path(root) / "job-3" / "ckpt-000000000004.bin");
  auto dir = ClaimCheckpointDir(root, 3, 5000);
  ASSERT_TRUE(dir.ok());
  EXPECT_TRUE(fs::exists(fs::path(*dir) / "ckpt-000000000004.bin"));
  // ... and from now on it is that job's.
  auto other = ClaimCheckpointDir(root, 3, 6000);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(fs::exists(fs::path(*other) / "ckpt-000000000004.bin"));
}

TEST(ClaimCheckpointDir, NoSubmitTimeClaimsNothing) {
  const std::string root = FreshRoot();
  auto dir = ClaimCheckpointDir(root, 9, 0);
  ASSERT_TRUE(dir.ok());
  EXPECT_TRUE(fs::is_directory(*dir));
  EXPECT_FALSE(fs::exists(fs::path(*dir) / "OWNER"));
}

}  // namespace
}  // namespace tupa::worker

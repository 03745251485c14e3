#include "worker/trainer/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/checkpoint_fence.h"
#include "gtest/gtest.h"

namespace tupa::trainer {
namespace {

namespace fs = std::filesystem;

std::string TempDir() {
  std::string t =
      fs::temp_directory_path() /
      absl::StrCat(
          "ckpt_test_", ::getpid(), "_",
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(t);
  return t;
}

CheckpointState Sample(int64_t step) {
  CheckpointState s;
  s.step = step;
  s.optimizer_steps = step - 1;
  s.seed = 99;
  s.world_size = 4;
  s.widths = {3, 2};
  s.optimizer = "adamw";
  s.loss_scale = 512.0f;
  s.good_steps = 17;
  s.last_loss = 0.123456789012345;
  s.params = {1.0f, -2.5f, 3.25f, 0.0f, 1e-30f, 7.0f, 8.0f, 9.0f};
  s.state0 = {0.5f};
  s.state1 = {};
  return s;
}

TEST(CheckpointTest, RoundTripsEveryField) {
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteCheckpoint(dir, Sample(40)).ok());
  auto path = FindLatestCheckpoint(dir);
  ASSERT_TRUE(path.has_value());
  auto s = ReadCheckpoint(*path);
  ASSERT_TRUE(s.ok()) << s.status();
  const CheckpointState want = Sample(40);
  EXPECT_EQ(s->step, 40);
  EXPECT_EQ(s->optimizer_steps, 39);
  EXPECT_EQ(s->seed, 99u);
  EXPECT_EQ(s->world_size, 4);
  EXPECT_EQ(s->widths, want.widths);
  EXPECT_EQ(s->optimizer, "adamw");
  EXPECT_EQ(s->loss_scale, 512.0f);
  EXPECT_EQ(s->good_steps, 17);
  EXPECT_EQ(s->last_loss, want.last_loss);
  EXPECT_EQ(s->params, want.params);
  EXPECT_EQ(s->state0, want.state0);
  EXPECT_TRUE(s->state1.empty());
  fs::remove_all(dir);
}

TEST(CheckpointTest, LatestIsTheHighestStepAndOldOnesArePruned) {
  const std::string dir = TempDir();
  for (int64_t step : {10, 20, 30}) {
    ASSERT_TRUE(WriteCheckpoint(dir, Sample(step), /*keep=*/2).ok());
  }
  EXPECT_EQ(*FindLatestCheckpoint(dir), dir + "/ckpt-000000000030.bin");
  EXPECT_FALSE(fs::exists(dir + "/ckpt-000000000010.bin"));
  EXPECT_TRUE(fs::exists(dir + "/ckpt-000000000020.bin"));
  // Leftover temporaries from a crash are ignored.
  std::ofstream(dir + "/ckpt-000000000040.bin.tmp") << "partial";
  EXPECT_EQ(*FindLatestCheckpoint(dir), dir + "/ckpt-000000000030.bin");
  fs::remove_all(dir);
}

TEST(CheckpointTest, MissingDirectoryHasNoCheckpoint) {
  EXPECT_FALSE(FindLatestCheckpoint("/nonexistent/tupa/ckpt").has_value());
}

TEST(CheckpointTest, CorruptionIsDataLoss) {
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteCheckpoint(dir, Sample(5)).ok());
  const std::string path = *FindLatestCheckpoint(dir);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(60);
    f.put('\x7f');
  }
  EXPECT_EQ(ReadCheckpoint(path).status().code(), absl::StatusCode::kDataLoss);
  fs::resize_file(path, 20);
  EXPECT_EQ(ReadCheckpoint(path).status().code(), absl::StatusCode::kDataLoss);
  fs::remove_all(dir);
}

TEST(CheckpointTest, ACorruptNewestFallsBackToTheOneBefore) {
  const std::string dir = TempDir();
  EXPECT_FALSE(ReadNewestGoodCheckpoint(dir)->has_value());
  ASSERT_TRUE(WriteCheckpoint(dir, Sample(10)).ok());
  ASSERT_TRUE(WriteCheckpoint(dir, Sample(20)).ok());
  const std::string newest = *FindLatestCheckpoint(dir);
  fs::resize_file(newest, 20);
  auto good = ReadNewestGoodCheckpoint(dir);
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_TRUE(good->has_value());
  EXPECT_EQ((*good)->second.step, 10);
  // Every one corrupt: the newest's error.
  fs::resize_file((*good)->first, 20);
  EXPECT_EQ(ReadNewestGoodCheckpoint(dir).status().code(),
            absl::StatusCode::kDataLoss);
  fs::remove_all(dir);
}

TEST(CheckpointTest, AStaleAttemptsWriteAfterTheNewAttemptStartedIsRefused) {
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteCheckpoint(dir, Sample(10), 2, /*attempt=*/1).ok());
  ASSERT_TRUE(WriteCheckpoint(dir, Sample(20), 2, /*attempt=*/1).ok());
  // Attempt 2 starts: it fences the directory, then resumes from step 20.
  ASSERT_TRUE(RaiseCheckpointFence(dir, 2).ok());
  // Attempt 1 (partitioned, still running) writes a later step: refused,
  // and it neither replaced nor pruned what attempt 2 resumes from.
  const absl::Status stale = WriteCheckpoint(dir, Sample(30), 1, 1);
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  EXPECT_EQ(*FindLatestCheckpoint(dir),
            absl::StrCat(dir, "/ckpt-000000000020.bin"));
  EXPECT_TRUE(fs::exists(absl::StrCat(dir, "/ckpt-000000000010.bin")));
  // Nor did it leave its temporary file behind.
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  // The same step written again by the stale attempt is refused too (it
  // would replace the file attempt 2 read).
  EXPECT_FALSE(WriteCheckpoint(dir, Sample(20), 2, 1).ok());
  // The current attempt writes and prunes as before.
  ASSERT_TRUE(WriteCheckpoint(dir, Sample(40), 2, 2).ok());
  EXPECT_EQ(*FindLatestCheckpoint(dir),
            absl::StrCat(dir, "/ckpt-000000000040.bin"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tupa::trainer

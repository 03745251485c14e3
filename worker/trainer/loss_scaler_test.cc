#include "worker/trainer/loss_scaler.h"

#include "gtest/gtest.h"

namespace tupa::trainer {
namespace {

LossScaler Fp16() {
  LossScalerOptions o;
  o.enabled = true;
  return LossScaler(o);
}

TEST(LossScalerTest, StartsAt2To16) { EXPECT_EQ(Fp16().scale(), 65536.0f); }

TEST(LossScalerTest, OverflowSkipsTheStepAndHalvesTheScale) {
  LossScaler s = Fp16();
  EXPECT_FALSE(s.Update(/*overflow=*/true));
  EXPECT_EQ(s.scale(), 32768.0f);
  EXPECT_EQ(s.good_steps(), 0);
}

TEST(LossScalerTest, GrowsAfter2000GoodSteps) {
  LossScaler s = Fp16();
  for (int i = 0; i < 1999; ++i) ASSERT_TRUE(s.Update(false));
  EXPECT_EQ(s.scale(), 65536.0f);
  EXPECT_TRUE(s.Update(false));
  EXPECT_EQ(s.scale(), 131072.0f);
  EXPECT_EQ(s.good_steps(), 0);
}

TEST(LossScalerTest, OverflowResetsTheGoodStepCount) {
  LossScaler s = Fp16();
  for (int i = 0; i < 1500; ++i) s.Update(false);
  s.Update(true);
  for (int i = 0; i < 1999; ++i) s.Update(false);
  EXPECT_EQ(s.scale(), 32768.0f);
  s.Update(false);
  EXPECT_EQ(s.scale(), 65536.0f);
}

TEST(LossScalerTest, DisabledScalerIsOneAndAppliesFiniteSteps) {
  LossScaler s;
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_TRUE(s.Update(false));
  EXPECT_FALSE(s.Update(true));
  EXPECT_EQ(s.scale(), 1.0f);
}

TEST(LossScalerTest, RestoreResumesState) {
  LossScaler s = Fp16();
  s.Restore(1024.0f, 1999);
  s.Update(false);
  EXPECT_EQ(s.scale(), 2048.0f);
}

}  // namespace
}  // namespace tupa::trainer

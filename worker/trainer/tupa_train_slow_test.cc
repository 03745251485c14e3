// Fashion-MNIST accuracy of tupa-train (BENCHMARKS.md): MLP 784-256-128-10,
// batch 128 (global), AdamW lr 1e-3, 10 epochs, test accuracy >= 0.885 on 1
// rank and on 4 data-parallel ranks. Skips when Debian's
// dataset-fashion-mnist is not installed.
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "worker/trainer/train_process_util.h"

namespace tupa::trainer {
namespace {

constexpr char kFashion[] = "/usr/share/datasets/fashion-mnist";

std::string FashionSpec(const std::string& dir, int per_rank_batch) {
  const std::string path =
      dir + "/fashion" + std::to_string(per_rank_batch) + ".yaml";
  std::ofstream(path) << "name: fashion\ntrain:\n"
                      << "  model: {type: mlp, layers: [784, 256, 128, 10]}\n"
                      << "  data: {format: idx, path: " << kFashion << "}\n"
                      << "  batch_size: " << per_rank_batch << "\n"
                      << "  epochs: 10\n"
                      << "  optimizer: {name: adamw, lr: 0.001}\n"
                      << "  log_every: 1000\n";
  return path;
}

double Accuracy(const std::string& out) {
  double acc = 0;
  testing::JsonLine s = testing::SummaryLine(out);
  if (s.count("test_accuracy"))
    (void)absl::SimpleAtod(s["test_accuracy"], &acc);
  return acc;
}

class FashionMnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(kFashion) +
                                 "/train-images-idx3-ubyte.gz")) {
      GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    }
  }
};

TEST_F(FashionMnistTest, OneRankReachesTestAccuracy0885) {
  const std::string dir = testing::MakeTempDir("fashion1");
  testing::TrainProcess p = testing::StartTrain(
      TUPA_TRAIN_BINARY, {"-f", FashionSpec(dir, 128), "--json"}, {},
      dir + "/run");
  ASSERT_EQ(testing::WaitTrain(p, absl::Seconds(500)), 0) << p.err();
  const std::string out = p.out();
  std::cout << out;
  EXPECT_GE(Accuracy(out), 0.885) << out;
}

TEST_F(FashionMnistTest, FourRanksReachTestAccuracy0885) {
  const std::string dir = testing::MakeTempDir("fashion4");
  auto ranks =
      testing::StartRanks(TUPA_TRAIN_BINARY, 4,
                          {"-f", FashionSpec(dir, 32), "--json"}, dir + "/run");
  for (auto& p : ranks) {
    ASSERT_EQ(testing::WaitTrain(p, absl::Seconds(500)), 0) << p.err();
  }
  const std::string out = ranks[0].out();
  std::cout << out;
  EXPECT_EQ(testing::SummaryLine(out)["world_size"], "4");
  EXPECT_GE(Accuracy(out), 0.885) << out;
}

}  // namespace
}  // namespace tupa::trainer

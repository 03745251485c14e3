// End-to-end tests of tensor parallelism in the tupa-train binary (issue
// 18, DESIGN §7): T=2 x D=2 and T=4 x D=1 on 4 loopback CPU ranks against
// the 1-rank run with the same global batch (per-step losses over 200
// steps, gathered parameters at the end), the collective counts of the
// summary, and a killed rank resuming bit-identically under T=2 x D=2.
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "worker/trainer/tensor_split.h"
#include "worker/trainer/train_process_util.h"

namespace tupa::trainer {
namespace {

using testing::JsonLine;
using testing::StartRanks;
using testing::StartTrain;
using testing::StepLines;
using testing::SummaryLine;
using testing::TrainProcess;
using testing::WaitTrain;

const std::string kBinary = TUPA_TRAIN_BINARY;

std::string WriteSpec(const std::string& dir, const std::string& name,
                      const std::string& train_body) {
  const std::string path = absl::StrCat(dir, "/", name, ".yaml");
  std::ofstream(path) << "name: " << name << "\ntrain:\n" << train_body;
  return path;
}

double Num(const JsonLine& j, const std::string& key) {
  double v = NAN;
  auto it = j.find(key);
  if (it != j.end()) (void)absl::SimpleAtod(it->second, &v);
  return v;
}

int64_t Int(const JsonLine& j, const std::string& key) {
  int64_t v = -1;
  auto it = j.find(key);
  if (it != j.end()) (void)absl::SimpleAtoi(it->second, &v);
  return v;
}

std::vector<float> ReadFloats(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<float> out;
  float v;
  while (f.read(reinterpret_cast<char*>(&v), sizeof(v))) out.push_back(v);
  return out;
}

// The full parameter block from the shards of tensor-parallel ranks
// 0..T-1 (the first data-parallel group), independently of the trainer's
// own code: W [out, in] then b [out] per layer, shard layout of
// tensor_split.h.
std::vector<float> GatherShards(const std::vector<int>& widths, int tensor,
                                const std::string& prefix) {
  const int layers = static_cast<int>(widths.size()) - 1;
  const std::vector<LayerSplit> splits = SplitLayers(layers, tensor);
  size_t total = 0;
  std::vector<size_t> full_offset;
  for (int i = 0; i < layers; ++i) {
    full_offset.push_back(total);
    total += static_cast<size_t>(widths[i] + 1) * widths[i + 1];
  }
  std::vector<float> full(total, NAN);
  for (int t = 0; t < tensor; ++t) {
    const std::vector<float> shard =
        ReadFloats(absl::StrCat(prefix, ".rank", t));
    size_t at = 0;
    for (int i = 0; i < layers; ++i) {
      const int in = widths[i];
      const LayerShard s = ShardOf(splits[i], in, widths[i + 1], tensor, t);
      if (shard.size() < at + s.param_count()) return {};
      for (int o = 0; o < s.out; ++o) {
        for (int j = 0; j < s.in; ++j) {
          full[full_offset[i] + static_cast<size_t>(o + s.out_begin) * in + j +
               s.in_begin] = shard[at + static_cast<size_t>(o) * s.in + j];
        }
      }
      at += static_cast<size_t>(s.out) * s.in;
      for (int o = 0; o < s.out; ++o) {
        full[full_offset[i] + static_cast<size_t>(widths[i + 1]) * in + o +
             s.out_begin] = shard[at + o];
      }
      at += s.out;
    }
    if (at != shard.size()) return {};
  }
  return full;
}

constexpr int kSteps = 200;
const std::vector<int> kWidths = {32, 64, 48, 24, 8};  // 2 column/row pairs

std::string EquivalenceBody() {
  return R"(
  model: {type: mlp, layers: [32, 64, 48, 24, 8]}
  data: {format: synthetic, samples: 4096, test_samples: 256}
  steps: 200
  seed: 13
  optimizer: {name: adamw, lr: 0.003, grad_clip: 1.0}
)";
}

// Runs the 4-rank layout and compares it with the 1-rank reference.
void ExpectMatchesOneRank(int tensor) {
  const int data = 4 / tensor;
  const std::string dir = testing::MakeTempDir(absl::StrCat("tp", tensor));
  const std::string one =
      WriteSpec(dir, "one", EquivalenceBody() + "  batch_size: 32\n");
  const std::string split =
      WriteSpec(dir, "split",
                absl::StrCat(EquivalenceBody(), "  batch_size: ", 32 / data,
                             "\n  parallel: {tensor: ", tensor, "}\n"));
  const std::vector<std::string> flags = {
      "--json", "--log-every", "1", "--param-checksum", "--log-all-ranks"};
  std::vector<std::string> args1 = {"-f", one, "--dump-params", dir + "/ref"};
  args1.insert(args1.end(), flags.begin(), flags.end());
  std::vector<std::string> args4 = {"-f", split, "--dump-params", dir + "/tp"};
  args4.insert(args4.end(), flags.begin(), flags.end());

  TrainProcess single =
      StartTrain(kBinary, args1, {{"OPENBLAS_NUM_THREADS", "1"}}, dir + "/one");
  ASSERT_EQ(WaitTrain(single, absl::Seconds(120)), 0) << single.err();
  auto ref = StepLines(single.out());
  ASSERT_EQ(ref.size(), static_cast<size_t>(kSteps));

  std::vector<TrainProcess> ranks = StartRanks(kBinary, 4, args4, dir + "/tp");
  std::vector<std::map<int64_t, JsonLine>> outs;
  std::vector<JsonLine> summaries;
  for (TrainProcess& p : ranks) {
    ASSERT_EQ(WaitTrain(p, absl::Seconds(240)), 0) << p.err();
    outs.push_back(StepLines(p.out()));
    summaries.push_back(SummaryLine(p.out()));
    ASSERT_EQ(outs.back().size(), static_cast<size_t>(kSteps));
  }
  double worst = 0;
  for (int64_t step = 1; step <= kSteps; ++step) {
    const double want = Num(ref[step], "loss");
    const double got = Num(outs[0][step], "loss");
    worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
    // Same samples, same global batch: only fp32 summation order differs.
    EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << "step " << step;
    for (int r = 1; r < 4; ++r) {
      EXPECT_EQ(outs[r][step]["loss"], outs[0][step]["loss"]);
      EXPECT_EQ(outs[r][step]["layout"], absl::StrCat(tensor, "x", data));
      // Ranks holding the same shard (same tensor rank) stay identical.
      if (r >= tensor) {
        EXPECT_EQ(outs[r][step]["param_checksum"],
                  outs[r - tensor][step]["param_checksum"])
            << "rank " << r << " step " << step;
      }
    }
  }
  std::cerr << "T=" << tensor << " x D=" << data
            << ": worst per-step loss difference " << worst << " (relative)\n";
  const std::vector<float> want = ReadFloats(dir + "/ref.rank0");
  const std::vector<float> got = GatherShards(kWidths, tensor, dir + "/tp");
  ASSERT_EQ(got.size(), want.size());
  double worst_param = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double diff = std::fabs(got[i] - want[i]);
    worst_param = std::max(worst_param, diff);
    ASSERT_LE(diff, 1e-4 * std::fabs(want[i]) + 1e-5) << "parameter " << i;
  }
  std::cerr << "worst gathered-parameter difference " << worst_param << "\n";

  // The collective counter: per step one forward all-reduce per pair, one
  // backward per pair whose input needs a gradient (not the pair at layer
  // 0), one for the gradient norm (grad_clip), and the data-parallel
  // gradient buckets.
  const int pairs = 2;
  for (const JsonLine& s : summaries) {
    EXPECT_EQ(s.at("layout"), absl::StrCat(tensor, "x", data));
    EXPECT_EQ(Int(s, "steps_run"), kSteps);
    EXPECT_EQ(Int(s, "tp_allreduces_forward"), pairs * kSteps);
    EXPECT_EQ(Int(s, "tp_allreduces_backward"), (pairs - 1) * kSteps);
    EXPECT_EQ(Int(s, "tp_allreduces"), (2 * pairs - 1 + 1) * kSteps);
    EXPECT_GE(Int(s, "dp_buckets"), 1);
    EXPECT_EQ(Int(s, "dp_allreduces"),
              data > 1 ? Int(s, "dp_buckets") * kSteps : 0);
  }
  // Parameters + gradients + AdamW state per rank shrink with T.
  const JsonLine ref_summary = SummaryLine(single.out());
  EXPECT_LT(Int(summaries[0], "param_bytes"),
            Int(ref_summary, "param_bytes") / tensor + 4096);
}

TEST(TupaTrainTensorParallelTest, TwoByTwoMatchesOneRankOver200Steps) {
  ExpectMatchesOneRank(2);
}

TEST(TupaTrainTensorParallelTest, FourByOneMatchesOneRankOver200Steps) {
  ExpectMatchesOneRank(4);
}

TEST(TupaTrainTensorParallelTest, BadTensorParallelIsAUsageErrorNamingIt) {
  const std::string dir = testing::MakeTempDir("tp_bad");
  const std::string spec = WriteSpec(dir, "bad", R"(
  model: {type: mlp, layers: [16, 6, 4]}
  data: {format: synthetic, samples: 64, test_samples: 32}
  batch_size: 16
  steps: 2
)");
  // One rank here: a group of 2 cannot fit.
  TrainProcess alone = StartTrain(
      kBinary, {"-f", spec, "--tensor-parallel", "2"}, {}, dir + "/alone");
  EXPECT_EQ(WaitTrain(alone, absl::Seconds(30)), 2);
  EXPECT_NE(alone.err().find("--tensor-parallel (train.parallel.tensor: 2 "
                             "does not divide the 1 rank(s) per node"),
            std::string::npos)
      << alone.err();
  // 4 ranks on this machine, but 4 does not divide the split width 6.
  TrainProcess width =
      StartTrain(kBinary, {"-f", spec, "--tensor-parallel", "4"},
                 {{"LOCAL_WORLD_SIZE", "4"}}, dir + "/width");
  EXPECT_EQ(WaitTrain(width, absl::Seconds(30)), 2);
  EXPECT_NE(width.err().find("train.model.layers[1] = 6"), std::string::npos)
      << width.err();
}

// As TupaTrainTest.KilledRankResumesBitIdentically, under T=2 x D=2: each
// rank of the first data-parallel group writes its shard; after SIGKILL of
// rank 3 the restarted run continues bit for bit (losses as printed and
// every rank's shard hash), and a restart under another T is refused.
TEST(TupaTrainTensorParallelTest, KilledRankResumesBitIdenticallyTwoByTwo) {
  const std::string dir = testing::MakeTempDir("tp_resume");
  const std::string spec = WriteSpec(dir, "resume", R"(
  model: {type: mlp, layers: [64, 128, 96, 64, 10]}
  data: {format: synthetic, samples: 4096, test_samples: 256}
  batch_size: 16
  steps: 300
  checkpoint_every: 50
  seed: 3
  parallel: {tensor: 2}
  optimizer: {name: adamw, lr: 0.002, warmup_steps: 20, schedule: cosine, grad_clip: 2.0}
)");
  const std::vector<std::string> args = {"-f",
                                         spec,
                                         "--json",
                                         "--log-every",
                                         "1",
                                         "--param-checksum",
                                         "--log-all-ranks"};
  std::vector<TrainProcess> ref_ranks =
      StartRanks(kBinary, 4, args, dir + "/ref");
  std::vector<std::map<int64_t, JsonLine>> ref;
  for (TrainProcess& p : ref_ranks) {
    ASSERT_EQ(WaitTrain(p, absl::Seconds(180)), 0) << p.err();
    ref.push_back(StepLines(p.out()));
    ASSERT_EQ(ref.back().size(), 300u);
  }

  const std::string ckpt = dir + "/ckpt";
  std::map<std::string, std::string> env = {{"TUPA_CHECKPOINT_DIR", ckpt}};
  std::vector<TrainProcess> first =
      StartRanks(kBinary, 4, args, dir + "/first", env);
  const absl::Time deadline = absl::Now() + absl::Seconds(180);
  while (StepLines(first[3].out()).count(120) == 0) {
    ASSERT_LT(absl::Now(), deadline) << first[3].err();
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_EQ(::kill(first[3].pid, SIGKILL), 0);
  EXPECT_EQ(WaitTrain(first[3], absl::Seconds(10)), -SIGKILL);
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(WaitTrain(first[r], absl::Seconds(60)), 0)
        << "rank " << r << " finished without its peer";
  }
  for (int t = 0; t < 2; ++t) {
    EXPECT_TRUE(std::filesystem::is_directory(
        absl::StrCat(ckpt, "/tensor-", t, "-of-2")));
  }

  // Another tensor-parallel degree cannot continue these shards.
  std::vector<std::string> other = args;
  other.insert(other.end(), {"--tensor-parallel", "4"});
  std::vector<TrainProcess> refused =
      StartRanks(kBinary, 4, other, dir + "/refused", env);
  EXPECT_NE(WaitTrain(refused[0], absl::Seconds(60)), 0);
  EXPECT_NE(refused[0].err().find("train.parallel.tensor 2"), std::string::npos)
      << refused[0].err();
  for (int r = 1; r < 4; ++r) WaitTrain(refused[r], absl::Seconds(60));

  std::vector<TrainProcess> second =
      StartRanks(kBinary, 4, args, dir + "/second", env);
  for (TrainProcess& p : second) {
    ASSERT_EQ(WaitTrain(p, absl::Seconds(180)), 0) << p.err();
  }
  const JsonLine summary = SummaryLine(second[0].out());
  int64_t resumed = Int(summary, "resumed_from_step");
  EXPECT_GE(resumed, 100);
  EXPECT_EQ(resumed % 50, 0);
  for (int r = 0; r < 4; ++r) {
    auto after = StepLines(second[r].out());
    ASSERT_EQ(static_cast<int64_t>(after.size()), 300 - resumed);
    for (const auto& [step, j] : after) {
      EXPECT_EQ(j.at("loss"), ref[r][step].at("loss")) << "step " << step;
      EXPECT_EQ(j.at("param_checksum"), ref[r][step].at("param_checksum"))
          << "rank " << r << " step " << step;
    }
  }
  EXPECT_EQ(summary.at("final_loss"),
            SummaryLine(ref_ranks[0].out()).at("final_loss"));
}

}  // namespace
}  // namespace tupa::trainer

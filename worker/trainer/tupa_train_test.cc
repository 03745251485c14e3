// End-to-end tests of the tupa-train binary: JSON output, data-parallel
// equivalence on 4 loopback ranks, and kill/resume bit-identity.
#include <signal.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
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

TEST(TupaTrainTest, SingleRankPrintsJsonStepsAndSummary) {
  const std::string dir = testing::MakeTempDir("json");
  const std::string spec = WriteSpec(dir, "json", R"(
  model: {type: mlp, layers: [16, 32, 4]}
  data: {format: synthetic, samples: 512, test_samples: 256}
  batch_size: 32
  epochs: 2
  seed: 5
)");
  TrainProcess p = StartTrain(
      kBinary, {"-f", spec, "--json", "--log-every", "4"}, {}, dir + "/run");
  ASSERT_EQ(WaitTrain(p, absl::Seconds(60)), 0) << p.err();
  const std::string out = p.out();
  auto steps = StepLines(out);
  ASSERT_EQ(steps.size(), 8u) << out;  // 2 epochs x 16 steps, every 4th
  for (const auto& [step, j] : steps) {
    EXPECT_EQ(step % 4, 0);
    for (const char* key : {"epoch", "loss", "samples_per_s"}) {
      EXPECT_TRUE(std::isfinite(Num(j, key))) << key << " in step " << step;
    }
  }
  EXPECT_EQ(steps.rbegin()->second.at("epoch"), "1");
  JsonLine s = SummaryLine(out);
  EXPECT_EQ(s["summary"], "true");
  EXPECT_EQ(s["world_size"], "1");
  EXPECT_EQ(s["steps"], "32");
  EXPECT_EQ(s["resumed_from_step"], "0");
  EXPECT_GT(Num(s, "step_ms_median"), 0);
  EXPECT_GT(Num(s, "samples_per_s"), 0);
  EXPECT_LT(Num(s, "final_loss"), Num(steps.begin()->second, "loss"));
  EXPECT_GT(Num(s, "test_accuracy"), 0.3);  // 4 classes: chance is 0.25
}

TEST(TupaTrainTest, RefusesASpecTheSchedulerWouldRefuseNamingTheField) {
  const std::string dir = testing::MakeTempDir("invalid");
  struct Case {
    std::string body, field;
  };
  for (const Case& c : std::vector<Case>{
           // A path without a format used to train on synthetic data.
           {"  model: {type: mlp, layers: [16, 4]}\n"
            "  data: {path: /usr/share/datasets/fashion-mnist}\n",
            "train.data.format"},
           // A negative lr used to be replaced by the default.
           {"  model: {type: mlp, layers: [16, 4]}\n"
            "  data: {format: synthetic}\n"
            "  optimizer: {name: adamw, lr: -1}\n",
            "train.optimizer.lr"},
       }) {
    const std::string spec = WriteSpec(dir, "invalid", c.body);
    TrainProcess p = StartTrain(kBinary, {"-f", spec}, {}, dir + "/run");
    EXPECT_EQ(WaitTrain(p, absl::Seconds(30)), 2) << c.body;
    EXPECT_NE(p.err().find(c.field), std::string::npos) << p.err();
    EXPECT_EQ(p.out(), "") << c.body;
  }
}

TEST(TupaTrainTest, FourRanksMatchOneRankAndKeepParametersIdentical) {
  const std::string dir = testing::MakeTempDir("dp");
  const std::string body = R"(
  model: {type: mlp, layers: [32, 64, 48, 8]}
  data: {format: synthetic, samples: 2048, test_samples: 256}
  epochs: 1
  steps: 40
  seed: 11
  optimizer: {name: adamw, lr: 0.003, grad_clip: 1.0}
)";
  const std::string one = WriteSpec(dir, "one", body + "  batch_size: 32\n");
  const std::string four = WriteSpec(dir, "four", body + "  batch_size: 8\n");
  const std::vector<std::string> flags = {
      "--json", "--log-every", "1", "--param-checksum", "--log-all-ranks"};
  std::vector<std::string> args1 = {"-f", one};
  args1.insert(args1.end(), flags.begin(), flags.end());
  std::vector<std::string> args4 = {"-f", four};
  args4.insert(args4.end(), flags.begin(), flags.end());

  TrainProcess single =
      StartTrain(kBinary, args1, {{"OPENBLAS_NUM_THREADS", "1"}}, dir + "/one");
  ASSERT_EQ(WaitTrain(single, absl::Seconds(60)), 0) << single.err();
  auto ref = StepLines(single.out());
  ASSERT_EQ(ref.size(), 40u);

  std::vector<TrainProcess> ranks = StartRanks(kBinary, 4, args4, dir + "/dp");
  std::vector<std::map<int64_t, JsonLine>> outs;
  for (TrainProcess& p : ranks) {
    ASSERT_EQ(WaitTrain(p, absl::Seconds(120)), 0) << p.err();
    outs.push_back(StepLines(p.out()));
    ASSERT_EQ(outs.back().size(), 40u);
  }
  for (int64_t step = 1; step <= 40; ++step) {
    const double want = Num(ref[step], "loss");
    const double got = Num(outs[0][step], "loss");
    // Same samples, same global batch: only fp32 summation order differs.
    EXPECT_NEAR(got, want, 1e-5 * std::fabs(want) + 1e-6) << "step " << step;
    for (int r = 1; r < 4; ++r) {
      EXPECT_EQ(outs[r][step]["param_checksum"],
                outs[0][step]["param_checksum"])
          << "rank " << r << " step " << step;
      EXPECT_EQ(outs[r][step]["loss"], outs[0][step]["loss"]);
    }
  }
}

TEST(TupaTrainTest, BadFlagsAndEnvironmentAreUsageErrors) {
  const std::string dir = testing::MakeTempDir("bad_flags");
  const std::string spec = WriteSpec(dir, "flags", R"(
  model: {type: mlp, layers: [16, 4]}
  data: {format: synthetic, samples: 64, test_samples: 32}
  batch_size: 16
  steps: 2
)");
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"--backend", "gpu"}, {}, "--backend"},
           {{"--steps", "0"}, {}, "--steps"},
           {{"--json=maybe"}, {}, "--json"},
           {{}, {{"RANK", "abc"}}, "RANK=abc"},
           {{}, {{"WORLD_SIZE", "2"}, {"RANK", "2"}}, "RANK=2"},
           {{}, {{"MASTER_PORT", "70000"}}, "MASTER_PORT"},
           {{}, {{"TUPA_RENDEZVOUS_TIMEOUT_S", "0"}}, "RENDEZVOUS_TIMEOUT"},
       }) {
    std::vector<std::string> args = {"-f", spec};
    args.insert(args.end(), c.args.begin(), c.args.end());
    TrainProcess p = StartTrain(kBinary, args, c.env, dir + "/run");
    EXPECT_EQ(WaitTrain(p, absl::Seconds(30)), 2) << c.says;
    EXPECT_NE(p.err().find(c.says), std::string::npos) << p.err();
  }
  // --json=false is no JSON, not JSON.
  TrainProcess plain =
      StartTrain(kBinary, {"-f", spec, "--json=false"}, {}, dir + "/plain");
  ASSERT_EQ(WaitTrain(plain, absl::Seconds(30)), 0) << plain.err();
  EXPECT_EQ(plain.out().find("{\"step\""), std::string::npos) << plain.out();
}

TEST(TupaTrainTest, RendezvousTimeoutComesFromTheEnvironment) {
  // Rank 0 of two, whose peer never comes: it gives up after the 2 s asked
  // for, not the default 300 s.
  const std::string dir = testing::MakeTempDir("rendezvous_timeout");
  const std::string spec = WriteSpec(dir, "alone", R"(
  model: {type: mlp, layers: [16, 4]}
  data: {format: synthetic, samples: 64, test_samples: 32}
  batch_size: 16
  steps: 2
)");
  TrainProcess alone =
      StartTrain(kBinary, {"-f", spec},
                 {{"WORLD_SIZE", "2"},
                  {"RANK", "0"},
                  {"MASTER_PORT", absl::StrCat(testing::PickFreePort())},
                  {"TUPA_RENDEZVOUS_TIMEOUT_S", "2"}},
                 dir + "/run");
  EXPECT_EQ(WaitTrain(alone, absl::Seconds(60)), 1) << alone.err();
}

TEST(TupaTrainTest, RefusesToResumeACheckpointOfAnotherSeed) {
  const std::string dir = testing::MakeTempDir("other_seed");
  auto spec_with_seed = [&](int seed) {
    return WriteSpec(dir, absl::StrCat("seed", seed),
                     absl::StrCat(R"(
  model: {type: mlp, layers: [16, 4]}
  data: {format: synthetic, samples: 256, test_samples: 64}
  batch_size: 16
  steps: 20
  checkpoint_every: 10
  seed: )",
                                  seed, "\n"));
  };
  const std::string ckpt = dir + "/ckpt";
  TrainProcess first =
      StartTrain(kBinary, {"-f", spec_with_seed(1), "--checkpoint-dir", ckpt},
                 {}, dir + "/first");
  ASSERT_EQ(WaitTrain(first, absl::Seconds(60)), 0) << first.err();
  TrainProcess other = StartTrain(
      kBinary,
      {"-f", spec_with_seed(2), "--checkpoint-dir", ckpt, "--steps", "40"}, {},
      dir + "/other");
  EXPECT_NE(WaitTrain(other, absl::Seconds(60)), 0);
  EXPECT_NE(other.err().find("seed 1"), std::string::npos) << other.err();
}

// Runs 2 ranks with checkpoints, SIGKILLs rank 1 mid-run, restarts both and
// checks every step after the restart against an uninterrupted run, bit for
// bit (losses as printed with 9 significant digits and parameter hashes).
TEST(TupaTrainTest, KilledRankResumesBitIdentically) {
  const std::string dir = testing::MakeTempDir("resume");
  const std::string spec = WriteSpec(dir, "resume", R"(
  model: {type: mlp, layers: [64, 256, 256, 10]}
  data: {format: synthetic, samples: 4096, test_samples: 256}
  batch_size: 16
  steps: 400
  checkpoint_every: 50
  seed: 3
  optimizer: {name: adamw, lr: 0.002, warmup_steps: 20, schedule: cosine}
)");
  const std::vector<std::string> args = {"-f",
                                         spec,
                                         "--json",
                                         "--log-every",
                                         "1",
                                         "--param-checksum",
                                         "--log-all-ranks"};
  // Uninterrupted reference (no checkpoint directory).
  std::vector<TrainProcess> ref_ranks =
      StartRanks(kBinary, 2, args, dir + "/ref");
  for (TrainProcess& p : ref_ranks) {
    ASSERT_EQ(WaitTrain(p, absl::Seconds(120)), 0) << p.err();
  }
  auto ref = StepLines(ref_ranks[0].out());
  ASSERT_EQ(ref.size(), 400u);

  std::map<std::string, std::string> env = {
      {"TUPA_CHECKPOINT_DIR", dir + "/ckpt"}};
  std::vector<TrainProcess> first =
      StartRanks(kBinary, 2, args, dir + "/first", env);
  // Kill rank 1 once it has passed step 120 (checkpoints at 50, 100).
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (StepLines(first[1].out()).count(120) == 0) {
    ASSERT_LT(absl::Now(), deadline) << first[1].err();
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_EQ(::kill(first[1].pid, SIGKILL), 0);
  EXPECT_EQ(WaitTrain(first[1], absl::Seconds(10)), -SIGKILL);
  // The survivor notices its peer is gone and fails (or is killed).
  const int survivor = WaitTrain(first[0], absl::Seconds(60));
  EXPECT_NE(survivor, 0) << "rank 0 finished without its peer";
  auto before = StepLines(first[0].out());
  ASSERT_LT(before.size(), 400u) << "the run ended before the kill";

  std::vector<TrainProcess> second =
      StartRanks(kBinary, 2, args, dir + "/second", env);
  for (TrainProcess& p : second) {
    ASSERT_EQ(WaitTrain(p, absl::Seconds(120)), 0) << p.err();
  }
  const JsonLine summary = SummaryLine(second[0].out());
  int64_t resumed = 0;
  ASSERT_TRUE(absl::SimpleAtoi(summary.at("resumed_from_step"), &resumed));
  EXPECT_GE(resumed, 100);
  EXPECT_EQ(resumed % 50, 0);
  for (int r = 0; r < 2; ++r) {
    auto after = StepLines(second[r].out());
    ASSERT_EQ(static_cast<int64_t>(after.size()), 400 - resumed);
    for (const auto& [step, j] : after) {
      EXPECT_EQ(j.at("loss"), ref[step].at("loss")) << "step " << step;
      EXPECT_EQ(j.at("param_checksum"), ref[step].at("param_checksum"))
          << "rank " << r << " step " << step;
    }
  }
  EXPECT_EQ(summary.at("final_loss"),
            SummaryLine(ref_ranks[0].out()).at("final_loss"));
}

}  // namespace
}  // namespace tupa::trainer

// The progress line of `tupa wait` and how it is drawn on a terminal and
// in a pipe.
#include "client/progress_line.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "absl/time/clock.h"

namespace tupa::client {
namespace {

v1::Job TrainingJob() {
  v1::Job job;
  job.set_id(12);
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_attempt(1);
  auto* spec = job.mutable_spec();
  spec->mutable_resources()->set_gpus(2);
  spec->mutable_resources()->set_nodes(2);
  spec->mutable_train()->set_batch_size(32);  // global batch 128
  auto* p = job.mutable_progress();
  p->set_step(940);
  p->set_epoch(1);
  p->set_loss(0.42134);
  p->set_samples_per_s(1280);  // 10 steps/s
  p->set_total_steps(4690);
  p->set_total_epochs(10);
  job.set_cost("0.4249");
  job.set_currency("USD");
  return job;
}

TEST(ProgressLine, ShowsEpochStepLossRateEtaAndCost) {
  EXPECT_EQ(ProgressLine(TrainingJob(), absl::Now()),
            "job 12 RUNNING  epoch 2/10  step 940/4690 (20%)  loss 0.4213  "
            "1280 samples/s  ETA 6m15s  cost 0.42 USD");
  // 3750 steps left at 10 steps/s.
  EXPECT_DOUBLE_EQ(EtaSeconds(TrainingJob()), 375);
}

TEST(ProgressLine, LeavesOutWhatIsNotKnown) {
  v1::Job job = TrainingJob();
  job.mutable_progress()->Clear();
  job.clear_cost();
  job.set_state(v1::JOB_STATE_PENDING);
  job.set_pending_reason("BUDGET");
  EXPECT_EQ(ProgressLine(job, absl::Now()), "job 12 PENDING (BUDGET)");
  EXPECT_LT(EtaSeconds(job), 0);
  job.set_state(v1::JOB_STATE_RUNNING);
  const absl::Time now = absl::FromUnixSeconds(1000000);
  job.mutable_started_at()->set_seconds(1000000 - 75);
  EXPECT_EQ(ProgressLine(job, now), "job 12 RUNNING  running 1m15s");
}

TEST(ProgressPrinter, RedrawsOneLineInPlaceOnATerminal) {
  std::ostringstream out;
  ProgressPrinter printer(&out, /*terminal=*/true, /*columns=*/0);
  v1::Job job = TrainingJob();
  printer.Show(job, absl::Now());
  job.mutable_progress()->set_step(950);
  printer.Show(job, absl::Now());
  printer.Finish();
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 2) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("\rjob 12 RUNNING  epoch 2/10  step 950/4690"),
            std::string::npos);
  EXPECT_NE(text.find("\x1b[K"), std::string::npos);
}

TEST(ProgressPrinter, CutsTheLineToTheTerminalWidth) {
  std::ostringstream out;
  ProgressPrinter printer(&out, true, 20);
  printer.Show(TrainingJob(), absl::Now());
  EXPECT_EQ(out.str(), "\rjob 12 RUNNING  epo\x1b[K");
}

TEST(ProgressPrinter, PipedPrintsPlainLinesOnStateChangesAndAtMostEvery10s) {
  std::ostringstream out;
  ProgressPrinter printer(&out, /*terminal=*/false, 0);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  v1::Job job = TrainingJob();
  printer.Show(job, t0);
  job.mutable_progress()->set_step(950);
  printer.Show(job, t0 + absl::Seconds(3));  // too soon: skipped
  job.mutable_progress()->set_step(1000);
  printer.Show(job, t0 + absl::Seconds(11));
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  printer.Show(job, t0 + absl::Seconds(12));  // a new state: printed
  printer.Finish();
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
  EXPECT_EQ(text.find("step 950/"), std::string::npos) << text;
  EXPECT_NE(text.find("step 1000/"), std::string::npos) << text;
}

}  // namespace
}  // namespace tupa::client

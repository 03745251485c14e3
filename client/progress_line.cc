#include "client/progress_line.h"

#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/job_format.h"
#include "client/money.h"
#include "common/job_spec.h"
#include "common/quantity.h"

namespace tupa::client {

using google::protobuf::util::TimeUtil;

double EtaSeconds(const v1::Job& job) {
  const v1::Progress& p = job.progress();
  if (!job.spec().has_train() || p.total_steps() <= 0 ||
      p.samples_per_s() <= 0 || p.step() <= 0)
    return -1;
  // samples/s is the whole job's: every rank runs batch_size per step.
  const double global_batch =
      static_cast<double>(job.spec().train().batch_size()) *
      std::max(1, job.spec().resources().nodes()) * RanksPerNode(job.spec());
  if (global_batch <= 0) return -1;
  const double steps_left =
      static_cast<double>(std::max<int64_t>(0, p.total_steps() - p.step()));
  return steps_left * global_batch / p.samples_per_s();
}

std::string ProgressLine(const v1::Job& job, absl::Time now) {
  std::string line =
      absl::StrCat("job ", job.id(), " ", JobStateName(job.state()));
  if (job.state() == v1::JOB_STATE_PENDING && !job.pending_reason().empty())
    absl::StrAppend(&line, " (", job.pending_reason(), ")");
  if (job.attempt() > 1) absl::StrAppend(&line, "  attempt ", job.attempt());
  const v1::Progress& p = job.progress();
  if (p.step() > 0) {
    if (p.total_epochs() > 0) {
      absl::StrAppend(&line, "  epoch ",
                      std::min(p.epoch() + 1, p.total_epochs()), "/",
                      p.total_epochs());
    }
    absl::StrAppend(&line, "  step ", p.step());
    if (p.total_steps() > 0) {
      absl::StrAppend(
          &line, "/", p.total_steps(),
          absl::StrFormat(" (%d%%)", static_cast<int>(std::floor(
                                         100.0 * p.step() / p.total_steps()))));
    }
    absl::StrAppend(&line, absl::StrFormat("  loss %.4f", p.loss()));
    if (p.samples_per_s() > 0)
      absl::StrAppend(&line,
                      absl::StrFormat("  %.0f samples/s", p.samples_per_s()));
    if (const double eta = EtaSeconds(job);
        eta >= 0 && job.state() == v1::JOB_STATE_RUNNING)
      absl::StrAppend(&line, "  ETA ",
                      HumanDuration(absl::Seconds(std::ceil(eta))));
  } else if (job.state() == v1::JOB_STATE_RUNNING && job.has_started_at()) {
    const absl::Time started = absl::FromUnixMillis(
        TimeUtil::TimestampToMilliseconds(job.started_at()));
    if (now > started)
      absl::StrAppend(&line, "  running ", HumanDuration(now - started));
  }
  if (p.test_accuracy() > 0)
    absl::StrAppend(&line,
                    absl::StrFormat("  accuracy %.4f", p.test_accuracy()));
  if (!job.cost().empty())
    absl::StrAppend(&line, "  cost ", FormatMoney(job.cost(), job.currency()));
  return line;
}

ProgressPrinter::ProgressPrinter(std::ostream* out, bool terminal, int columns,
                                 absl::Duration plain_every)
    : out_(out),
      terminal_(terminal),
      columns_(columns),
      plain_every_(plain_every) {}

void ProgressPrinter::Show(const v1::Job& job, absl::Time now) {
  std::string line = ProgressLine(job, now);
  if (terminal_) {
    if (columns_ > 1 && static_cast<int>(line.size()) >= columns_)
      line.resize(columns_ - 1);
    if (line == last_line_ && drawn_) return;
    *out_ << '\r' << line << "\x1b[K" << std::flush;
    drawn_ = true;
    last_line_ = std::move(line);
    return;
  }
  const bool state_changed = job.state() != last_state_;
  last_state_ = job.state();
  if (line == last_line_ ||
      (!state_changed && now - last_plain_ < plain_every_))
    return;
  *out_ << line << '\n' << std::flush;
  last_plain_ = now;
  last_line_ = std::move(line);
}

void ProgressPrinter::Finish() {
  if (drawn_) *out_ << '\n' << std::flush;
  drawn_ = false;
}

}  // namespace tupa::client

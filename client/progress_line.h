// What `tupa wait` shows while it waits (DESIGN §3): one line per job
// state, with a training job's epoch and step of the total, loss,
// samples/s, ETA and cost so far. On a terminal the line is redrawn in
// place (carriage return, erase to the end of the line) at every update;
// piped, it is printed as plain lines, one when the state changes and at
// most one every `plain_every` while it runs. Not thread-safe.
#ifndef TUPA_CLIENT_PROGRESS_LINE_H_
#define TUPA_CLIENT_PROGRESS_LINE_H_

#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "tupa/v1/job.pb.h"

namespace tupa::client {

// "job 12 RUNNING  epoch 2/10  step 940/4690 (20%)  loss 0.4213
// 5230 samples/s  ETA 2m05s  cost 0.42 USD"; parts that are unknown are
// left out. `now` is for the time running when no step is known yet.
std::string ProgressLine(const v1::Job& job, absl::Time now);

// Seconds left for a training job at its latest samples/s, or a negative
// number when that cannot be told (no total, no rate, not training).
double EtaSeconds(const v1::Job& job);

class ProgressPrinter {
 public:
  // `columns`: the terminal's width (a longer line is cut to fit, so the
  // carriage return stays on its row); 0 = unknown.
  ProgressPrinter(std::ostream* out, bool terminal, int columns,
                  absl::Duration plain_every = absl::Seconds(10));

  void Show(const v1::Job& job, absl::Time now);
  // Ends the line on a terminal; call before printing anything else.
  void Finish();

 private:
  std::ostream* out_;
  bool terminal_;
  int columns_;
  absl::Duration plain_every_;
  bool drawn_ = false;  // a line is on the terminal without its newline
  int last_state_ = -1;
  absl::Time last_plain_ = absl::InfinitePast();
  std::string last_line_;
};

}  // namespace tupa::client

#endif  // TUPA_CLIENT_PROGRESS_LINE_H_

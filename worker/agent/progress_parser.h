// Turns the trainer's `--json` output lines into Progress updates.
// tupa-train prints one JSON object per logged step ({"step", "epoch",
// "loss", "samples_per_s", "layout", "param_bytes", "total_steps",
// "total_epochs"}) and a final {"summary": true, ..., "test_accuracy"}
// line; anything else is ordinary log output.
#ifndef TUPA_WORKER_AGENT_PROGRESS_PARSER_H_
#define TUPA_WORKER_AGENT_PROGRESS_PARSER_H_

#include <string>
#include <vector>

#include "tupa/v1/job.pb.h"

namespace tupa::worker {

// Appends `data` to `buffer` (a partial line from the last call), returns
// the progress of every complete JSON line, and keeps the remainder.
std::vector<v1::Progress> ExtractProgress(std::string& buffer,
                                          const std::string& data);

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_PROGRESS_PARSER_H_

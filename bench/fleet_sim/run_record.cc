#include "bench/fleet_sim/run_record.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tupa::fleet_sim {

RunRecord::~RunRecord() {
  absl::MutexLock lock(&mu_);
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status RunRecord::Open(const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr)
    return absl::InvalidArgumentError(
        absl::StrCat("--record: cannot open ", path, ": ", strerror(errno)));
  absl::MutexLock lock(&mu_);
  file_ = f;
  return absl::OkStatus();
}

void RunRecord::Write(const NodeRun& r) {
  absl::MutexLock lock(&mu_);
  if (file_ == nullptr) return;
  const std::string end =
      r.end_ms < 0 ? std::string("null") : absl::StrCat(r.end_ms);
  absl::FPrintF(file_,
                "{\"job\": %d, \"attempt\": %d, \"node_rank\": %d, "
                "\"worker\": \"%s\", \"start_ms\": %d, \"end_ms\": %s, "
                "\"exit_code\": %d}\n",
                r.job_id, r.attempt, r.node_rank, r.worker, r.start_ms, end,
                r.exit_code);
}

void RunRecord::Flush() {
  absl::MutexLock lock(&mu_);
  if (file_ != nullptr) std::fflush(file_);
}

}  // namespace tupa::fleet_sim

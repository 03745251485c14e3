// LogStore: the ranks' stdout/stderr as the workers stream it, kept by the
// scheduler in files <root>/<job>/<attempt>/rank-<r>.log so that `tupa
// logs` works after a worker is gone. Thread-safe.
#ifndef TUPA_SCHEDULER_SERVICE_LOG_STORE_H_
#define TUPA_SCHEDULER_SERVICE_LOG_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace tupa::scheduler {

class LogStore {
 public:
  explicit LogStore(std::string root) : root_(std::move(root)) {}

  // Appends `data`. With `offset` (where data starts in the rank's output)
  // the bytes already stored are skipped, so resent chunks are kept once;
  // a chunk past the end (bytes lost in between) is appended as is.
  absl::Status Append(int64_t job_id, int32_t attempt, int32_t rank,
                      const std::string& data,
                      std::optional<int64_t> offset = std::nullopt);
  // Ranks that have a log for the attempt, ascending.
  std::vector<int32_t> Ranks(int64_t job_id, int32_t attempt) const;
  // Reads from `offset`; returns what is there (possibly empty).
  std::string Read(int64_t job_id, int32_t attempt, int32_t rank,
                   int64_t offset, int64_t max_bytes) const;

 private:
  std::string Path(int64_t job_id, int32_t attempt, int32_t rank) const;
  const std::string root_;
  absl::Mutex mu_;  // serialises appends
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_LOG_STORE_H_

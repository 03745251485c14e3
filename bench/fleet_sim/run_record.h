// RunRecord: the --record file, one JSON line per node run by a simulated
// worker: {"job", "attempt", "node_rank", "worker", "start_ms", "end_ms",
// "exit_code"} (Unix ms; start = Assign received, end = EXITED sent). The
// correctness tests read it to check that two attempts of one job never
// ran at once. Thread-safe; a disabled record (no path) ignores writes.
#ifndef TUPA_BENCH_FLEET_SIM_RUN_RECORD_H_
#define TUPA_BENCH_FLEET_SIM_RUN_RECORD_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace tupa::fleet_sim {

struct NodeRun {
  int64_t job_id = 0;
  int32_t attempt = 0;
  int32_t node_rank = 0;
  std::string worker;
  int64_t start_ms = 0;
  int64_t end_ms = -1;  // -1: still running when the simulator stopped
  int exit_code = 0;
};

class RunRecord {
 public:
  RunRecord() = default;
  ~RunRecord();
  RunRecord(const RunRecord&) = delete;
  RunRecord& operator=(const RunRecord&) = delete;

  // Opens (truncates) `path`; "" leaves the record disabled.
  absl::Status Open(const std::string& path);
  void Write(const NodeRun& run);
  void Flush();

 private:
  absl::Mutex mu_;
  std::FILE* file_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_RUN_RECORD_H_

// Readers for the openb trace files (../shared/traces/README.md): node
// lists, pod lists and job lists as CSV with a header row. Columns are found
// by name, so both node-list layouts are accepted. Errors: NotFound when the
// file cannot be opened, InvalidArgument for a missing column or a bad
// number (the message names file, line and column).
#ifndef TUPA_SCHEDULER_SIM_TRACES_H_
#define TUPA_SCHEDULER_SIM_TRACES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/placement/placement.h"

namespace tupa::sim {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// Splits on commas; no quoting (the traces use none). Skips blank lines.
absl::StatusOr<CsvTable> ParseCsv(const std::string& text);
absl::StatusOr<CsvTable> ReadCsvFile(const std::string& path);

// A pod or job request in openb units.
struct PodSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int gpu_milli = 0;  // per GPU; < 1000 with num_gpu == 1 is a share
  std::vector<std::string> gpu_types;  // from "A|B"; empty = any
  // Replay only.
  int64_t submit_s = 0;
  int64_t duration_s = 0;
  std::string user;

  // JobRequest::gpus: a share of one device, or whole GPUs.
  double Gpus() const;
};

// `sn|node_id, cpu_milli, memory_mib, gpu|num_gpus, model|gpu_type`.
absl::StatusOr<std::vector<scheduler::NodeView>> NodesFromCsv(
    const CsvTable& table);
absl::StatusOr<std::vector<scheduler::NodeView>> LoadNodes(
    const std::string& path);

// A smaller cluster with the same mix of GPU models: keeps `fraction` (in
// (0, 1]) of each model's nodes, evenly spread over the list and always its
// first node. For replays, where the openb cluster is too large for its own
// trace to queue (../shared/traces/README.md).
std::vector<scheduler::NodeView> SampleNodes(
    const std::vector<scheduler::NodeView>& nodes, double fraction);

// Pod lists (`num_gpu, gpu_milli, gpu_spec`) and job lists (`num_gpus,
// gpu_type, submit_time_s, duration_s`, optional `gpu_milli`, `cpu_milli`,
// `memory_mib`, `user`).
absl::StatusOr<std::vector<PodSpec>> PodsFromCsv(const CsvTable& table);
absl::StatusOr<std::vector<PodSpec>> LoadPods(const std::string& path);

}  // namespace tupa::sim

#endif  // TUPA_SCHEDULER_SIM_TRACES_H_

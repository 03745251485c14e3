#include "client/worker_format.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/money.h"
#include "client/output.h"
#include "common/quantity.h"

namespace tupa::client {
namespace {

// Distinct device types, "(emulated)" when every device is.
std::string DeviceTypes(const v1::Worker& w) {
  if (w.devices_size() == 0) return "-";
  std::set<std::string> types;
  bool all_emulated = true;
  for (const v1::Device& d : w.devices()) {
    types.insert(d.gpu_type().empty() ? d.name() : d.gpu_type());
    all_emulated = all_emulated && d.emulated();
  }
  std::string s = absl::StrJoin(types, ",");
  if (all_emulated) absl::StrAppend(&s, " (emulated)");
  return s;
}

// Mean device utilisation and total device memory used, from the last
// heartbeat (the numbers the worker's /metrics carries): "37% 68.0Mi".
std::string DeviceUse(const v1::Worker& w) {
  if (w.devices_size() == 0) return "-";
  double util = 0;
  int64_t used = 0;
  for (const v1::Device& d : w.devices()) {
    util += d.utilization();
    used += d.memory_used_bytes();
  }
  return absl::StrCat(static_cast<int>(100 * util / w.devices_size() + 0.5),
                      "% ", used > 0 ? HumanMemory(used) : "0");
}

// The idle policy's verdict for a live worker ("KEEP_WARM: last 1 of pool
// ..."), or why a stopped one stopped ("IDLE: ...").
std::string IdlePolicyColumn(const v1::Worker& w) {
  if (!w.stopped_reason().empty()) return w.stopped_reason();
  if (w.verdict().empty()) return "-";
  if (w.verdict_reason().empty()) return w.verdict();
  return absl::StrCat(w.verdict(), ": ", w.verdict_reason());
}

}  // namespace

std::string WorkerStateName(v1::WorkerState state) {
  return StripEnumPrefix(v1::WorkerState_Name(state), "WORKER_STATE_");
}

std::string RenderWorkersTable(const std::vector<v1::Worker>& workers,
                               absl::Time now) {
  Table table({"ID", "STATE", "REGION", "GPUS", "TYPE", "OFFERING",
               "PRICE/GPU-H", "UTIL", "CPU", "MEM", "ADDRESS", "LAST-SEEN",
               "JOBS", "IDLE", "POLICY"});
  for (const v1::Worker& w : workers) {
    table.AddRow(
        {w.id(), WorkerStateName(w.state()),
         w.region().empty() ? "-" : w.region(),
         absl::StrCat(FormatCount(w.gpus_allocated()), "/", w.devices_size()),
         DeviceTypes(w), w.offering().empty() ? "-" : w.offering(),
         w.price_per_gpu_hour().empty()
             ? "-"
             : FormatPrice(w.price_per_gpu_hour(), w.currency()),
         DeviceUse(w), FormatCount(w.cpu()),
         w.memory_bytes() > 0 ? HumanMemory(w.memory_bytes()) : "-",
         w.address().empty() ? "-" : w.address(),
         HumanAgo(ToTime(w.last_seen()), now),
         w.running_jobs_size() > 0 ? absl::StrJoin(w.running_jobs(), ",") : "-",
         w.idle_seconds() > 0 ? HumanDuration(absl::Seconds(w.idle_seconds()))
                              : "-",
         IdlePolicyColumn(w)});
  }
  return table.Render();
}

}  // namespace tupa::client

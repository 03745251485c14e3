#include "scheduler/sim/traces.h"

#include <cmath>
#include <cstdlib>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace tupa::sim {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

class Row {
 public:
  Row(const CsvTable& t, size_t i) : t_(t), i_(i) {}

  // Index of the first of `names` present in the header, or -1.
  static constexpr double kMaxTraceValue = 1e12;

  static int Column(const CsvTable& t,
                    std::initializer_list<const char*> names) {
    for (const char* name : names) {
      for (size_t c = 0; c < t.header.size(); ++c) {
        if (t.header[c] == name) return static_cast<int>(c);
      }
    }
    return -1;
  }

  absl::StatusOr<int64_t> Int(int col, bool optional = false) const {
    const std::string& s = Text(col);
    if (s.empty() && (optional || col < 0)) return 0;
    double v = 0;
    if (!absl::SimpleAtod(s, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", i_ + 2, ", column ", t_.header[col],
                       ": not a number: '", s, "'"));
    }
    // Whole, non-negative and small enough to count with: NaN, 1.9 or
    // 4294967297 GPUs are mistakes in the trace, not requests.
    if (!(v >= 0 && v <= kMaxTraceValue) || v != std::floor(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", i_ + 2, ", column ", t_.header[col],
                       ": not a whole number between 0 and 1e12: '", s, "'"));
    }
    return static_cast<int64_t>(v);
  }
  const std::string& Text(int col) const {
    static const std::string kEmpty;
    if (col < 0 || col >= static_cast<int>(t_.rows[i_].size())) return kEmpty;
    return t_.rows[i_][col];
  }

 private:
  const CsvTable& t_;
  size_t i_;
};

absl::Status Missing(const char* what) {
  return absl::InvalidArgumentError(absl::StrCat("missing column ", what));
}

}  // namespace

double PodSpec::Gpus() const {
  if (num_gpu == 1 && gpu_milli > 0 && gpu_milli < 1000) {
    return gpu_milli / 1000.0;
  }
  return num_gpu;
}

absl::StatusOr<CsvTable> ParseCsv(const std::string& text) {
  CsvTable table;
  bool first = true;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripSuffix(line, "\r");
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    for (std::string& c : cells) {
      c = std::string(absl::StripAsciiWhitespace(c));
    }
    if (first) {
      table.header = std::move(cells);
      first = false;
    } else {
      table.rows.push_back(std::move(cells));
    }
  }
  if (table.header.empty()) return absl::InvalidArgumentError("empty CSV");
  return table;
}

absl::StatusOr<CsvTable> ReadCsvFile(const std::string& path) {
  std::optional<std::string> text = ReadWholeFile(path);
  if (!text) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  auto table = ParseCsv(*text);
  if (!table.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", table.status().message()));
  }
  return table;
}

absl::StatusOr<std::vector<scheduler::NodeView>> NodesFromCsv(
    const CsvTable& t) {
  const int id = Row::Column(t, {"sn", "node_id", "name"});
  const int cpu = Row::Column(t, {"cpu_milli"});
  const int mem = Row::Column(t, {"memory_mib"});
  const int gpu = Row::Column(t, {"gpu", "num_gpus", "num_gpu"});
  const int model = Row::Column(t, {"model", "gpu_type"});
  if (id < 0) return Missing("sn/node_id");
  if (cpu < 0) return Missing("cpu_milli");
  if (mem < 0) return Missing("memory_mib");
  if (gpu < 0) return Missing("gpu/num_gpus");
  std::vector<scheduler::NodeView> nodes;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    Row r(t, i);
    scheduler::NodeView n;
    n.worker_id = r.Text(id);
    int64_t cpu_milli = 0, mem_mib = 0, gpus = 0;
    ASSIGN_OR_RETURN(cpu_milli, r.Int(cpu));
    ASSIGN_OR_RETURN(mem_mib, r.Int(mem));
    ASSIGN_OR_RETURN(gpus, r.Int(gpu));
    if (gpus > 1024) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", i + 2, ": more than 1024 GPUs on one node"));
    }
    n.cpu_total = n.cpu_free = cpu_milli / 1000.0;
    n.memory_total = n.memory_free = mem_mib * kMiB;
    for (int d = 0; d < gpus; ++d) n.devices.push_back({d, r.Text(model), 1.0});
    nodes.push_back(std::move(n));
  }
  return nodes;
}

absl::StatusOr<std::vector<scheduler::NodeView>> LoadNodes(
    const std::string& path) {
  auto t = ReadCsvFile(path);
  if (!t.ok()) return t.status();
  auto nodes = NodesFromCsv(*t);
  if (!nodes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", nodes.status().message()));
  }
  return nodes;
}

std::vector<scheduler::NodeView> SampleNodes(
    const std::vector<scheduler::NodeView>& nodes, double fraction) {
  std::map<std::string, int64_t> seen;  // model -> nodes of it so far
  std::vector<scheduler::NodeView> kept;
  for (const scheduler::NodeView& n : nodes) {
    const std::string model = n.devices.empty() ? "" : n.devices[0].gpu_type;
    const int64_t k = seen[model]++;
    if (std::ceil((k + 1) * fraction - 1e-9) > std::ceil(k * fraction - 1e-9)) {
      kept.push_back(n);
    }
  }
  return kept;
}

absl::StatusOr<std::vector<PodSpec>> PodsFromCsv(const CsvTable& t) {
  const int name = Row::Column(t, {"name", "job_id"});
  const int cpu = Row::Column(t, {"cpu_milli"});
  const int mem = Row::Column(t, {"memory_mib"});
  const int gpus = Row::Column(t, {"num_gpu", "num_gpus"});
  const int milli = Row::Column(t, {"gpu_milli"});
  const int spec = Row::Column(t, {"gpu_spec", "gpu_type"});
  const int submit = Row::Column(t, {"submit_time_s", "creation_time"});
  const int duration = Row::Column(t, {"duration_s"});
  const int user = Row::Column(t, {"user"});
  if (gpus < 0) return Missing("num_gpu/num_gpus");
  std::vector<PodSpec> pods;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    Row r(t, i);
    PodSpec p;
    p.name = r.Text(name);
    int64_t num = 0, m = 0;
    ASSIGN_OR_RETURN(p.cpu_milli, r.Int(cpu, true));
    ASSIGN_OR_RETURN(p.memory_mib, r.Int(mem, true));
    ASSIGN_OR_RETURN(num, r.Int(gpus));
    ASSIGN_OR_RETURN(m, r.Int(milli, true));
    p.num_gpu = static_cast<int>(num);
    // Without gpu_milli (job lists) every GPU is whole.
    p.gpu_milli = milli < 0 ? (num > 0 ? 1000 : 0) : static_cast<int>(m);
    for (absl::string_view s : absl::StrSplit(r.Text(spec), '|')) {
      if (!s.empty()) p.gpu_types.emplace_back(s);
    }
    ASSIGN_OR_RETURN(p.submit_s, r.Int(submit, true));
    ASSIGN_OR_RETURN(p.duration_s, r.Int(duration, true));
    p.user = r.Text(user);
    if (num > 1024 || p.gpu_milli > 1000) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", i + 2, ": negative or impossible request"));
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

absl::StatusOr<std::vector<PodSpec>> LoadPods(const std::string& path) {
  auto t = ReadCsvFile(path);
  if (!t.ok()) return t.status();
  auto pods = PodsFromCsv(*t);
  if (!pods.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", pods.status().message()));
  }
  return pods;
}

}  // namespace tupa::sim

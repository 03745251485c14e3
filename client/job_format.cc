#include "client/job_format.h"

#include <map>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/money.h"
#include "client/output.h"
#include "common/quantity.h"

namespace tupa::client {
namespace {

constexpr absl::string_view kStatePrefix = "JOB_STATE_";
constexpr size_t kMessageWidth = 48;

std::string OrDash(absl::string_view s) {
  return s.empty() ? "-" : std::string(s);
}

std::string FormatLoss(double loss) { return absl::StrFormat("%.4g", loss); }

std::string LaunchName(v1::LaunchMode mode) {
  return mode == v1::LAUNCH_MODE_PER_NODE ? "per-node" : "per-gpu";
}

std::string ResourcesLine(const v1::Resources& r) {
  const int nodes = r.nodes() > 0 ? r.nodes() : 1;
  std::string s = absl::StrCat(FormatCount(r.gpus()), " GPU x ", nodes,
                               nodes == 1 ? " node" : " nodes");
  if (r.gpu_type_size() > 0)
    absl::StrAppend(&s, ", type ", absl::StrJoin(r.gpu_type(), "|"));
  if (r.cpu() > 0) absl::StrAppend(&s, ", cpu ", FormatCount(r.cpu()));
  if (r.memory_bytes() > 0)
    absl::StrAppend(&s, ", memory ", HumanMemory(r.memory_bytes()));
  for (const auto& [k, v] : r.labels()) absl::StrAppend(&s, ", ", k, "=", v);
  return s;
}

std::string TrainLine(const v1::TrainSpec& t) {
  std::string s = absl::StrCat(t.model().type(), " [",
                               absl::StrJoin(t.model().layers(), ","), "]");
  if (!t.data().format().empty())
    absl::StrAppend(&s, ", data ", t.data().format(), " ", t.data().path());
  absl::StrAppend(&s, ", batch ", t.batch_size());
  if (t.epochs() > 0) absl::StrAppend(&s, ", epochs ", t.epochs());
  if (t.steps() > 0) absl::StrAppend(&s, ", steps ", t.steps());
  absl::StrAppend(&s, ", ", t.optimizer().name(), " lr ",
                  absl::StrFormat("%g", t.optimizer().lr()), ", ",
                  t.precision());
  if (t.parallel().tensor() > 1)
    absl::StrAppend(&s, ", tensor parallel ", t.parallel().tensor());
  return s;
}

std::string ProgressLine(const v1::Progress& p, absl::Time now) {
  std::string s = absl::StrCat("step ", p.step(), ", epoch ", p.epoch(),
                               ", loss ", FormatLoss(p.loss()));
  if (p.samples_per_s() > 0)
    absl::StrAppend(&s, ", ", absl::StrFormat("%.0f", p.samples_per_s()),
                    " samples/s");
  if (p.test_accuracy() > 0)
    absl::StrAppend(&s, ", test accuracy ",
                    absl::StrFormat("%.2f%%", 100 * p.test_accuracy()));
  if (!p.layout().empty())
    absl::StrAppend(&s, ", layout ", p.layout(), " (TP x DP)");
  if (p.param_bytes_per_rank() > 0)
    absl::StrAppend(&s, ", ", HumanMemory(p.param_bytes_per_rank()),
                    " parameters+optimizer per rank");
  if (p.has_updated_at())
    absl::StrAppend(&s, " (", HumanAgo(ToTime(p.updated_at()), now), ")");
  return s;
}

// Rounded to cents; the exact amount follows when rounding changed it, so
// a short job does not read as free.
std::string CostLine(const v1::Job& job) {
  std::string s = FormatMoney(job.cost(), job.currency());
  const size_t dot = job.cost().find('.');
  if (dot != std::string::npos && job.cost().size() > dot + 3 &&
      job.cost().find_first_not_of('0', dot + 3) != std::string::npos)
    absl::StrAppend(&s, " (exactly ", job.cost(), ")");
  return s;
}

}  // namespace

std::string JobStateName(v1::JobState state) {
  return StripEnumPrefix(v1::JobState_Name(state), kStatePrefix);
}

bool IsTerminal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

absl::StatusOr<std::vector<v1::JobState>> ParseJobStates(
    absl::string_view text) {
  std::vector<v1::JobState> out;
  for (absl::string_view word :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::string name = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(word));
    if (absl::StartsWith(name, kStatePrefix))
      name = name.substr(kStatePrefix.size());
    if (name == "CANCELED") name = "CANCELLED";
    std::vector<v1::JobState> matches;
    for (int i = v1::JobState_MIN + 1; i <= v1::JobState_MAX; ++i) {
      if (!v1::JobState_IsValid(i)) continue;
      const auto state = static_cast<v1::JobState>(i);
      const std::string full = JobStateName(state);
      if (full == name) {
        matches = {state};
        break;
      }
      if (absl::StartsWith(full, name)) matches.push_back(state);
    }
    if (matches.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--state: unknown state \"", word,
          "\" (pending, assigned, running, succeeded, failed, cancelled)"));
    }
    out.push_back(matches[0]);
  }
  if (out.empty())
    return absl::InvalidArgumentError("--state: needs at least one state");
  return out;
}

absl::StatusOr<int64_t> ParseJobId(absl::string_view text) {
  int64_t id;
  if (!absl::SimpleAtoi(text, &id) || id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("JOB: bad job id \"", text, "\" (a positive integer)"));
  }
  return id;
}

std::string JobGpus(const v1::JobSpec& spec) {
  const int nodes = spec.resources().nodes();
  std::string gpus = FormatCount(spec.resources().gpus());
  if (nodes <= 1) return gpus;
  return absl::StrCat(gpus, "x", nodes);
}

std::string JobProgress(const v1::Job& job) {
  const v1::Progress& p = job.progress();
  if (p.step() == 0 && p.test_accuracy() == 0) return "";
  std::string s = absl::StrCat("step ", p.step());
  if (p.test_accuracy() > 0) {
    absl::StrAppend(&s, " acc ",
                    absl::StrFormat("%.1f%%", 100 * p.test_accuracy()));
  } else if (p.loss() != 0) {
    absl::StrAppend(&s, " loss ", FormatLoss(p.loss()));
  }
  return s;
}

std::string JobAgeOrRuntime(const v1::Job& job, absl::Time now) {
  const absl::Time created = ToTime(job.created_at());
  const absl::Time started = ToTime(job.started_at());
  const absl::Time finished = ToTime(job.finished_at());
  if (started != absl::InfinitePast()) {
    const absl::Time end = finished != absl::InfinitePast() ? finished : now;
    return HumanDuration(std::max(end - started, absl::ZeroDuration()));
  }
  if (created == absl::InfinitePast()) return "";
  const absl::Time end = finished != absl::InfinitePast() ? finished : now;
  return HumanDuration(std::max(end - created, absl::ZeroDuration()));
}

std::string SumDecimals(const std::vector<std::string>& amounts) {
  // Nanounits in 128 bits: exact for any amount the scheduler sends.
  constexpr int kPlaces = 9;
  __int128 total = 0;
  bool any = false;
  for (const std::string& amount : amounts) {
    absl::string_view text = amount;
    const bool negative = absl::ConsumePrefix(&text, "-");
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(text, absl::MaxSplits('.', 1));
    if (parts.first.empty() || parts.first.size() > 18 ||
        parts.second.size() > kPlaces)
      continue;
    uint64_t whole = 0, fraction = 0;
    std::string digits(parts.second);
    digits.resize(kPlaces, '0');
    if (!absl::SimpleAtoi(parts.first, &whole) ||
        !absl::SimpleAtoi(digits, &fraction) ||
        !absl::c_all_of(parts.first, absl::ascii_isdigit) ||
        !absl::c_all_of(parts.second, absl::ascii_isdigit))
      continue;
    __int128 value = static_cast<__int128>(whole) * 1000000000 + fraction;
    total += negative ? -value : value;
    any = true;
  }
  if (!any) return "";
  const bool negative = total < 0;
  if (negative) total = -total;
  const uint64_t whole = static_cast<uint64_t>(total / 1000000000);
  const uint64_t fraction = static_cast<uint64_t>(total % 1000000000);
  return absl::StrFormat("%s%d.%09d", negative ? "-" : "", whole, fraction);
}

namespace {

// One row for the listed tasks of one array (RenderJobsTable).
std::vector<std::string> ArrayRow(const std::vector<const v1::Job*>& tasks,
                                  absl::Time now) {
  // Named after its lowest index (lists come newest first).
  const v1::Job& first =
      **absl::c_min_element(tasks, [](const v1::Job* a, const v1::Job* b) {
        return a->spec().array().index() < b->spec().array().index();
      });
  const v1::ArrayTask& array = first.spec().array();
  std::map<v1::JobState, int> counts;
  std::vector<std::string> costs;
  int done = 0;
  for (const v1::Job* task : tasks) {
    ++counts[task->state()];
    if (!task->cost().empty()) costs.push_back(task->cost());
    done += IsTerminal(task->state());
  }
  std::vector<std::string> parts;
  for (const auto& [state, n] : counts)
    parts.push_back(
        absl::StrCat(n, " ", absl::AsciiStrToLower(JobStateName(state))));
  std::string message = absl::StrJoin(parts, ", ");
  if (static_cast<int>(tasks.size()) < array.size())
    absl::StrAppend(&message, " (", tasks.size(), " of ", array.size(),
                    " listed)");
  return {absl::StrCat(array.array_id()),
          absl::StrCat(OrDash(first.spec().name()), "[", array.indexes(), "]"),
          OrDash(first.spec().user()),
          OrDash(first.spec().team()),
          "ARRAY",
          "-",
          JobGpus(first.spec()),
          JobAgeOrRuntime(first, now),
          FormatMoney(SumDecimals(costs), first.currency()),
          absl::StrCat(done, "/", array.size(), " done"),
          message};
}

}  // namespace

std::string RenderJobsTable(const std::vector<v1::Job>& jobs, absl::Time now,
                            bool fold_arrays) {
  Table table({"ID", "NAME", "USER", "TEAM", "STATE", "ATTEMPT", "GPUS",
               "AGE/RUNTIME", "COST", "PROGRESS", "MESSAGE"});
  std::map<int64_t, std::vector<const v1::Job*>> arrays;
  if (fold_arrays)
    for (const v1::Job& job : jobs)
      if (job.spec().array().array_id() > 0)
        arrays[job.spec().array().array_id()].push_back(&job);
  for (const v1::Job& job : jobs) {
    if (fold_arrays && job.spec().array().array_id() > 0) {
      auto it = arrays.find(job.spec().array().array_id());
      if (it == arrays.end()) continue;  // its row is out already
      table.AddRow(ArrayRow(it->second, now));
      arrays.erase(it);
      continue;
    }
    table.AddRow({absl::StrCat(job.id()), OrDash(job.spec().name()),
                  OrDash(job.spec().user()), OrDash(job.spec().team()),
                  JobStateName(job.state()), absl::StrCat(job.attempt()),
                  JobGpus(job.spec()), JobAgeOrRuntime(job, now),
                  FormatMoney(job.cost(), job.currency()), JobProgress(job),
                  Truncate(job.message(), kMessageWidth)});
  }
  return table.Render();
}

std::string RenderJobDetails(const v1::Job& job, absl::Time now) {
  const v1::JobSpec& spec = job.spec();
  std::vector<std::pair<std::string, std::string>> kv;
  kv.emplace_back("id", absl::StrCat(job.id()));
  kv.emplace_back("name", OrDash(spec.name()));
  kv.emplace_back("user", OrDash(spec.user()));
  kv.emplace_back("team", OrDash(spec.team()));
  kv.emplace_back("state", JobStateName(job.state()));
  if (!job.pending_reason().empty())
    kv.emplace_back("pending_reason", job.pending_reason());
  kv.emplace_back("attempt", absl::StrCat(job.attempt(), " (retries ",
                                          spec.retries(), ")"));
  kv.emplace_back("priority", absl::StrCat(spec.priority()));
  if (spec.array().array_id() > 0)
    kv.emplace_back("array", absl::StrCat(spec.array().array_id(), " index ",
                                          spec.array().index(), " of [",
                                          spec.array().indexes(), "] (",
                                          spec.array().size(), " tasks)"));
  kv.emplace_back("resources", ResourcesLine(spec.resources()));
  kv.emplace_back("launch", LaunchName(spec.launch()));
  if (spec.has_train()) {
    kv.emplace_back("train", TrainLine(spec.train()));
  } else {
    kv.emplace_back("command", absl::StrJoin(spec.command(), " "));
  }
  for (const auto& [k, v] : spec.env())
    kv.emplace_back("env", absl::StrCat(k, "=", v));
  if (spec.has_max_runtime())
    kv.emplace_back("max_runtime",
                    HumanDuration(absl::Seconds(spec.max_runtime().seconds())));
  if (!spec.max_cost().empty()) kv.emplace_back("max_cost", spec.max_cost());
  for (const auto& [key, ts] :
       {std::make_pair("created", &job.created_at()),
        std::make_pair("started", &job.started_at()),
        std::make_pair("finished", &job.finished_at())}) {
    const absl::Time t = ToTime(*ts);
    if (t == absl::InfinitePast()) continue;
    kv.emplace_back(key,
                    absl::StrCat(FormatUtc(t), " (", HumanAgo(t, now), ")"));
  }
  if (job.has_started_at())
    kv.emplace_back("runtime", JobAgeOrRuntime(job, now));
  if (IsTerminal(job.state()))
    kv.emplace_back("exit_code", absl::StrCat(job.exit_code()));
  if (!job.message().empty()) kv.emplace_back("message", job.message());
  if (job.gpu_seconds() > 0 || !job.cost().empty()) {
    kv.emplace_back("gpu_hours",
                    absl::StrCat(FormatGpuHours(job.gpu_seconds()), " (",
                                 absl::StrFormat("%.0f", job.gpu_seconds()),
                                 " GPU-seconds)"));
  }
  if (!job.cost().empty()) kv.emplace_back("cost", CostLine(job));
  if (job.has_progress() &&
      (job.progress().step() > 0 || job.progress().test_accuracy() > 0))
    kv.emplace_back("progress", ProgressLine(job.progress(), now));
  if (!job.idempotency_key().empty())
    kv.emplace_back("idempotency_key", job.idempotency_key());

  size_t width = 0;
  for (const auto& [k, v] : kv) width = std::max(width, k.size());
  std::string out;
  // Values carry other users' text (message, command, env): one line each.
  for (const auto& [k, v] : kv)
    absl::StrAppend(&out, k, ":", std::string(width - k.size() + 2, ' '),
                    EscapeControl(v), "\n");
  if (job.placements_size() > 0) {
    absl::StrAppend(&out, "placements:\n");
    Table table({"  NODE", "WORKER", "DEVICES"});
    for (const v1::Placement& p : job.placements()) {
      table.AddRow({absl::StrCat("  ", p.node_rank()), p.worker_id(),
                    OrDash(absl::StrJoin(p.device_indexes(), ","))});
    }
    absl::StrAppend(&out, table.Render());
  }
  return out;
}

}  // namespace tupa::client

#include "client/spec_overrides.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/job_spec.h"
#include "common/quantity.h"
#include "common/status_macros.h"

namespace tupa::client {
namespace {

// Spec field paths and the flags that set them, to name both in errors.
constexpr std::pair<absl::string_view, absl::string_view> kFieldFlags[] = {
    {"name", "name"},
    {"team", "team"},
    {"priority", "priority"},
    {"retries", "retries"},
    {"resources.gpus", "gpus"},
    {"resources.nodes", "nodes"},
    {"resources.gpu_type", "gpu-type"},
    {"resources.cpu", "cpu"},
    {"resources.memory", "memory"},
    {"max_runtime", "max-runtime"},
    {"max_cost", "max-cost"},
    {"start_window", "start-window"},
    {"deadline", "deadline"},
    {"launch", "launch"},
    {"train.parallel.tensor", "tensor-parallel"},
};

absl::Status FlagError(absl::string_view flag, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", what));
}

absl::StatusOr<int32_t> IntFlag(const ParsedArgs& args,
                                absl::string_view flag) {
  const std::string text = args.Value(flag);
  int32_t v;
  if (!absl::SimpleAtoi(text, &v))
    return FlagError(flag, absl::StrCat("bad integer \"", text, "\""));
  return v;
}

absl::StatusOr<double> NumberFlag(const ParsedArgs& args,
                                  absl::string_view flag) {
  const std::string text = args.Value(flag);
  double v;
  if (!absl::SimpleAtod(text, &v) || !std::isfinite(v))
    return FlagError(flag, absl::StrCat("bad number \"", text, "\""));
  return v;
}

absl::StatusOr<std::string> ReadSpecFile(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  // A directory opens, then reads as nothing: "spec: is empty".
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("-f: \"", path, "\" is a directory, not a spec file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("-f: cannot read \"", path, "\": ", std::strerror(errno)));
  }
  text << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("-f: cannot read \"", path, "\""));
  }
  return text.str();
}

absl::Status ApplyResourceFlags(const ParsedArgs& args, v1::Resources& r) {
  if (args.Has("gpus")) {
    ASSIGN_OR_RETURN(double v, NumberFlag(args, "gpus"));
    r.set_gpus(v);
  }
  if (args.Has("nodes")) {
    ASSIGN_OR_RETURN(int32_t v, IntFlag(args, "nodes"));
    // Checked here: ApplyJobSpecDefaults would turn 0 into 1.
    if (v < 1 || v > kMaxNodes)
      return FlagError("nodes",
                       absl::StrCat("must be between 1 and ", kMaxNodes));
    r.set_nodes(v);
  }
  if (args.Has("gpu-type")) {
    r.clear_gpu_type();
    for (const std::string& value : args.Values("gpu-type")) {
      for (absl::string_view t : absl::StrSplit(value, ',')) {
        if (t.empty()) return FlagError("gpu-type", "empty type name");
        r.add_gpu_type(std::string(t));
      }
    }
  }
  if (args.Has("cpu")) {
    ASSIGN_OR_RETURN(double v, NumberFlag(args, "cpu"));
    r.set_cpu(v);
  }
  if (args.Has("memory")) {
    ASSIGN_OR_RETURN(int64_t v, ParseMemory(args.Value("memory"), "--memory"));
    r.set_memory_bytes(v);
  }
  return absl::OkStatus();
}

absl::Status ApplyEnvFlags(const ParsedArgs& args, v1::JobSpec& spec) {
  for (const std::string& kv : args.Values("env")) {
    // Checked here, as "env" errors from validation name the flag only for
    // a key it set (NameFlag), and a key that is not UTF-8 is not named.
    RETURN_IF_ERROR(ValidateText(kv, "--env"));
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return FlagError("env", absl::StrCat("expected K=V, got \"", kv, "\""));
    (*spec.mutable_env())[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return absl::OkStatus();
}

// Rewrites "resources.gpus: ..." as "--gpus (resources.gpus): ..." when the
// user set that field with a flag. --env merges into the file's variables,
// so "env.K: ..." names it only when --env set K.
absl::Status NameFlag(const ParsedArgs& args, const absl::Status& status) {
  const absl::string_view message = status.message();
  for (const std::string& kv : args.Values("env")) {
    const std::string field = absl::StrCat("env.", kv.substr(0, kv.find('=')));
    if (absl::StartsWith(message, absl::StrCat(field, ":"))) {
      return absl::InvalidArgumentError(
          absl::StrCat("--env (", field, ")", message.substr(field.size())));
    }
  }
  for (const auto& [field, flag] : kFieldFlags) {
    if (args.Has(flag) && absl::StartsWith(message, field) &&
        message.size() > field.size() &&
        (message[field.size()] == ':' || message[field.size()] == '[' ||
         message[field.size()] == '.')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, " (", field, ")", message.substr(field.size())));
    }
  }
  if (absl::StartsWith(message, "command") && args.has_separator()) {
    return absl::InvalidArgumentError(absl::StrCat("-- CMD: ", message));
  }
  return status;
}

}  // namespace

void AddSpecFlags(FlagSet& flags) {
  flags.AddValue("file", "FILE", "job spec YAML (DESIGN §4); - is stdin", "f")
      .AddValue("name", "NAME", "job name")
      .AddValue("team", "TEAM", "team to charge")
      .AddValue("priority", "N", "0..100, higher runs first")
      .AddValue("gpus", "N", "GPUs per node (a share below 1 allowed)")
      .AddValue("nodes", "N", "nodes; more than 1 is a gang")
      .AddRepeated("gpu-type", "T", "acceptable GPU types (or a comma list)")
      .AddValue("cpu", "N", "CPU cores per node")
      .AddValue("memory", "SIZE", "memory per node, e.g. 16Gi")
      .AddValue("max-runtime", "D", "kill after this long, e.g. 2h")
      .AddValue("max-cost", "MONEY", "refuse if the estimate exceeds it")
      .AddValue("start-window", "W",
                "any (default) or off-peak: wait for a cheaper price window")
      .AddValue("deadline", "T",
                "finish by T (RFC 3339, or a duration from now such as 8h)")
      .AddValue("retries", "N", "requeues after worker loss")
      .AddRepeated("env", "K=V", "environment variable for every rank")
      .AddValue("launch", "MODE", "per-gpu (default) or per-node")
      .AddValue("tensor-parallel", "T",
                "train: split layer pairs over T ranks of a node "
                "(train.parallel.tensor)");
}

absl::Status ApplySpecFlags(const ParsedArgs& args, v1::JobSpec& spec) {
  if (args.Has("name")) spec.set_name(args.Value("name"));
  if (args.Has("team")) spec.set_team(args.Value("team"));
  if (args.Has("priority")) {
    ASSIGN_OR_RETURN(int32_t v, IntFlag(args, "priority"));
    spec.set_priority(v);
  }
  if (args.Has("retries")) {
    ASSIGN_OR_RETURN(int32_t v, IntFlag(args, "retries"));
    spec.set_retries(v);
  }
  RETURN_IF_ERROR(ApplyResourceFlags(args, *spec.mutable_resources()));
  if (args.Has("max-runtime")) {
    ASSIGN_OR_RETURN(absl::Duration d,
                     ParseDuration(args.Value("max-runtime"), "--max-runtime"));
    if (d < absl::Seconds(1))
      return FlagError("max-runtime", "must be at least 1s");
    spec.mutable_max_runtime()->set_seconds(absl::ToInt64Seconds(d));
    spec.mutable_max_runtime()->set_nanos(0);
  }
  if (args.Has("max-cost")) {
    ASSIGN_OR_RETURN(std::string money,
                     ParseMoney(args.Value("max-cost"), "--max-cost"));
    spec.set_max_cost(money);
  }
  if (args.Has("start-window"))
    spec.set_start_window(args.Value("start-window"));
  if (args.Has("deadline")) {
    const std::string text = args.Value("deadline");
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) {
      auto in = ParseDuration(text, "--deadline");
      if (!in.ok())
        return FlagError(
            "deadline",
            "expected an RFC 3339 time or a duration from now (8h)");
      t = absl::Now() + *in;
    }
    spec.mutable_deadline()->set_seconds(absl::ToUnixSeconds(t));
  }
  RETURN_IF_ERROR(ApplyEnvFlags(args, spec));
  if (args.Has("launch")) {
    const std::string mode = args.Value("launch");
    if (mode == "per-gpu") {
      spec.set_launch(v1::LAUNCH_MODE_PER_GPU);
    } else if (mode == "per-node") {
      spec.set_launch(v1::LAUNCH_MODE_PER_NODE);
    } else {
      return FlagError("launch", absl::StrCat("bad value \"", mode,
                                              "\" (per-gpu or per-node)"));
    }
  }
  if (args.has_separator()) {
    if (args.after_separator().empty())
      return absl::InvalidArgumentError(
          "command: nothing after -- (give the command to run)");
    spec.clear_command();
    for (const std::string& word : args.after_separator())
      spec.add_command(word);
    spec.clear_train();
  }
  if (args.Has("tensor-parallel")) {
    ASSIGN_OR_RETURN(int32_t v, IntFlag(args, "tensor-parallel"));
    if (!spec.has_train())
      return FlagError("tensor-parallel",
                       "is for jobs with a train: section (the built-in "
                       "trainer)");
    spec.mutable_train()->mutable_parallel()->set_tensor(v);
  }
  return absl::OkStatus();
}

namespace {

// The spec from the file's `text` (empty: no file) and the flags, for the
// array task `index` when set: `{{index}}` replaced in the text before it
// is parsed, and in the name, command and env values the flags gave.
absl::StatusOr<v1::JobSpec> SpecFrom(const ParsedArgs& args,
                                     const std::string& text,
                                     std::optional<int32_t> index) {
  v1::JobSpec spec;
  if (args.Has("file")) {
    absl::StatusOr<v1::JobSpec> parsed =
        ParseJobSpecYaml(index ? SubstituteArrayIndex(text, *index) : text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          parsed.status().message(), " (in ", args.Value("file"), ")"));
    }
    spec = *std::move(parsed);
  }
  RETURN_IF_ERROR(ApplySpecFlags(args, spec));
  if (index) spec = SubstituteArrayIndex(spec, *index);
  ApplyJobSpecDefaults(spec);
  if (absl::Status s = ValidateJobSpec(spec); !s.ok()) return NameFlag(args, s);
  return spec;
}

absl::StatusOr<std::string> SpecFileText(const ParsedArgs& args) {
  if (!args.Has("file")) return std::string();
  return ReadSpecFile(args.Value("file"));
}

}  // namespace

absl::StatusOr<v1::JobSpec> BuildJobSpec(const ParsedArgs& args) {
  ASSIGN_OR_RETURN(std::string text, SpecFileText(args));
  return SpecFrom(args, text, std::nullopt);
}

absl::StatusOr<std::vector<v1::JobSpec>> BuildArrayTasks(
    const ParsedArgs& args, const ArrayIndexes& array) {
  ASSIGN_OR_RETURN(std::string text, SpecFileText(args));
  std::vector<v1::JobSpec> tasks;
  tasks.reserve(array.indexes.size());
  for (int32_t index : array.indexes) {
    absl::StatusOr<v1::JobSpec> task = SpecFrom(args, text, index);
    if (!task.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("array task ", index, ": ", task.status().message()));
    tasks.push_back(*std::move(task));
  }
  return tasks;
}

}  // namespace tupa::client

#include "common/job_spec.h"

#include <google/protobuf/stubs/common.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quantity.h"
#include "common/status_macros.h"
#include "common/train_parallel_spec.h"

namespace tupa {
namespace {

using Path = std::string;

absl::Status FieldError(const Path& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

Path Join(const Path& parent, absl::string_view key) {
  return parent.empty() ? std::string(key) : absl::StrCat(parent, ".", key);
}

absl::Status ExpectMap(const YAML::Node& node, const Path& path) {
  if (!node.IsMap()) return FieldError(path, "must be a mapping");
  return absl::OkStatus();
}

// Checks that every key of `node` is one of `known`.
absl::Status CheckKeys(const YAML::Node& node, const Path& path,
                       const std::set<std::string>& known) {
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar())
      return FieldError(path.empty() ? "spec" : path, "keys must be strings");
    std::string key = kv.first.as<std::string>();
    if (!seen.insert(key).second)
      return FieldError(Join(path, key), "given twice");
    if (!known.count(key)) {
      return FieldError(Join(path, key),
                        absl::StrCat("unknown field (known: ",
                                     absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Scalar(const YAML::Node& node, const Path& path) {
  if (!node.IsScalar()) return FieldError(path, "must be a scalar value");
  return node.Scalar();
}

absl::StatusOr<int64_t> Int(const YAML::Node& node, const Path& path) {
  ASSIGN_OR_RETURN(std::string s, Scalar(node, path));
  int64_t v;
  if (!absl::SimpleAtoi(s, &v))
    return FieldError(path, absl::StrCat("bad integer \"", s, "\""));
  return v;
}

absl::StatusOr<int32_t> Int32(const YAML::Node& node, const Path& path) {
  ASSIGN_OR_RETURN(int64_t v, Int(node, path));
  if (v < INT32_MIN || v > INT32_MAX) return FieldError(path, "out of range");
  return static_cast<int32_t>(v);
}

absl::StatusOr<double> Number(const YAML::Node& node, const Path& path) {
  ASSIGN_OR_RETURN(std::string s, Scalar(node, path));
  double v;
  if (!absl::SimpleAtod(s, &v) || !std::isfinite(v))
    return FieldError(path, absl::StrCat("bad number \"", s, "\""));
  return v;
}

absl::StatusOr<std::vector<std::string>> StringList(const YAML::Node& node,
                                                    const Path& path) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    out.push_back(node.Scalar());
    return out;
  }
  if (!node.IsSequence()) return FieldError(path, "must be a list");
  for (size_t i = 0; i < node.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s,
                     Scalar(node[i], absl::StrCat(path, "[", i, "]")));
    out.push_back(std::move(s));
  }
  return out;
}

absl::Status ParseStringMap(
    const YAML::Node& node, const Path& path,
    google::protobuf::Map<std::string, std::string>* out) {
  RETURN_IF_ERROR(ExpectMap(node, path));
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return FieldError(path, "keys must be strings");
    std::string key = kv.first.Scalar();
    if (out->count(key)) return FieldError(Join(path, key), "given twice");
    ASSIGN_OR_RETURN(std::string value, Scalar(kv.second, Join(path, key)));
    (*out)[key] = value;
  }
  return absl::OkStatus();
}

absl::Status ParseResources(const YAML::Node& n, const Path& p,
                            v1::Resources* r) {
  RETURN_IF_ERROR(ExpectMap(n, p));
  RETURN_IF_ERROR(CheckKeys(
      n, p, {"gpus", "nodes", "gpu_type", "cpu", "memory", "labels"}));
  if (n["gpus"]) {
    ASSIGN_OR_RETURN(double v, Number(n["gpus"], Join(p, "gpus")));
    r->set_gpus(v);
  }
  if (n["nodes"]) {
    ASSIGN_OR_RETURN(int32_t v, Int32(n["nodes"], Join(p, "nodes")));
    if (v < 1 || v > kMaxNodes)
      return FieldError(Join(p, "nodes"),
                        absl::StrCat("must be between 1 and ", kMaxNodes));
    r->set_nodes(v);
  }
  if (n["gpu_type"]) {
    ASSIGN_OR_RETURN(auto types,
                     StringList(n["gpu_type"], Join(p, "gpu_type")));
    for (auto& t : types) r->add_gpu_type(t);
  }
  if (n["cpu"]) {
    ASSIGN_OR_RETURN(double v, Number(n["cpu"], Join(p, "cpu")));
    r->set_cpu(v);
  }
  if (n["memory"]) {
    ASSIGN_OR_RETURN(std::string s, Scalar(n["memory"], Join(p, "memory")));
    ASSIGN_OR_RETURN(int64_t v, ParseMemory(s, Join(p, "memory")));
    r->set_memory_bytes(v);
  }
  if (n["labels"])
    RETURN_IF_ERROR(
        ParseStringMap(n["labels"], Join(p, "labels"), r->mutable_labels()));
  return absl::OkStatus();
}

absl::Status ParseOptimizer(const YAML::Node& n, const Path& p,
                            v1::OptimizerSpec* o) {
  RETURN_IF_ERROR(ExpectMap(n, p));
  RETURN_IF_ERROR(
      CheckKeys(n, p,
                {"name", "lr", "weight_decay", "momentum", "beta1", "beta2",
                 "eps", "warmup_steps", "schedule", "grad_clip"}));
  if (n["name"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(n["name"], Join(p, "name")));
    o->set_name(v);
  }
  if (n["schedule"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(n["schedule"], Join(p, "schedule")));
    o->set_schedule(v);
  }
  if (n["warmup_steps"]) {
    ASSIGN_OR_RETURN(auto v, Int32(n["warmup_steps"], Join(p, "warmup_steps")));
    o->set_warmup_steps(v);
  }
  struct {
    const char* key;
    void (v1::OptimizerSpec::*set)(double);
  } doubles[] = {{"lr", &v1::OptimizerSpec::set_lr},
                 {"weight_decay", &v1::OptimizerSpec::set_weight_decay},
                 {"momentum", &v1::OptimizerSpec::set_momentum},
                 {"beta1", &v1::OptimizerSpec::set_beta1},
                 {"beta2", &v1::OptimizerSpec::set_beta2},
                 {"eps", &v1::OptimizerSpec::set_eps},
                 {"grad_clip", &v1::OptimizerSpec::set_grad_clip}};
  for (const auto& d : doubles) {
    if (!n[d.key]) continue;
    ASSIGN_OR_RETURN(double v, Number(n[d.key], Join(p, d.key)));
    (o->*d.set)(v);
  }
  return absl::OkStatus();
}

absl::Status ParseTrain(const YAML::Node& n, const Path& p, v1::TrainSpec* t) {
  RETURN_IF_ERROR(ExpectMap(n, p));
  RETURN_IF_ERROR(CheckKeys(
      n, p,
      {"model", "data", "batch_size", "epochs", "optimizer", "precision",
       "checkpoint_every", "steps", "seed", "log_every", "parallel"}));
  if (n["model"]) {
    Path mp = Join(p, "model");
    RETURN_IF_ERROR(ExpectMap(n["model"], mp));
    RETURN_IF_ERROR(CheckKeys(n["model"], mp, {"type", "layers"}));
    if (n["model"]["type"]) {
      ASSIGN_OR_RETURN(auto v, Scalar(n["model"]["type"], Join(mp, "type")));
      t->mutable_model()->set_type(v);
    }
    if (const auto layers = n["model"]["layers"]) {
      if (!layers.IsSequence())
        return FieldError(Join(mp, "layers"), "must be a list of sizes");
      for (size_t i = 0; i < layers.size(); ++i) {
        ASSIGN_OR_RETURN(
            auto v, Int32(layers[i], absl::StrCat(mp, ".layers[", i, "]")));
        t->mutable_model()->add_layers(v);
      }
    }
  }
  if (n["data"]) {
    Path dp = Join(p, "data");
    const YAML::Node d = n["data"];
    RETURN_IF_ERROR(ExpectMap(d, dp));
    RETURN_IF_ERROR(
        CheckKeys(d, dp, {"format", "path", "samples", "test_samples"}));
    if (d["format"]) {
      ASSIGN_OR_RETURN(auto v, Scalar(d["format"], Join(dp, "format")));
      t->mutable_data()->set_format(v);
    }
    if (d["path"]) {
      ASSIGN_OR_RETURN(auto v, Scalar(d["path"], Join(dp, "path")));
      t->mutable_data()->set_path(v);
    }
    if (d["samples"]) {
      ASSIGN_OR_RETURN(auto v, Int32(d["samples"], Join(dp, "samples")));
      t->mutable_data()->set_samples(v);
    }
    if (d["test_samples"]) {
      ASSIGN_OR_RETURN(auto v,
                       Int32(d["test_samples"], Join(dp, "test_samples")));
      t->mutable_data()->set_test_samples(v);
    }
  }
  if (n["parallel"])
    RETURN_IF_ERROR(ParseTrainParallel(n["parallel"], Join(p, "parallel"),
                                       t->mutable_parallel()));
  if (n["optimizer"])
    RETURN_IF_ERROR(ParseOptimizer(n["optimizer"], Join(p, "optimizer"),
                                   t->mutable_optimizer()));
  if (n["precision"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(n["precision"], Join(p, "precision")));
    t->set_precision(v);
  }
  struct {
    const char* key;
    void (v1::TrainSpec::*set)(int32_t);
  } ints[] = {{"batch_size", &v1::TrainSpec::set_batch_size},
              {"epochs", &v1::TrainSpec::set_epochs},
              {"checkpoint_every", &v1::TrainSpec::set_checkpoint_every},
              {"steps", &v1::TrainSpec::set_steps},
              {"log_every", &v1::TrainSpec::set_log_every}};
  for (const auto& f : ints) {
    if (!n[f.key]) continue;
    ASSIGN_OR_RETURN(int32_t v, Int32(n[f.key], Join(p, f.key)));
    (t->*f.set)(v);
  }
  if (n["seed"]) {
    ASSIGN_OR_RETURN(int64_t v, Int(n["seed"], Join(p, "seed")));
    if (v < 0 || v > UINT32_MAX)
      return FieldError(Join(p, "seed"), "out of range");
    t->set_seed(static_cast<uint32_t>(v));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::LaunchMode> ParseLaunch(const std::string& s,
                                           const Path& path) {
  if (s == "per-gpu" || s == "LAUNCH_MODE_PER_GPU")
    return v1::LAUNCH_MODE_PER_GPU;
  if (s == "per-node" || s == "LAUNCH_MODE_PER_NODE")
    return v1::LAUNCH_MODE_PER_NODE;
  return FieldError(path, absl::StrCat("bad value \"", s,
                                       "\" (expected per-gpu or per-node)"));
}

absl::StatusOr<v1::JobSpec> ParseRoot(const YAML::Node& root) {
  v1::JobSpec spec;
  if (!root.IsMap()) return FieldError("spec", "must be a YAML mapping");
  RETURN_IF_ERROR(
      CheckKeys(root, "",
                {"name", "team", "priority", "resources", "max_runtime",
                 "max_cost", "retries", "train", "command", "env", "launch",
                 "user", "start_window", "deadline"}));
  if (root["name"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(root["name"], "name"));
    spec.set_name(v);
  }
  if (root["team"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(root["team"], "team"));
    spec.set_team(v);
  }
  if (root["user"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(root["user"], "user"));
    spec.set_user(v);
  }
  if (root["priority"]) {
    ASSIGN_OR_RETURN(auto v, Int32(root["priority"], "priority"));
    spec.set_priority(v);
  }
  if (root["retries"]) {
    ASSIGN_OR_RETURN(auto v, Int32(root["retries"], "retries"));
    spec.set_retries(v);
  }
  if (root["resources"])
    RETURN_IF_ERROR(ParseResources(root["resources"], "resources",
                                   spec.mutable_resources()));
  if (root["max_runtime"]) {
    ASSIGN_OR_RETURN(auto s, Scalar(root["max_runtime"], "max_runtime"));
    ASSIGN_OR_RETURN(absl::Duration d, ParseDuration(s, "max_runtime"));
    spec.mutable_max_runtime()->set_seconds(absl::ToInt64Seconds(d));
  }
  if (root["max_cost"]) {
    ASSIGN_OR_RETURN(auto s, Scalar(root["max_cost"], "max_cost"));
    ASSIGN_OR_RETURN(auto money, ParseMoney(s, "max_cost"));
    spec.set_max_cost(money);
  }
  if (root["train"])
    RETURN_IF_ERROR(ParseTrain(root["train"], "train", spec.mutable_train()));
  if (root["command"]) {
    if (root["command"].IsScalar())
      return FieldError("command",
                        "must be a list (argv), e.g. [python, train.py]");
    ASSIGN_OR_RETURN(auto argv, StringList(root["command"], "command"));
    if (argv.empty()) return FieldError("command", "must not be empty");
    for (auto& a : argv) spec.add_command(a);
  }
  if (root["env"])
    RETURN_IF_ERROR(ParseStringMap(root["env"], "env", spec.mutable_env()));
  if (root["start_window"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(root["start_window"], "start_window"));
    spec.set_start_window(v);
  }
  if (root["deadline"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(root["deadline"], "deadline"));
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, v, &t, &err))
      return FieldError("deadline", absl::StrCat("bad time \"", v,
                                                 "\" (expected RFC 3339, e.g. "
                                                 "2026-12-03T06:00:00-03:00)"));
    spec.mutable_deadline()->set_seconds(absl::ToUnixSeconds(t));
  }
  if (root["launch"]) {
    ASSIGN_OR_RETURN(auto s, Scalar(root["launch"], "launch"));
    ASSIGN_OR_RETURN(auto mode, ParseLaunch(s, "launch"));
    spec.set_launch(mode);
  }
  return spec;
}

// 1970-01-01 and 9999-12-31T23:59:59Z: what timestamps and JSON carry.
constexpr int64_t kMinDeadlineS = 0;
constexpr int64_t kMaxDeadlineS = 253402300799;

// Per-spec bounds on free text: every job's spec travels in each listing.
constexpr size_t kMaxCommandBytes = 32 << 10;
constexpr size_t kMaxEnvBytes = 32 << 10;
constexpr size_t kMaxSpecBytes = 96 << 10;

absl::Status CheckSpecText(const v1::JobSpec& spec) {
  RETURN_IF_ERROR(ValidateText(spec.name(), "name"));
  RETURN_IF_ERROR(ValidateText(spec.team(), "team"));
  RETURN_IF_ERROR(ValidateText(spec.user(), "user"));
  size_t command_bytes = 0;
  for (int i = 0; i < spec.command_size(); ++i) {
    RETURN_IF_ERROR(
        ValidateText(spec.command(i), absl::StrCat("command[", i, "]")));
    command_bytes += spec.command(i).size() + 1;
  }
  if (command_bytes > kMaxCommandBytes)
    return FieldError("command",
                      "longer than 32 KiB in all; keep scripts in files");
  size_t env_bytes = 0;
  for (const auto& [k, v] : spec.env()) {
    RETURN_IF_ERROR(ValidateText(k, "env"));
    RETURN_IF_ERROR(ValidateText(v, absl::StrCat("env.", k)));
    env_bytes += k.size() + v.size() + 2;
  }
  if (env_bytes > kMaxEnvBytes)
    return FieldError("env", "longer than 32 KiB in all");
  for (const auto& [k, v] : spec.resources().labels()) {
    RETURN_IF_ERROR(ValidateText(k, "resources.labels"));
    RETURN_IF_ERROR(ValidateText(v, absl::StrCat("resources.labels.", k)));
  }
  for (const auto& t : spec.resources().gpu_type())
    RETURN_IF_ERROR(ValidateText(t, "resources.gpu_type"));
  if (spec.ByteSizeLong() > kMaxSpecBytes)
    return FieldError("spec", "larger than 96 KiB");
  return absl::OkStatus();
}

// Tells whether each document of a YAML stream holds anything, without
// building it. Not YAML::LoadAll: yaml-cpp 0.7's loops forever on some
// malformed input, returning an empty root each turn (fixed upstream in
// yaml-cpp PR 1319); found by fuzz_job_spec.
class DocumentProbe : public YAML::EventHandler {
 public:
  bool empty() const { return events_ == 0 || (events_ == 1 && null_root_); }

  void OnDocumentStart(const YAML::Mark&) override {
    events_ = 0;
    null_root_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {
    null_root_ = events_++ == 0;
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { ++events_; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    ++events_;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    ++events_;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    ++events_;
  }
  void OnMapEnd() override {}

 private:
  int events_ = 0;
  bool null_root_ = false;
};

// Documents that hold something, counting up to 2 (all a spec needs to
// know). Stops at the first empty one after them, as upstream's fix does:
// a stray trailing "---" carries nothing.
int CountDocuments(const std::string& yaml) {
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  DocumentProbe probe;
  int documents = 0;
  while (documents < 2 && parser.HandleNextDocument(probe)) {
    if (probe.empty()) break;
    ++documents;
  }
  return documents;
}

}  // namespace

absl::StatusOr<v1::JobSpec> ParseJobSpecYaml(absl::string_view yaml) {
  const std::string text(yaml);
  YAML::Node root;
  try {
    // A second job in the same file would otherwise be dropped without a
    // word.
    if (CountDocuments(text) > 1)
      return FieldError("spec",
                        "holds more than one YAML document (separated by "
                        "---); give one job per spec");
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: bad YAML at line ", e.mark.line + 1, ": ", e.msg));
  }
  if (!root || root.IsNull()) return FieldError("spec", "is empty");
  try {
    return ParseRoot(root);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: bad YAML at line ", e.mark.line + 1, ": ", e.msg));
  }
}

void ApplyJobSpecDefaults(v1::JobSpec& spec) {
  auto* r = spec.mutable_resources();
  if (r->nodes() == 0) r->set_nodes(1);
  if (spec.launch() == v1::LAUNCH_MODE_UNSPECIFIED)
    spec.set_launch(v1::LAUNCH_MODE_PER_GPU);
  // A job that asks for neither GPUs nor CPU still uses a core per rank:
  // without it, any number of them fit one worker (DESIGN §5).
  if (r->gpus() == 0 && r->cpu() == 0) r->set_cpu(RanksPerNode(spec));
  if (spec.has_train()) {
    auto* t = spec.mutable_train();
    if (t->model().type().empty()) t->mutable_model()->set_type("mlp");
    if (t->batch_size() == 0) t->set_batch_size(128);
    if (t->epochs() == 0 && t->steps() == 0) t->set_epochs(1);
    if (t->precision().empty()) t->set_precision("fp32");
    auto* o = t->mutable_optimizer();
    if (o->name().empty()) o->set_name("adamw");
    if (o->lr() == 0) o->set_lr(1e-3);
  }
}

absl::Status ValidateJobName(absl::string_view name, absl::string_view field) {
  static const std::regex kName("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
  if (!std::regex_match(name.begin(), name.end(), kName))
    return FieldError(std::string(field),
                      "must be 1-63 letters, digits, '.', '_' or '-', "
                      "starting with a letter or digit");
  return absl::OkStatus();
}

absl::Status ValidateJobSpec(const v1::JobSpec& spec) {
  RETURN_IF_ERROR(CheckSpecText(spec));
  if (!v1::LaunchMode_IsValid(spec.launch()))
    return FieldError("launch", "must be per-gpu or per-node");
  if (spec.has_deadline() &&
      (spec.deadline().seconds() < kMinDeadlineS ||
       spec.deadline().seconds() > kMaxDeadlineS ||
       spec.deadline().nanos() < 0 || spec.deadline().nanos() > 999999999))
    return FieldError("deadline", "must be a time in years 1970-9999");
  if (!spec.name().empty())
    RETURN_IF_ERROR(ValidateJobName(spec.name(), "name"));
  if (!spec.team().empty())
    RETURN_IF_ERROR(ValidateJobName(spec.team(), "team"));
  if (spec.priority() < 0 || spec.priority() > 100)
    return FieldError("priority", "must be between 0 and 100");
  if (spec.retries() < 0 || spec.retries() > 100)
    return FieldError("retries", "must be between 0 and 100");
  const auto& r = spec.resources();
  if (!(r.gpus() >= 0 && r.gpus() <= kMaxGpusPerNode))
    return FieldError("resources.gpus",
                      absl::StrCat("must be between 0 and ", kMaxGpusPerNode));
  if (r.gpus() > 1 && r.gpus() != std::floor(r.gpus()))
    return FieldError("resources.gpus",
                      "must be a whole number, or a share below 1");
  if (r.nodes() < 1 || r.nodes() > kMaxNodes)
    return FieldError("resources.nodes",
                      absl::StrCat("must be between 1 and ", kMaxNodes));
  if (r.gpus() > 0 && r.gpus() < 1 && r.nodes() > 1)
    return FieldError("resources.gpus", "a GPU share needs nodes: 1");
  // Shares are placed, shown and billed in thousandths of a device: 0.0004
  // would run (and be billed) as 0.001, 0.2505 as 0.251.
  if (const double milli = r.gpus() * 1000;
      r.gpus() > 0 && r.gpus() < 1 &&
      (milli < 1 - 1e-9 || std::fabs(milli - std::round(milli)) > 1e-6))
    return FieldError("resources.gpus",
                      "a share is given in thousandths of a GPU (0.001 to "
                      "0.999)");
  if (!(r.cpu() >= 0 && r.cpu() <= 100000))  // also refuses NaN
    return FieldError("resources.cpu", "must be between 0 and 100000");
  if (r.memory_bytes() < 0)
    return FieldError("resources.memory", "must be >= 0");
  for (const auto& t : r.gpu_type())
    if (t.empty()) return FieldError("resources.gpu_type", "empty type name");
  if (spec.has_max_runtime() && spec.max_runtime().seconds() <= 0)
    return FieldError("max_runtime", "must be positive");
  if (spec.has_max_runtime() && spec.max_runtime().seconds() > kMaxRuntimeS)
    return FieldError("max_runtime", "must be at most 365 days");
  if (!spec.max_cost().empty()) {
    auto money = ParseMoney(spec.max_cost(), "max_cost");
    if (!money.ok()) return money.status();
  }
  if (!spec.start_window().empty() && spec.start_window() != "any" &&
      spec.start_window() != "off-peak")
    return FieldError("start_window", "must be any or off-peak");
  if (spec.has_deadline() && !spec.has_max_runtime())
    return FieldError("deadline",
                      "needs max_runtime (to know the latest start)");
  const bool has_train = spec.has_train();
  const bool has_command = spec.command_size() > 0;
  if (has_train && has_command)
    return FieldError("command", "give either command or train, not both");
  if (!has_train && !has_command)
    return FieldError("command",
                      "must not be empty (or give a train: section)");
  for (int i = 0; i < spec.command_size(); ++i)
    if (i == 0 && spec.command(0).empty())
      return FieldError("command[0]", "must not be empty");
  static const std::regex kEnvName("[A-Za-z_][A-Za-z0-9_]*");
  for (const auto& [k, v] : spec.env())
    if (!std::regex_match(k, kEnvName))
      return FieldError(absl::StrCat("env.", k),
                        "is not a valid variable name");
  if (has_train && spec.launch() == v1::LAUNCH_MODE_PER_NODE)
    return FieldError("launch",
                      "per-node is for commands; the built-in trainer runs "
                      "one rank per GPU (per-gpu)");
  if (has_train) {
    const auto& t = spec.train();
    if (t.model().type() != "mlp")
      return FieldError("train.model.type", "must be mlp");
    if (t.model().layers_size() < 2)
      return FieldError("train.model.layers", "needs at least 2 sizes");
    for (int i = 0; i < t.model().layers_size(); ++i)
      if (t.model().layers(i) <= 0 || t.model().layers(i) > 1 << 20)
        return FieldError(absl::StrCat("train.model.layers[", i, "]"),
                          "must be between 1 and 1048576");
    const std::string& fmt = t.data().format();
    if (fmt != "idx" && fmt != "raw" && fmt != "synthetic")
      return FieldError("train.data.format", "must be idx, raw or synthetic");
    if (fmt != "synthetic" && t.data().path().empty())
      return FieldError("train.data.path", "is required for idx and raw data");
    if (t.batch_size() <= 0 || t.batch_size() > 1 << 20)
      return FieldError("train.batch_size", "must be between 1 and 1048576");
    if (t.epochs() < 0) return FieldError("train.epochs", "must be >= 0");
    if (t.steps() < 0) return FieldError("train.steps", "must be >= 0");
    if (t.checkpoint_every() < 0)
      return FieldError("train.checkpoint_every", "must be >= 0");
    if (t.log_every() < 0) return FieldError("train.log_every", "must be >= 0");
    if (t.data().samples() < 0)
      return FieldError("train.data.samples", "must be >= 0");
    if (t.data().test_samples() < 0)
      return FieldError("train.data.test_samples", "must be >= 0");
    if (fmt == "synthetic") {
      // Generated in memory as float32: keep each split within 4 GiB.
      constexpr int64_t kMaxSyntheticValues = int64_t{1} << 30;
      const int64_t width = t.model().layers(0);
      if (t.data().samples() > kMaxSyntheticValues / width)
        return FieldError("train.data.samples",
                          "x the input width must stay within 2^30 values "
                          "(4 GiB of synthetic data)");
      if (t.data().test_samples() > kMaxSyntheticValues / width)
        return FieldError("train.data.test_samples",
                          "x the input width must stay within 2^30 values "
                          "(4 GiB of synthetic data)");
    }
    if (t.precision() != "fp32" && t.precision() != "bf16" &&
        t.precision() != "fp16")
      return FieldError("train.precision", "must be fp32, bf16 or fp16");
    const auto& o = t.optimizer();
    if (o.name() != "adamw" && o.name() != "sgd")
      return FieldError("train.optimizer.name", "must be adamw or sgd");
    if (!(o.lr() > 0 && o.lr() < 10))
      return FieldError("train.optimizer.lr", "must be in (0, 10)");
    if (!(o.weight_decay() >= 0))
      return FieldError("train.optimizer.weight_decay", "must be >= 0");
    // 0 means the default in the fields below (proto3 has no presence).
    if (!(o.momentum() >= 0 && o.momentum() < 1))
      return FieldError("train.optimizer.momentum", "must be in [0, 1)");
    if (!(o.beta1() >= 0 && o.beta1() < 1))
      return FieldError("train.optimizer.beta1", "must be in [0, 1)");
    if (!(o.beta2() >= 0 && o.beta2() < 1))
      return FieldError("train.optimizer.beta2", "must be in [0, 1)");
    if (!(o.eps() >= 0 && o.eps() < 1))
      return FieldError("train.optimizer.eps", "must be in [0, 1)");
    if (!(o.grad_clip() >= 0))
      return FieldError("train.optimizer.grad_clip", "must be >= 0");
    if (o.warmup_steps() < 0)
      return FieldError("train.optimizer.warmup_steps", "must be >= 0");
    if (!o.schedule().empty() && o.schedule() != "constant" &&
        o.schedule() != "cosine")
      return FieldError("train.optimizer.schedule",
                        "must be constant or cosine");
    RETURN_IF_ERROR(ValidateTrainParallel(t, RanksPerNode(spec)));
  }
  return absl::OkStatus();
}

absl::Status ValidateText(absl::string_view text, absl::string_view field) {
  if (!google::protobuf::internal::IsStructurallyValidUTF8(
          text.data(), static_cast<int>(text.size())))
    return FieldError(std::string(field), "is not valid UTF-8");
  // A NUL would cut an argument or an environment value short.
  if (text.find('\0') != absl::string_view::npos)
    return FieldError(std::string(field), "contains a NUL byte");
  return absl::OkStatus();
}

absl::Status ValidateIdempotencyKey(absl::string_view key,
                                    absl::string_view field) {
  if (key.empty()) return FieldError(std::string(field), "must not be empty");
  if (key.size() > 200)
    return FieldError(std::string(field), "longer than 200 bytes");
  for (unsigned char c : key)
    if (c < 0x21 || c > 0x7e)
      return FieldError(std::string(field),
                        "may hold only printable ASCII, no spaces");
  return absl::OkStatus();
}

int RanksPerNode(const v1::JobSpec& spec) {
  if (!spec.has_train() && spec.launch() == v1::LAUNCH_MODE_PER_NODE) return 1;
  return std::max(1, static_cast<int>(std::ceil(spec.resources().gpus())));
}

double TotalGpus(const v1::JobSpec& spec) {
  return spec.resources().gpus() * std::max(1, spec.resources().nodes());
}

}  // namespace tupa

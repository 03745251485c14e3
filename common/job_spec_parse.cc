#include "common/train_parallel_spec.h"
#include "common/job_spec_parse.h"

#include <yaml-cpp/yaml.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/job_spec_validate.h"
#include "common/quantity.h"
#include "common/status_macros.h"
#include "common/yaml_fields.h"

namespace tupa {
namespace {

using yaml::CheckKeys;
using yaml::FieldError;
using yaml::Int;
using yaml::Int32;
using yaml::Join;
using yaml::Number;
using yaml::Path;
using yaml::Scalar;

// name, team, user, priority, retries.
absl::Status ParseIdentity(const YAML::Node& root, v1::JobSpec& spec) {
  struct {
    const char* key;
    void (v1::JobSpec::*set)(const std::string&);
  } texts[] = {{"name", &v1::JobSpec::set_name},
               {"team", &v1::JobSpec::set_team},
               {"user", &v1::JobSpec::set_user}};
  for (const auto& f : texts) {
    if (!root[f.key]) continue;
    ASSIGN_OR_RETURN(std::string v, Scalar(root[f.key], f.key));
    (spec.*f.set)(v);
  }
  if (root["priority"]) {
    ASSIGN_OR_RETURN(auto v, Int32(root["priority"], "priority"));
    spec.set_priority(v);
  }
  if (root["retries"]) {
    ASSIGN_OR_RETURN(auto v, Int32(root["retries"], "retries"));
    spec.set_retries(v);
  }
  return absl::OkStatus();
}

absl::Status ParseResources(const YAML::Node& n, const Path& p,
                            v1::Resources* r) {
  RETURN_IF_ERROR(yaml::ExpectMap(n, p));
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
                     yaml::StringList(n["gpu_type"], Join(p, "gpu_type")));
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
        yaml::StringMap(n["labels"], Join(p, "labels"), r->mutable_labels()));
  return absl::OkStatus();
}

// max_runtime and max_cost.
absl::Status ParseLimits(const YAML::Node& root, v1::JobSpec& spec) {
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
  return absl::OkStatus();
}

absl::Status ParseModel(const YAML::Node& n, const Path& p, v1::ModelSpec* m) {
  RETURN_IF_ERROR(yaml::ExpectMap(n, p));
  RETURN_IF_ERROR(CheckKeys(n, p, {"type", "layers"}));
  if (n["type"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(n["type"], Join(p, "type")));
    m->set_type(v);
  }
  if (const auto layers = n["layers"]) {
    if (!layers.IsSequence())
      return FieldError(Join(p, "layers"), "must be a list of sizes");
    for (size_t i = 0; i < layers.size(); ++i) {
      ASSIGN_OR_RETURN(auto v,
                       Int32(layers[i], yaml::Index(Join(p, "layers"), i)));
      m->add_layers(v);
    }
  }
  return absl::OkStatus();
}

absl::Status ParseData(const YAML::Node& d, const Path& p, v1::DataSpec* out) {
  RETURN_IF_ERROR(yaml::ExpectMap(d, p));
  RETURN_IF_ERROR(
      CheckKeys(d, p, {"format", "path", "samples", "test_samples"}));
  if (d["format"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(d["format"], Join(p, "format")));
    out->set_format(v);
  }
  if (d["path"]) {
    ASSIGN_OR_RETURN(auto v, Scalar(d["path"], Join(p, "path")));
    out->set_path(v);
  }
  if (d["samples"]) {
    ASSIGN_OR_RETURN(auto v, Int32(d["samples"], Join(p, "samples")));
    out->set_samples(v);
  }
  if (d["test_samples"]) {
    ASSIGN_OR_RETURN(auto v, Int32(d["test_samples"], Join(p, "test_samples")));
    out->set_test_samples(v);
  }
  return absl::OkStatus();
}

absl::Status ParseOptimizer(const YAML::Node& n, const Path& p,
                            v1::OptimizerSpec* o) {
  RETURN_IF_ERROR(yaml::ExpectMap(n, p));
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
  RETURN_IF_ERROR(yaml::ExpectMap(n, p));
  RETURN_IF_ERROR(CheckKeys(
      n, p,
      {"model", "data", "batch_size", "epochs", "optimizer", "precision",
       "checkpoint_every", "steps", "seed", "log_every", "parallel"}));
  if (n["model"])
    RETURN_IF_ERROR(
        ParseModel(n["model"], Join(p, "model"), t->mutable_model()));
  if (n["data"])
    RETURN_IF_ERROR(ParseData(n["data"], Join(p, "data"), t->mutable_data()));
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

// command (argv) and env.
absl::Status ParseCommand(const YAML::Node& root, v1::JobSpec& spec) {
  if (root["command"]) {
    if (root["command"].IsScalar())
      return FieldError("command",
                        "must be a list (argv), e.g. [python, train.py]");
    ASSIGN_OR_RETURN(auto argv, yaml::StringList(root["command"], "command"));
    if (argv.empty()) return FieldError("command", "must not be empty");
    for (auto& a : argv) spec.add_command(a);
  }
  if (root["env"])
    RETURN_IF_ERROR(yaml::StringMap(root["env"], "env", spec.mutable_env()));
  return absl::OkStatus();
}

// start_window and deadline.
absl::Status ParseTiming(const YAML::Node& root, v1::JobSpec& spec) {
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
  return absl::OkStatus();
}

absl::Status ParseLaunch(const YAML::Node& root, v1::JobSpec& spec) {
  if (!root["launch"]) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto s, Scalar(root["launch"], "launch"));
  if (s == "per-gpu" || s == "LAUNCH_MODE_PER_GPU") {
    spec.set_launch(v1::LAUNCH_MODE_PER_GPU);
  } else if (s == "per-node" || s == "LAUNCH_MODE_PER_NODE") {
    spec.set_launch(v1::LAUNCH_MODE_PER_NODE);
  } else {
    return FieldError("launch", absl::StrCat("bad value \"", s,
                                             "\" (expected per-gpu or "
                                             "per-node)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::JobSpec> ParseRoot(const YAML::Node& root) {
  v1::JobSpec spec;
  if (!root.IsMap()) return FieldError("spec", "must be a YAML mapping");
  RETURN_IF_ERROR(
      CheckKeys(root, "",
                {"name", "team", "priority", "resources", "max_runtime",
                 "max_cost", "retries", "train", "command", "env", "launch",
                 "user", "start_window", "deadline"}));
  RETURN_IF_ERROR(ParseIdentity(root, spec));
  if (root["resources"])
    RETURN_IF_ERROR(ParseResources(root["resources"], "resources",
                                   spec.mutable_resources()));
  RETURN_IF_ERROR(ParseLimits(root, spec));
  if (root["train"])
    RETURN_IF_ERROR(ParseTrain(root["train"], "train", spec.mutable_train()));
  RETURN_IF_ERROR(ParseCommand(root, spec));
  RETURN_IF_ERROR(ParseTiming(root, spec));
  RETURN_IF_ERROR(ParseLaunch(root, spec));
  return spec;
}

absl::Status BadYaml(const YAML::Exception& e) {
  return absl::InvalidArgumentError(
      absl::StrCat("spec: bad YAML at line ", e.mark.line + 1, ": ", e.msg));
}

}  // namespace

absl::StatusOr<v1::JobSpec> ParseJobSpecYaml(absl::string_view yaml) {
  const std::string text(yaml);
  YAML::Node root;
  try {
    // A second job in the same file would otherwise be dropped without a
    // word.
    if (yaml::CountDocuments(text) > 1)
      return FieldError("spec",
                        "holds more than one YAML document (separated by "
                        "---); give one job per spec");
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return BadYaml(e);
  }
  if (!root || root.IsNull()) return FieldError("spec", "is empty");
  try {
    return ParseRoot(root);
  } catch (const YAML::Exception& e) {
    return BadYaml(e);
  }
}

}  // namespace tupa

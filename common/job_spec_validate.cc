#include "common/job_spec.h"
#include "common/train_parallel_spec.h"
#include "common/job_spec_validate.h"

#include <google/protobuf/stubs/common.h>

#include <cmath>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/quantity.h"
#include "common/status_macros.h"
#include "common/yaml_fields.h"

namespace tupa {
namespace {

using yaml::FieldError;

// 1970-01-01 and 9999-12-31T23:59:59Z: what timestamps and JSON carry.
constexpr int64_t kMinDeadlineS = 0;
constexpr int64_t kMaxDeadlineS = 253402300799;

// Per-spec bounds on free text: every job's spec travels in each listing.
constexpr size_t kMaxCommandBytes = 32 << 10;
constexpr size_t kMaxEnvBytes = 32 << 10;
constexpr size_t kMaxSpecBytes = 96 << 10;

absl::Status ValidateSpecText(const v1::JobSpec& spec) {
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

// name, team, priority, retries.
absl::Status ValidateIdentity(const v1::JobSpec& spec) {
  if (!spec.name().empty())
    RETURN_IF_ERROR(ValidateJobName(spec.name(), "name"));
  if (!spec.team().empty())
    RETURN_IF_ERROR(ValidateJobName(spec.team(), "team"));
  if (spec.priority() < 0 || spec.priority() > 100)
    return FieldError("priority", "must be between 0 and 100");
  if (spec.retries() < 0 || spec.retries() > 100)
    return FieldError("retries", "must be between 0 and 100");
  return absl::OkStatus();
}

absl::Status ValidateResources(const v1::Resources& r) {
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
  return absl::OkStatus();
}

// max_runtime, max_cost, start_window, deadline.
absl::Status ValidateLimits(const v1::JobSpec& spec) {
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
  return absl::OkStatus();
}

// command or train (exactly one), env names, launch mode.
absl::Status ValidateWhatRuns(const v1::JobSpec& spec) {
  const bool has_train = spec.has_train();
  const bool has_command = spec.command_size() > 0;
  if (has_train && has_command)
    return FieldError("command", "give either command or train, not both");
  if (!has_train && !has_command)
    return FieldError("command",
                      "must not be empty (or give a train: section)");
  if (spec.command_size() > 0 && spec.command(0).empty())
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
  return absl::OkStatus();
}

absl::Status ValidateModel(const v1::ModelSpec& m) {
  if (m.type() != "mlp") return FieldError("train.model.type", "must be mlp");
  if (m.layers_size() < 2)
    return FieldError("train.model.layers", "needs at least 2 sizes");
  for (int i = 0; i < m.layers_size(); ++i)
    if (m.layers(i) <= 0 || m.layers(i) > 1 << 20)
      return FieldError(absl::StrCat("train.model.layers[", i, "]"),
                        "must be between 1 and 1048576");
  return absl::OkStatus();
}

absl::Status ValidateData(const v1::DataSpec& d, int input_width) {
  const std::string& fmt = d.format();
  if (fmt != "idx" && fmt != "raw" && fmt != "synthetic")
    return FieldError("train.data.format", "must be idx, raw or synthetic");
  if (fmt != "synthetic" && d.path().empty())
    return FieldError("train.data.path", "is required for idx and raw data");
  if (d.samples() < 0) return FieldError("train.data.samples", "must be >= 0");
  if (d.test_samples() < 0)
    return FieldError("train.data.test_samples", "must be >= 0");
  if (fmt == "synthetic") {
    // Generated in memory as float32: keep each split within 4 GiB.
    constexpr int64_t kMaxSyntheticValues = int64_t{1} << 30;
    if (d.samples() > kMaxSyntheticValues / input_width)
      return FieldError("train.data.samples",
                        "x the input width must stay within 2^30 values "
                        "(4 GiB of synthetic data)");
    if (d.test_samples() > kMaxSyntheticValues / input_width)
      return FieldError("train.data.test_samples",
                        "x the input width must stay within 2^30 values "
                        "(4 GiB of synthetic data)");
  }
  return absl::OkStatus();
}

absl::Status ValidateOptimizer(const v1::OptimizerSpec& o) {
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
    return FieldError("train.optimizer.schedule", "must be constant or cosine");
  return absl::OkStatus();
}

// batch_size, epochs, steps, checkpoint_every, log_every, precision.
absl::Status ValidateLoop(const v1::TrainSpec& t) {
  if (t.batch_size() <= 0 || t.batch_size() > 1 << 20)
    return FieldError("train.batch_size", "must be between 1 and 1048576");
  if (t.epochs() < 0) return FieldError("train.epochs", "must be >= 0");
  if (t.steps() < 0) return FieldError("train.steps", "must be >= 0");
  if (t.checkpoint_every() < 0)
    return FieldError("train.checkpoint_every", "must be >= 0");
  if (t.log_every() < 0) return FieldError("train.log_every", "must be >= 0");
  if (t.precision() != "fp32" && t.precision() != "bf16" &&
      t.precision() != "fp16")
    return FieldError("train.precision", "must be fp32, bf16 or fp16");
  return absl::OkStatus();
}

absl::Status ValidateTrain(const v1::TrainSpec& t) {
  RETURN_IF_ERROR(ValidateModel(t.model()));
  RETURN_IF_ERROR(ValidateData(t.data(), t.model().layers(0)));
  RETURN_IF_ERROR(ValidateLoop(t));
  return ValidateOptimizer(t.optimizer());
}

}  // namespace

absl::Status ValidateJobSpec(const v1::JobSpec& spec) {
  RETURN_IF_ERROR(ValidateSpecText(spec));
  if (!v1::LaunchMode_IsValid(spec.launch()))
    return FieldError("launch", "must be per-gpu or per-node");
  if (spec.has_deadline() &&
      (spec.deadline().seconds() < kMinDeadlineS ||
       spec.deadline().seconds() > kMaxDeadlineS ||
       spec.deadline().nanos() < 0 || spec.deadline().nanos() > 999999999))
    return FieldError("deadline", "must be a time in years 1970-9999");
  RETURN_IF_ERROR(ValidateIdentity(spec));
  RETURN_IF_ERROR(ValidateResources(spec.resources()));
  RETURN_IF_ERROR(ValidateLimits(spec));
  RETURN_IF_ERROR(ValidateWhatRuns(spec));
  if (spec.has_train()) {
    RETURN_IF_ERROR(ValidateTrain(spec.train()));
    RETURN_IF_ERROR(ValidateTrainParallel(spec.train(), RanksPerNode(spec)));
  }
  return absl::OkStatus();
}

absl::Status ValidateJobName(absl::string_view name, absl::string_view field) {
  static const std::regex kName("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
  if (!std::regex_match(name.begin(), name.end(), kName))
    return FieldError(std::string(field),
                      "must be 1-63 letters, digits, '.', '_' or '-', "
                      "starting with a letter or digit");
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

}  // namespace tupa

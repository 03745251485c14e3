#include "scheduler/idle/policy.h"

#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/quantity.h"
#include "common/status_macros.h"
#include "common/yaml_fields.h"

namespace tupa::scheduler::idle {
namespace {

using yaml::CheckKeys;
using yaml::FieldError;
using yaml::Scalar;

absl::StatusOr<absl::Duration> Duration(const YAML::Node& node,
                                        const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, Scalar(node, path));
  ASSIGN_OR_RETURN(absl::Duration d, ParseDuration(text, path));
  if (d < absl::ZeroDuration()) return FieldError(path, "must not be negative");
  return d;
}

absl::StatusOr<int> Count(const YAML::Node& node, const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, Scalar(node, path));
  int v;
  if (!absl::SimpleAtoi(text, &v) || v < 0 || v > 100000)
    return FieldError(
        path, absl::StrCat("must be an integer >= 0, got \"", text, "\""));
  return v;
}

absl::Status ParseKeepWarm(const YAML::Node& node, const std::string& path,
                           IdleShutdownPolicy* p) {
  if (node.IsScalar()) {
    ASSIGN_OR_RETURN(p->keep_warm_default, Count(node, path));
    return absl::OkStatus();
  }
  if (!node.IsMap())
    return FieldError(path, "must be a count or a mapping of pool to count");
  for (const auto& kv : node) {
    ASSIGN_OR_RETURN(const std::string pool, yaml::Key(kv.first, path));
    const std::string field = absl::StrCat(path, ".", pool);
    ASSIGN_OR_RETURN(int n, Count(kv.second, field));
    if (pool == "default") {
      p->keep_warm_default = n;
    } else if (pool.find('/') == std::string::npos) {
      return FieldError(field, "pool must be \"region/gpu_type\" or default");
    } else {
      p->keep_warm_by_pool[pool] = n;
    }
  }
  return absl::OkStatus();
}

absl::Status ParseIdleShutdown(const YAML::Node& n, IdleShutdownPolicy* p) {
  const std::string s = "idle_shutdown";
  RETURN_IF_ERROR(CheckKeys(
      n, s,
      {"policy", "idle_after", "activity_threshold", "keep_warm", "min_uptime",
       "grace", "boot_time", "billing_minimum", "hook"}));
  p->enabled = true;
  if (n["policy"]) {
    ASSIGN_OR_RETURN(std::string k, Scalar(n["policy"], s + ".policy"));
    if (k == "cost") {
      p->kind = IdleShutdownPolicy::Kind::kCost;
    } else if (k == "timer") {
      p->kind = IdleShutdownPolicy::Kind::kTimer;
    } else {
      return FieldError(s + ".policy",
                        absl::StrCat("must be cost or timer, got \"", k, "\""));
    }
  }
  if (n["idle_after"]) {
    ASSIGN_OR_RETURN(p->idle_after,
                     Duration(n["idle_after"], s + ".idle_after"));
    p->idle_after_given = true;
  }
  if (n["boot_time"]) {
    ASSIGN_OR_RETURN(p->boot_time, Duration(n["boot_time"], s + ".boot_time"));
  }
  if (n["billing_minimum"]) {
    ASSIGN_OR_RETURN(p->billing_minimum,
                     Duration(n["billing_minimum"], s + ".billing_minimum"));
  }
  if (n["activity_threshold"]) {
    const std::string f = s + ".activity_threshold";
    ASSIGN_OR_RETURN(std::string text, Scalar(n["activity_threshold"], f));
    double v;
    if (!absl::SimpleAtod(text, &v) || !std::isfinite(v) || v < 0 || v > 1)
      return FieldError(f, absl::StrCat("must be a number between 0 and 1, "
                                        "got \"",
                                        text, "\""));
    p->activity_threshold = v;
  }
  if (n["keep_warm"]) {
    RETURN_IF_ERROR(ParseKeepWarm(n["keep_warm"], s + ".keep_warm", p));
    p->keep_warm_given = true;
  }
  if (n["min_uptime"]) {
    ASSIGN_OR_RETURN(p->min_uptime,
                     Duration(n["min_uptime"], s + ".min_uptime"));
    p->min_uptime_given = true;
  }
  if (n["grace"]) {
    ASSIGN_OR_RETURN(p->grace, Duration(n["grace"], s + ".grace"));
  }
  if (n["hook"]) {
    ASSIGN_OR_RETURN(p->hook, Scalar(n["hook"], s + ".hook"));
  }
  return absl::OkStatus();
}

absl::Status ParseScaleUp(const YAML::Node& n, ScaleUpPolicy* p) {
  RETURN_IF_ERROR(CheckKeys(n, "scale_up", {"pending_after", "hook"}));
  p->enabled = true;
  if (n["pending_after"]) {
    ASSIGN_OR_RETURN(p->pending_after,
                     Duration(n["pending_after"], "scale_up.pending_after"));
    p->pending_after_given = true;
  }
  if (n["hook"]) {
    ASSIGN_OR_RETURN(p->hook, Scalar(n["hook"], "scale_up.hook"));
  }
  return absl::OkStatus();
}

absl::Status ParseZombieJobs(const YAML::Node& n, ZombieJobPolicy* p) {
  RETURN_IF_ERROR(CheckKeys(n, "zombie_jobs", {"after", "action"}));
  p->enabled = true;
  if (n["after"]) {
    ASSIGN_OR_RETURN(p->after, Duration(n["after"], "zombie_jobs.after"));
  }
  if (n["action"]) {
    ASSIGN_OR_RETURN(std::string a, Scalar(n["action"], "zombie_jobs.action"));
    if (a == "flag") {
      p->action = ZombieJobPolicy::Action::kFlag;
    } else if (a == "cancel") {
      p->action = ZombieJobPolicy::Action::kCancel;
    } else {
      return FieldError(
          "zombie_jobs.action",
          absl::StrCat("must be flag or cancel, got \"", a, "\""));
    }
  }
  return absl::OkStatus();
}

// The cost rule prices the job's wait for a boot itself: it scales up at
// once unless pending_after was given.
void ScaleUpAtOnceUnderTheCostRule(IdlePolicy* p) {
  if (p->idle_shutdown.enabled &&
      p->idle_shutdown.kind == IdleShutdownPolicy::Kind::kCost &&
      !p->scale_up.pending_after_given) {
    p->scale_up.pending_after = absl::ZeroDuration();
  }
}

}  // namespace

std::string PoolKey(absl::string_view region, absl::string_view gpu_type) {
  return absl::StrCat(region, "/", gpu_type);
}

int IdleShutdownPolicy::KeepWarm(const std::string& pool) const {
  auto it = keep_warm_by_pool.find(pool);
  if (it != keep_warm_by_pool.end()) return it->second;
  if (kind == Kind::kCost && !keep_warm_given) return 0;
  return keep_warm_default;
}

absl::Duration IdleShutdownPolicy::MinUptime() const {
  if (kind == Kind::kCost && !min_uptime_given) return absl::ZeroDuration();
  return min_uptime;
}

absl::Duration IdleShutdownPolicy::MaxIdle() const {
  if (kind == Kind::kCost && !idle_after_given) return absl::Hours(1);
  return idle_after;
}

absl::StatusOr<IdlePolicy> NamedIdlePolicy(absl::string_view name,
                                           absl::Duration boot_time) {
  IdlePolicy p;
  p.idle_shutdown.enabled = true;
  p.idle_shutdown.boot_time = boot_time;
  p.scale_up.enabled = true;
  const std::vector<absl::string_view> parts = absl::StrSplit(name, ':');
  size_t options = 1;  // the first part that is an option
  if (parts[0] == "timer" && parts.size() >= 2) {
    absl::Duration after;
    if (!absl::ParseDuration(parts[1], &after) || after < absl::ZeroDuration())
      return absl::InvalidArgumentError(
          absl::StrCat("timer: not a duration: \"", parts[1], "\""));
    IdleShutdownPolicy& s = p.idle_shutdown;
    s.kind = IdleShutdownPolicy::Kind::kTimer;
    s.idle_after = after;
    s.idle_after_given = s.keep_warm_given = true;
    s.keep_warm_default = 0;
    s.min_uptime = absl::ZeroDuration();
    options = 2;
  } else if (parts[0] != "cost") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown idle policy \"", name,
                     "\" (cost, timer:DURATION, either with :up=DURATION, or "
                     "a file)"));
  }
  for (size_t i = options; i < parts.size(); ++i) {
    absl::string_view up = parts[i];
    if (!absl::ConsumePrefix(&up, "up=") ||
        !absl::ParseDuration(up, &p.scale_up.pending_after) ||
        p.scale_up.pending_after < absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "idle policy \"", name, "\": \"", parts[i],
          "\" is not up=DURATION (scale-up after pending that long)"));
    }
    p.scale_up.pending_after_given = true;
  }
  ScaleUpAtOnceUnderTheCostRule(&p);
  return p;
}

const char* ZombieActionName(ZombieJobPolicy::Action action) {
  return action == ZombieJobPolicy::Action::kCancel ? "cancel" : "flag";
}

absl::StatusOr<IdlePolicy> ParseIdlePolicy(const YAML::Node& config) {
  IdlePolicy policy;
  if (!config || config.IsNull()) return policy;
  if (!config.IsMap())
    return absl::InvalidArgumentError("config: must be a mapping");
  // A section written as `idle_shutdown:` with nothing under it is null.
  if (const YAML::Node n = config["idle_shutdown"]) {
    if (n.IsNull()) {
      policy.idle_shutdown.enabled = true;
    } else {
      RETURN_IF_ERROR(ParseIdleShutdown(n, &policy.idle_shutdown));
    }
  }
  if (const YAML::Node n = config["scale_up"]) {
    if (n.IsNull()) {
      policy.scale_up.enabled = true;
    } else {
      RETURN_IF_ERROR(ParseScaleUp(n, &policy.scale_up));
    }
    ScaleUpAtOnceUnderTheCostRule(&policy);
  }
  if (const YAML::Node n = config["zombie_jobs"]) {
    if (n.IsNull()) {
      policy.zombie_jobs.enabled = true;
    } else {
      RETURN_IF_ERROR(ParseZombieJobs(n, &policy.zombie_jobs));
    }
  }
  return policy;
}

absl::StatusOr<IdlePolicy> ParseIdlePolicyYaml(absl::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config: ", e.what()));
  }
  return ParseIdlePolicy(root);
}

}  // namespace tupa::scheduler::idle

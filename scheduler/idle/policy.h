// The idle-shutdown, scale-up and zombie-job policy of the scheduler config
// (DESIGN §5), and its strict YAML parser.
//
//   idle_shutdown:
//     idle_after: 10m            # no job AND device activity < threshold
//     activity_threshold: 0.05   # in [0, 1]
//     keep_warm: 1               # per pool; or {default: 1,
//     sa-east-1/A100-80GB: 2} min_uptime: 5m             # never stop a worker
//     that joined recently grace: 0s                  # announce, then stop if
//     still idle after this hook: "cmd args"           # optional, run by the
//     scheduler
//   scale_up:
//     pending_after: 2m          # pending jobs that fit no live worker
//     hook: "cmd args"
//   zombie_jobs:
//     after: 30m                 # running job whose devices stay below
//     threshold action: flag               # flag | cancel
//
// A section that is absent disables that part of the policy. A field that is
// absent takes the default shown in the struct. Plain values; thread-safe to
// read.
#ifndef TUPA_SCHEDULER_IDLE_POLICY_H_
#define TUPA_SCHEDULER_IDLE_POLICY_H_

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tupa::scheduler::idle {

// The key of a pool: "region/gpu_type" (region may be empty: "/A100").
std::string PoolKey(absl::string_view region, absl::string_view gpu_type);

struct IdleShutdownPolicy {
  bool enabled = false;
  absl::Duration idle_after = absl::Minutes(10);
  double activity_threshold = 0.05;
  int keep_warm_default = 1;
  std::map<std::string, int> keep_warm_by_pool;  // PoolKey -> count
  absl::Duration min_uptime = absl::Minutes(5);
  absl::Duration grace = absl::ZeroDuration();
  std::string hook;  // empty: none

  // The warm minimum of `pool` (a PoolKey).
  int KeepWarm(const std::string& pool) const;
};

struct ScaleUpPolicy {
  bool enabled = false;
  absl::Duration pending_after = absl::Minutes(2);
  std::string hook;
};

struct ZombieJobPolicy {
  enum class Action { kFlag, kCancel };
  bool enabled = false;
  absl::Duration after = absl::Minutes(30);
  Action action = Action::kFlag;
};

struct IdlePolicy {
  IdleShutdownPolicy idle_shutdown;
  ScaleUpPolicy scale_up;
  ZombieJobPolicy zombie_jobs;
};

// Reads the `idle_shutdown`, `scale_up` and `zombie_jobs` sections of a
// scheduler config mapping; other top-level keys belong to the scheduler and
// are ignored. Inside the sections unknown fields, wrong types, bad
// durations and out-of-range values are InvalidArgument naming the field,
// e.g. "idle_shutdown.activity_threshold: must be between 0 and 1".
absl::StatusOr<IdlePolicy> ParseIdlePolicy(const YAML::Node& config);

// The same from YAML text (a whole scheduler config). Malformed YAML is
// InvalidArgument.
absl::StatusOr<IdlePolicy> ParseIdlePolicyYaml(absl::string_view yaml);

const char* ZombieActionName(ZombieJobPolicy::Action action);

}  // namespace tupa::scheduler::idle

#endif  // TUPA_SCHEDULER_IDLE_POLICY_H_

// The idle-shutdown, scale-up and zombie-job policy of the scheduler config
// (DESIGN §5), and its strict YAML parser.
//
//   idle_shutdown:
//     policy: cost               # cost (default) | timer
//     idle_after: 10m            # timer: stop after; cost: at most (1h)
//     activity_threshold: 0.05   # in [0, 1]
//     keep_warm: 1               # per pool, or {default: 1, pool: 2};
//                                # timer: 1, cost: 0 unless given
//     min_uptime: 5m             # never stop a worker that joined recently;
//                                # cost: 0 unless given
//     grace: 0s                  # announce, then stop if still idle after
//     boot_time: 3m              # cost: restart request to taking jobs
//     billing_minimum: 0s        # cost: least time billed per restart
//     hook: "cmd args"           # optional, run by the scheduler
//   scale_up:
//     pending_after: 2m          # pending jobs that fit no live worker;
//                                # under the cost rule 0s unless given
//     hook: "cmd args"
//   zombie_jobs:
//     after: 30m                 # devices of a running job below threshold
//     action: flag               # flag | cancel
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
  // kCost (the default): the cost rule of cost_rule.h decides when an idle
  // worker stops and how many stay warm; idle_after is then only the
  // longest it keeps one idle (1h unless given), keep_warm a floor (0
  // unless given) and min_uptime 0 unless given (the rule prices a
  // restart itself, billing_minimum included). kTimer: stop after idle_after,
  // keep keep_warm (1 unless given) per pool.
  enum class Kind { kCost, kTimer };
  bool enabled = false;
  Kind kind = Kind::kCost;
  absl::Duration idle_after = absl::Minutes(10);
  bool idle_after_given = false;
  bool keep_warm_given = false;
  bool min_uptime_given = false;
  // Cost rule: how long a stopped worker takes from the restart request to
  // taking jobs, and the least time a cloud bills for a restart.
  absl::Duration boot_time = absl::Minutes(3);
  absl::Duration billing_minimum = absl::ZeroDuration();
  double activity_threshold = 0.05;
  int keep_warm_default = 1;
  std::map<std::string, int> keep_warm_by_pool;  // PoolKey -> count
  absl::Duration min_uptime = absl::Minutes(5);
  absl::Duration grace = absl::ZeroDuration();
  std::string hook;  // empty: none

  // The warm minimum of `pool` (a PoolKey).
  int KeepWarm(const std::string& pool) const;
  // The least time up before a worker may be stopped.
  absl::Duration MinUptime() const;
  // The idle time after which a worker is stopped whatever else holds.
  absl::Duration MaxIdle() const;
};

struct ScaleUpPolicy {
  bool enabled = false;
  // ParseIdlePolicy() and NamedIdlePolicy() set it to 0 when the idle policy
  // is the cost rule and it is not given: the rule prices the job's wait
  // itself, and an early boot costs only when a worker frees up within the
  // boot.
  absl::Duration pending_after = absl::Minutes(2);
  bool pending_after_given = false;
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

// A plain policy named on a command line, for tupa-sim: "cost" (the
// default cost rule, scaling up at once) or "timer:DURATION" (stop after
// DURATION idle, no warm pool, no min_uptime, scaling up after 2m pending),
// either followed by ":up=DURATION" to scale up after that long pending
// instead ("timer:5m:up=0s"); both take boot_time as the restart time.
// InvalidArgument for anything else.
absl::StatusOr<IdlePolicy> NamedIdlePolicy(absl::string_view name,
                                           absl::Duration boot_time);

}  // namespace tupa::scheduler::idle

#endif  // TUPA_SCHEDULER_IDLE_POLICY_H_

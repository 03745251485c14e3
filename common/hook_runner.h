// Runs operator hooks: a shell command line (`/bin/sh -c`) with extra
// environment variables, e.g. the idle policy's shutdown and scale-up
// actions. Failures are retried and reported, never silent. Blocking;
// thread-safe (each call forks its own child).
#ifndef TUPA_COMMON_HOOK_RUNNER_H_
#define TUPA_COMMON_HOOK_RUNNER_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tupa {

struct HookOptions {
  int attempts = 3;
  absl::Duration backoff = absl::Seconds(1);   // doubles after each failure
  absl::Duration timeout = absl::Seconds(60);  // per attempt; then SIGKILL
};

// Returns OK when an attempt exits 0; otherwise Unavailable with the last
// exit status and the tail of the hook's output.
absl::Status RunHook(const std::string& command,
                     const std::map<std::string, std::string>& env,
                     const HookOptions& options = {});

}  // namespace tupa

#endif  // TUPA_COMMON_HOOK_RUNNER_H_

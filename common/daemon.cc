#include "common/daemon.h"

#include <pthread.h>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/synchronization/mutex.h"
#include "common/flag_names.h"
#include "common/logging.h"

namespace tupa {

sigset_t StartDaemon(int argc, char** argv, const char* usage) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  absl::SetProgramUsageMessage(usage);
  NormalizeFlagNames(argc, argv);
  absl::ParseCommandLine(argc, argv);
  InitLogging(argv[0]);
  // Debian builds abseil without NDEBUG, which turns on its deadlock
  // detector: every absl::Mutex (gRPC's too) then updates one process-wide
  // lock graph under a global lock. Tests keep it; daemons run without it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return signals;
}

}  // namespace tupa

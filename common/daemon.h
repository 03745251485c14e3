// Start-up shared by the daemons (tupa-scheduler, tupa-worker).
#ifndef TUPA_COMMON_DAEMON_H_
#define TUPA_COMMON_DAEMON_H_

#include <signal.h>

namespace tupa {

// Blocks SIGTERM and SIGINT in this thread and every thread started later
// (main then waits for them with sigwait on the returned set), accepts
// dashed flag names, parses the absl flags, sets up logging and turns off
// abseil's debug-build deadlock detector. Call first in main().
sigset_t StartDaemon(int argc, char** argv, const char* usage);

}  // namespace tupa

#endif  // TUPA_COMMON_DAEMON_H_

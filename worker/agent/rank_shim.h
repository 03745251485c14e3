// The shim that leads each rank's process group (node_runner.cc). It
// ignores SIGTERM and SIGINT (meant for the rank), forks and execs the
// rank, mirrors its exit status (a rank killed by signal N exits 128 + N),
// and when the worker dies (even by SIGKILL; PR_SET_PDEATHSIG) it kills the
// whole group, so no rank or rank child outlives its worker.
//
// It runs in one of two ways: as the program `tupa-rank-shim` (installed
// beside tupa-worker), which the worker starts with posix_spawn (no copy
// of the worker's address space), or, where that program is missing, in a
// child the worker forked. Either way the caller has already made the
// process its own group leader and pointed stdout/stderr at the rank's
// output pipe, stdin at /dev/null, and closed every other descriptor.
#ifndef TUPA_WORKER_AGENT_RANK_SHIM_H_
#define TUPA_WORKER_AGENT_RANK_SHIM_H_

#include <signal.h>
#include <sys/types.h>

namespace tupa::worker {

// The signal a rank's shim gets when the worker dies (PR_SET_PDEATHSIG).
inline constexpr int kWorkerDiedSignal = SIGUSR2;

// The program's name, looked up beside the worker's own executable.
inline constexpr char kRankShimProgram[] = "tupa-rank-shim";

// Only async-signal-safe calls (it may run between fork and exec).
// `parent`: the worker's pid (a shim whose parent is already gone kills
// its group at once). `work_dir`: where the rank starts (empty: stay);
// a directory it cannot enter ends the shim with 126 and a line on
// stderr. `argv[0]` is executed as given, with `envp`.
[[noreturn]] void RunRankShim(pid_t parent, const char* work_dir,
                              char* const* argv, char* const* envp);

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_RANK_SHIM_H_

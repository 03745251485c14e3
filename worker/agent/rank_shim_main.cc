// tupa-rank-shim PARENT_PID WORK_DIR PROGRAM [ARGS...]
//
// Started by tupa-worker (node_runner.cc) for each rank, never by hand:
// runs RunRankShim (rank_shim.h) in a process of its own, so the worker
// need not fork its whole address space per rank. Environment, process
// group and descriptors are the worker's doing.
#include <stdio.h>
#include <stdlib.h>

#include "worker/agent/rank_shim.h"

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: tupa-rank-shim PARENT_PID WORK_DIR PROGRAM [ARGS...] "
            "(started by tupa-worker)\n");
    return 2;
  }
  const pid_t parent = static_cast<pid_t>(strtol(argv[1], nullptr, 10));
  tupa::worker::RunRankShim(parent, argv[2], argv + 3, environ);
}

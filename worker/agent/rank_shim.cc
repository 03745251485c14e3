#include "worker/agent/rank_shim.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace tupa::worker {
namespace {

void KillOwnGroup(int) { kill(0, SIGKILL); }

// "<what><name>: <strerror(errno)>" on stderr, async-signal-safe.
void WriteError(const char* what, const char* name) {
  const char* reason = strerrordesc_np(errno);  // static, no locale
  const char* parts[] = {what, name, ": ", reason, "\n"};
  for (const char* p : parts) (void)!write(STDERR_FILENO, p, strlen(p));
}

}  // namespace

void RunRankShim(pid_t parent, const char* work_dir, char* const* argv,
                 char* const* envp) {
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &ignore, nullptr);
  sigaction(SIGINT, &ignore, nullptr);
  struct sigaction die = {};
  die.sa_handler = KillOwnGroup;
  sigaction(kWorkerDiedSignal, &die, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  prctl(PR_SET_PDEATHSIG, kWorkerDiedSignal);
  if (getppid() != parent) kill(0, SIGKILL);  // the worker died already
  if (work_dir[0] != '\0' && chdir(work_dir) != 0) {
    WriteError("tupa-worker: cannot enter the work directory ", work_dir);
    _exit(126);
  }
  pid_t rank = fork();
  if (rank < 0) _exit(127);
  if (rank == 0) {
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGTERM, &dfl, nullptr);
    sigaction(SIGINT, &dfl, nullptr);
    sigaction(kWorkerDiedSignal, &dfl, nullptr);
    execvpe(argv[0], argv, envp);
    WriteError("tupa-worker: cannot execute ", argv[0]);
    _exit(127);
  }
  int status = 0;
  while (waitpid(rank, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) _exit(128 + WTERMSIG(status));
  _exit(WEXITSTATUS(status));
}

}  // namespace tupa::worker

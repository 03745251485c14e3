#include "common/hook_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace tupa {
namespace {

struct Outcome {
  int status = -1;  // waitpid status, -1 when it could not start
  bool timed_out = false;
  std::string output;
};

Outcome RunOnce(const std::string& command,
                const std::map<std::string, std::string>& env,
                absl::Duration timeout) {
  // Everything the child needs is prepared before fork.
  std::map<std::string, std::string> all;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) all[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) all[k] = v;
  std::vector<std::string> strings;
  for (const auto& [k, v] : all) strings.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> envp;
  for (auto& s : strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string cmd = command;
  char sh[] = "/bin/sh", dash_c[] = "-c";
  char* argv[] = {sh, dash_c, cmd.data(), nullptr};

  Outcome out;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return out;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return out;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(argv[0], argv, envp.data());
    _exit(127);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  const absl::Time deadline = absl::Now() + timeout;
  char buf[4096];
  while (true) {
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof(buf))) > 0) {
      out.output.append(buf, static_cast<size_t>(got));
      if (out.output.size() > 8192)
        out.output.erase(0, out.output.size() - 8192);
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      out.status = status;
      break;
    }
    if (absl::Now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      out.status = status;
      out.timed_out = true;
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  close(fds[0]);
  return out;
}

}  // namespace

absl::Status RunHook(const std::string& command,
                     const std::map<std::string, std::string>& env,
                     const HookOptions& options) {
  absl::Duration backoff = options.backoff;
  std::string last;
  for (int attempt = 1; attempt <= std::max(1, options.attempts); ++attempt) {
    Outcome o = RunOnce(command, env, options.timeout);
    if (o.status >= 0 && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0)
      return absl::OkStatus();
    if (o.status < 0) {
      last = "could not start /bin/sh";
    } else if (o.timed_out) {
      last = absl::StrCat("timed out after ",
                          absl::FormatDuration(options.timeout));
    } else if (WIFSIGNALED(o.status)) {
      last = absl::StrCat("killed by signal ", WTERMSIG(o.status));
    } else {
      last = absl::StrCat("exited with ", WEXITSTATUS(o.status));
    }
    if (!o.output.empty()) absl::StrAppend(&last, ": ", o.output);
    if (attempt < options.attempts) {
      absl::SleepFor(backoff);
      backoff *= 2;
    }
  }
  return absl::UnavailableError(
      absl::StrCat("hook \"", command, "\" failed after ", options.attempts,
                   " attempt(s): ", last));
}

}  // namespace tupa

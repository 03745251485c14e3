#include "worker/agent/node_runner.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace tupa::worker {
namespace {

// The signal a rank's shim gets when the worker dies (PR_SET_PDEATHSIG).
constexpr int kWorkerDiedSignal = SIGUSR2;

// How long a node's output is still read once its ranks are gone.
constexpr absl::Duration kDrainAfterExit = absl::Seconds(2);

void KillOwnGroup(int) { kill(0, SIGKILL); }

// "<what><name>: <strerror(errno)>" on stderr, async-signal-safe.
void WriteError(const char* what, const std::string& name) {
  const char* reason = strerrordesc_np(errno);  // static, no locale
  const char* parts[] = {what, name.c_str(), ": ", reason, "\n"};
  for (const char* p : parts) (void)!write(STDERR_FILENO, p, strlen(p));
}

// Runs in the forked child; only async-signal-safe calls. The child becomes
// a small shim that leads the rank's process group: it ignores SIGTERM (meant
// for the rank), forks and execs the rank, mirrors its exit status, and when
// the worker dies (even by SIGKILL) it kills the whole group, so no rank or
// rank child outlives its worker. PR_SET_PDEATHSIG alone would only reach
// the direct child.
[[noreturn]] void RunShim(pid_t parent, int out_fd, int max_fd,
                          const std::string& work_dir, char* const* argv,
                          char* const* envp) {
  setpgid(0, 0);
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
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  // Nothing else of the worker's reaches the rank. This matters for the
  // write ends of other nodes' output pipes (O_CLOEXEC does not help: the
  // shim never execs): a shim holding one would keep that node's reader
  // from seeing end of file, and its EXITED, until this rank ended.
  if (close_range(3, ~0U, 0) != 0) {
    for (int fd = 3; fd < max_fd; ++fd) close(fd);
  }
  if (!work_dir.empty() && chdir(work_dir.c_str()) != 0) {
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

struct Spawned {
  int pid = -1;
  int out_fd = -1;
};

// The program execvpe() would run for `name`, but searched on the rank's
// own PATH (glibc's execvpe searches the worker's). Relative PATH entries
// are relative to `work_dir`, where the rank starts. A name with a '/' or
// one found nowhere is returned as is (exec then reports it).
std::string ResolveOnPath(const std::string& name, const std::string& path,
                          const std::string& work_dir) {
  if (name.empty() || name.find('/') != std::string::npos) return name;
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    std::filesystem::path candidate =
        std::filesystem::path(dir.empty() ? "." : std::string(dir)) / name;
    if (candidate.is_relative() && !work_dir.empty()) {
      candidate = std::filesystem::path(work_dir) / candidate;
    }
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
  }
  return name;
}

// Builds argv/envp before fork: the child only calls async-signal-safe
// functions between fork and exec.
Spawned SpawnRank(const RankProcess& rank, const std::string& work_dir,
                  std::string* error) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : rank.env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = rank.argv;
  if (!args.empty()) {
    auto path = env.find("PATH");
    args[0] = ResolveOnPath(
        args[0], path != env.end() ? path->second : "/bin:/usr/bin", work_dir);
  }
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = absl::StrCat("pipe: ", std::strerror(errno));
    return {};
  }
  const pid_t parent = getpid();
  const int max_fd = static_cast<int>(sysconf(_SC_OPEN_MAX));
  pid_t pid = fork();
  if (pid < 0) {
    *error = absl::StrCat("fork: ", std::strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return {};
  }
  if (pid == 0) {
    RunShim(parent, fds[1], max_fd, work_dir, argv.data(), envp.data());
  }
  setpgid(pid, pid);  // also from the parent: no race with kill(-pid)
  close(fds[1]);
  return {pid, fds[0]};
}

std::string DescribeStatus(int global_rank, int status) {
  if (WIFSIGNALED(status))
    return absl::StrCat("rank ", global_rank, " killed by signal ",
                        WTERMSIG(status));
  // The shim reports a rank killed by signal N as 128 + N.
  if (WEXITSTATUS(status) > 128)
    return absl::StrCat("rank ", global_rank, " killed by signal ",
                        WEXITSTATUS(status) - 128);
  return absl::StrCat("rank ", global_rank, " exited with code ",
                      WEXITSTATUS(status));
}

int ExitCode(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

NodeRunner::NodeRunner(NodeRunnerOptions options)
    : options_(std::move(options)) {}

NodeRunner::~NodeRunner() {
  Cancel("worker shutting down");
  if (thread_.joinable()) thread_.join();
}

void NodeRunner::Start() {
  // Forking from this long-lived thread matters: PR_SET_PDEATHSIG fires
  // when the thread that forked exits.
  thread_ = std::thread([this] { Supervise(); });
}

void NodeRunner::Cancel(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return;
  cancelled_ = true;
  cancel_reason_ = reason.empty() ? "no reason given" : reason;
}

std::vector<int> NodeRunner::pids() {
  absl::MutexLock lock(&mu_);
  return pids_;
}

void NodeRunner::KillAll(int signal) {
  absl::MutexLock lock(&mu_);
  for (int pid : pids_)
    if (pid > 0) kill(-pid, signal);
}

void NodeRunner::Supervise() {
  std::error_code ec;
  std::filesystem::create_directories(options_.log_dir, ec);
  const size_t n = options_.ranks.size();
  std::vector<Spawned> spawned(n);
  std::vector<std::thread> readers;
  std::atomic<absl::Time> drain_until{absl::InfiniteFuture()};
  std::string failure;
  int exit_code = 0;
  for (size_t i = 0; i < n; ++i) {
    std::string error;
    spawned[i] = SpawnRank(options_.ranks[i], options_.work_dir, &error);
    if (spawned[i].pid < 0) {
      failure = absl::StrCat("rank ", options_.ranks[i].global_rank,
                             " could not start: ", error);
      exit_code = 127;
      break;
    }
    absl::MutexLock lock(&mu_);
    pids_.push_back(spawned[i].pid);
  }
  for (size_t i = 0; i < n; ++i) {
    if (spawned[i].pid < 0) continue;
    const int rank = options_.ranks[i].global_rank;
    const int fd = spawned[i].out_fd;
    const std::string path =
        absl::StrCat(options_.log_dir, "/rank-", rank, ".log");
    readers.emplace_back([this, rank, fd, path, &drain_until] {
      std::ofstream log(path, std::ios::app | std::ios::binary);
      char buf[16384];
      while (true) {
        // Until end of file, or until drain_until once the ranks are gone:
        // a process that left the rank's group (setsid) may hold the pipe
        // open for as long as it lives.
        pollfd p = {fd, POLLIN, 0};
        const int ready = poll(&p, 1, 100);
        if (ready < 0 && errno != EINTR) break;
        if (ready <= 0) {
          if (absl::Now() > drain_until.load()) break;
          continue;
        }
        const ssize_t got = read(fd, buf, sizeof(buf));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        std::string data(buf, static_cast<size_t>(got));
        log << data;
        log.flush();
        if (options_.on_output) options_.on_output(rank, data);
      }
      close(fd);
    });
  }
  if (failure.empty() && options_.on_started) options_.on_started();
  if (!failure.empty()) KillAll(SIGKILL);

  const absl::Time start = absl::Now();
  absl::Time kill_deadline = absl::InfiniteFuture();
  size_t alive = 0;
  for (const auto& s : spawned) alive += s.pid > 0;
  std::vector<bool> done(n, false);
  while (alive > 0) {
    for (size_t i = 0; i < n; ++i) {
      if (done[i] || spawned[i].pid < 0) continue;
      int status = 0;
      pid_t r = waitpid(spawned[i].pid, &status, WNOHANG);
      if (r != spawned[i].pid) continue;
      done[i] = true;
      --alive;
      if (ExitCode(status) != 0 && failure.empty()) {
        failure = DescribeStatus(options_.ranks[i].global_rank, status);
        exit_code = ExitCode(status);
        KillAll(SIGTERM);  // one rank failed: the node fails
        kill_deadline = absl::Now() + options_.kill_grace;
      }
    }
    if (alive == 0) break;
    std::string reason;
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) reason = cancel_reason_;
    }
    if (failure.empty() && !reason.empty()) {
      failure = absl::StrCat("cancelled: ", reason);
      exit_code = 143;
      KillAll(SIGTERM);
      kill_deadline = absl::Now() + options_.kill_grace;
    }
    if (failure.empty() && options_.max_runtime > absl::ZeroDuration() &&
        absl::Now() - start > options_.max_runtime) {
      failure = absl::StrCat("max_runtime exceeded (",
                             absl::FormatDuration(options_.max_runtime), ")");
      exit_code = 124;
      KillAll(SIGTERM);
      kill_deadline = absl::Now() + options_.kill_grace;
    }
    if (absl::Now() > kill_deadline) {
      KillAll(SIGKILL);
      kill_deadline = absl::InfiniteFuture();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  // Ranks are gone; kill stragglers left in their groups so pipes close,
  // and read what is left for at most kDrainAfterExit.
  KillAll(SIGKILL);
  drain_until = absl::Now() + kDrainAfterExit;
  for (auto& t : readers) t.join();
  if (absl::Now() > drain_until.load()) {
    LOG(WARNING) << "a process outside the ranks' process groups still holds "
                    "their output open; it was left running";
  }
  if (options_.on_exit) options_.on_exit(exit_code, failure);
}

}  // namespace tupa::worker

#include "worker/agent/node_runner.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
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
#include "worker/agent/rank_shim.h"

extern char** environ;

namespace tupa::worker {
namespace {

// How long a node's output is still read once its ranks are gone.
constexpr absl::Duration kDrainAfterExit = absl::Seconds(2);

// The fallback where tupa-rank-shim is not installed: runs in a child the
// worker forked; only async-signal-safe calls. Sets up what posix_spawn's
// attributes do for the program (rank_shim.h), then runs the shim.
[[noreturn]] void RunForkedShim(pid_t parent, int out_fd, int max_fd,
                                const char* work_dir, char* const* argv,
                                char* const* envp) {
  setpgid(0, 0);
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
  RunRankShim(parent, work_dir, argv, envp);
}

// Starts `shim` with posix_spawn: the rank's environment, its own process
// group, stdout/stderr on `out_fd`, stdin /dev/null, nothing else open.
// Returns the pid, or -1 with `error`.
pid_t SpawnShim(const std::string& shim, pid_t parent, int out_fd,
                const std::string& work_dir, char* const* rank_argv,
                char* const* envp, std::string* error) {
  const std::string parent_arg = std::to_string(parent);
  std::vector<char*> argv = {const_cast<char*>(shim.c_str()),
                             const_cast<char*>(parent_arg.c_str()),
                             const_cast<char*>(work_dir.c_str())};
  for (char* const* a = rank_argv; *a != nullptr; ++a) argv.push_back(*a);
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  // Signal mask and dispositions: the shim sets its own (rank_shim.h).
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  const int rc =
      posix_spawn(&pid, shim.c_str(), &actions, &attr, argv.data(), envp);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    *error = absl::StrCat("posix_spawn ", shim, ": ", std::strerror(rc));
    return -1;
  }
  return pid;
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
                  const std::string& shim, std::string* error) {
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
  if (!shim.empty()) {
    const pid_t pid = SpawnShim(shim, parent, fds[1], work_dir, argv.data(),
                                envp.data(), error);
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      return {};
    }
    return {pid, fds[0]};  // its group is set before posix_spawn returns
  }
  const int max_fd = static_cast<int>(sysconf(_SC_OPEN_MAX));
  pid_t pid = fork();
  if (pid < 0) {
    *error = absl::StrCat("fork: ", std::strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return {};
  }
  if (pid == 0) {
    RunForkedShim(parent, fds[1], max_fd, work_dir.c_str(), argv.data(),
                  envp.data());
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

std::string RankShimBesideThisProgram() {
  std::error_code ec;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path shim = self.parent_path() / kRankShimProgram;
  if (!ec && access(shim.c_str(), X_OK) == 0) return shim.string();
  LOG(WARNING) << kRankShimProgram << " not found beside " << self
               << ": ranks start from a fork of the worker (slower)";
  return "";
}

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
    spawned[i] = SpawnRank(options_.ranks[i], options_.work_dir,
                           options_.rank_shim, &error);
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

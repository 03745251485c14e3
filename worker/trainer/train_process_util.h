// Test helpers that run the real tupa-train binary as separate processes on
// loopback, torchrun-style (RANK/WORLD_SIZE/MASTER_* in the environment).
// Test-only; not thread-safe.
#ifndef TUPA_WORKER_TRAINER_TRAIN_PROCESS_UTIL_H_
#define TUPA_WORKER_TRAINER_TRAIN_PROCESS_UTIL_H_

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tupa::trainer::testing {

inline int PickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline std::string MakeTempDir(const std::string& name) {
  std::string dir = std::filesystem::temp_directory_path() /
                    absl::StrCat("tupa_train_", name, "_", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One running tupa-train process; stdout/stderr go to files.
struct TrainProcess {
  pid_t pid = -1;
  std::string out_path;
  std::string err_path;
  std::string out() const { return ReadFile(out_path); }
  std::string err() const { return ReadFile(err_path); }
};

// Starts `binary` with `args`, adding `env` to this process's environment.
inline TrainProcess StartTrain(const std::string& binary,
                               const std::vector<std::string>& args,
                               const std::map<std::string, std::string>& env,
                               const std::string& log_prefix) {
  TrainProcess p;
  p.out_path = log_prefix + ".out";
  p.err_path = log_prefix + ".err";
  p.pid = ::fork();
  if (p.pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    int out = ::open(p.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(p.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  return p;
}

// Waits for exit; returns the exit code, or -signal, or -1000 on timeout
// (the process is then killed).
inline int WaitTrain(TrainProcess& p, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = ::waitpid(p.pid, &status, WNOHANG);
    if (r == p.pid) {
      p.pid = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return -WTERMSIG(status);
    }
    if (absl::Now() > deadline) {
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, &status, 0);
      p.pid = -1;
      return -1000;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
}

// Starts `world` ranks of one run on a fresh loopback port.
inline std::vector<TrainProcess> StartRanks(
    const std::string& binary, int world, const std::vector<std::string>& args,
    const std::string& log_prefix,
    std::map<std::string, std::string> env = {}) {
  const int port = PickFreePort();
  std::vector<TrainProcess> procs;
  for (int r = 0; r < world; ++r) {
    env["RANK"] = absl::StrCat(r);
    env["WORLD_SIZE"] = absl::StrCat(world);
    env["LOCAL_RANK"] = absl::StrCat(r);
    env["MASTER_ADDR"] = "127.0.0.1";
    env["MASTER_PORT"] = absl::StrCat(port);
    if (env.count("OPENBLAS_NUM_THREADS") == 0) {
      env["OPENBLAS_NUM_THREADS"] = "1";
    }
    procs.push_back(
        StartTrain(binary, args, env, absl::StrCat(log_prefix, ".", r)));
  }
  return procs;
}

// A parsed JSON line of tupa-train output: its fields as raw text (numbers
// exactly as printed, strings without quotes). Enough for our flat lines.
using JsonLine = std::map<std::string, std::string>;

inline JsonLine ParseFlatJson(const std::string& line) {
  JsonLine out;
  std::string body = line;
  if (body.size() < 2 || body.front() != '{' || body.back() != '}') return out;
  body = body.substr(1, body.size() - 2);
  for (absl::string_view field : absl::StrSplit(body, ", ")) {
    std::vector<std::string> kv =
        absl::StrSplit(field, absl::MaxSplits(": ", 1));
    if (kv.size() != 2) continue;
    auto unquote = [](std::string s) {
      if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
        s = s.substr(1, s.size() - 2);
      }
      return s;
    };
    out[unquote(kv[0])] = unquote(kv[1]);
  }
  return out;
}

// Step lines (those with a "step" field), keyed by step.
inline std::map<int64_t, JsonLine> StepLines(const std::string& output) {
  std::map<int64_t, JsonLine> steps;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    JsonLine j = ParseFlatJson(std::string(line));
    int64_t step;
    if (j.count("step") && absl::SimpleAtoi(j["step"], &step)) steps[step] = j;
  }
  return steps;
}

inline JsonLine SummaryLine(const std::string& output) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    JsonLine j = ParseFlatJson(std::string(line));
    if (j.count("summary")) return j;
  }
  return {};
}

}  // namespace tupa::trainer::testing

#endif  // TUPA_WORKER_TRAINER_TRAIN_PROCESS_UTIL_H_

#include "common/checkpoint_fence.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tupa {
namespace {

namespace fs = std::filesystem;

// Holds flock(LOCK_EX) on <dir>/LOCK for its lifetime.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    const std::string path = (fs::path(dir) / kCheckpointLockFile).string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      status_ = absl::InternalError(
          absl::StrCat("open ", path, ": ", std::strerror(errno)));
      return;
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      status_ = absl::InternalError(
          absl::StrCat("flock ", path, ": ", std::strerror(errno)));
      return;
    }
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  const absl::Status& status() const { return status_; }

 private:
  int fd_ = -1;
  absl::Status status_;
};

absl::Status StaleError(const std::string& dir, int32_t attempt,
                        int32_t fence) {
  return absl::FailedPreconditionError(
      absl::StrCat("attempt ", attempt, " is stale: attempt ", fence,
                   " has started on checkpoint directory ", dir,
                   " (its FENCE); this attempt's checkpoints are refused"));
}

}  // namespace

int32_t ReadCheckpointFence(const std::string& dir) {
  std::ifstream in(fs::path(dir) / kCheckpointFenceFile);
  std::stringstream text;
  text << in.rdbuf();
  int32_t attempt = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text.str()), &attempt))
    return 0;
  return attempt;
}

absl::Status RaiseCheckpointFence(const std::string& dir, int32_t attempt) {
  if (attempt <= 0) return absl::OkStatus();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("create ", dir, ": ", ec.message()));
  DirLock lock(dir);
  if (!lock.status().ok()) return lock.status();
  const int32_t fence = ReadCheckpointFence(dir);
  if (fence > attempt) return StaleError(dir, attempt, fence);
  if (fence == attempt) return absl::OkStatus();
  const fs::path tmp =
      fs::path(dir) / absl::StrCat(kCheckpointFenceFile, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << attempt << "\n";
    out.flush();
    if (!out)
      return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
  }
  fs::rename(tmp, fs::path(dir) / kCheckpointFenceFile, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("rename ", tmp.string(), ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status PublishFenced(const std::string& dir, int32_t attempt,
                           const std::function<absl::Status()>& publish) {
  if (attempt <= 0) return publish();
  DirLock lock(dir);
  if (!lock.status().ok()) return lock.status();
  const int32_t fence = ReadCheckpointFence(dir);
  if (fence > attempt) return StaleError(dir, attempt, fence);
  return publish();
}

}  // namespace tupa

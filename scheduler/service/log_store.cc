#include "scheduler/service/log_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tupa::scheduler {

namespace fs = std::filesystem;

std::string LogStore::Path(int64_t job_id, int32_t attempt,
                           int32_t rank) const {
  return absl::StrCat(root_, "/", job_id, "/", attempt, "/rank-", rank, ".log");
}

absl::Status LogStore::Append(int64_t job_id, int32_t attempt, int32_t rank,
                              const std::string& data,
                              std::optional<int64_t> offset) {
  absl::MutexLock lock(&mu_);
  const std::string path = Path(job_id, attempt, rank);
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  const int64_t stored = ec ? 0 : static_cast<int64_t>(size);
  // Without an offset (an old worker): at the end.
  const int64_t at = offset.value_or(stored);
  if (at + static_cast<int64_t>(data.size()) <= stored) {
    return absl::OkStatus();  // a resent chunk, already here
  }
  // Every byte goes to its own offset: what overlaps the stored bytes is
  // skipped, and a chunk beyond them (the bytes between were lost) leaves
  // a hole instead of landing early, so later chunks still line up.
  const size_t skip = at < stored ? static_cast<size_t>(stored - at) : 0;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot open ", path));
  const char* p = data.data() + skip;
  size_t left = data.size() - skip;
  off_t pos = static_cast<off_t>(at + static_cast<int64_t>(skip));
  while (left > 0) {
    const ssize_t n = pwrite(fd, p, left, pos);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return absl::InternalError(absl::StrCat("cannot write ", path));
    }
    p += n;
    left -= static_cast<size_t>(n);
    pos += n;
  }
  close(fd);
  return absl::OkStatus();
}

std::vector<int32_t> LogStore::Ranks(int64_t job_id, int32_t attempt) const {
  std::vector<int32_t> ranks;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(
           absl::StrCat(root_, "/", job_id, "/", attempt), ec)) {
    std::string name = entry.path().stem().string();  // rank-3
    int32_t r;
    if (name.rfind("rank-", 0) == 0 && absl::SimpleAtoi(name.substr(5), &r))
      ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::string LogStore::Read(int64_t job_id, int32_t attempt, int32_t rank,
                           int64_t offset, int64_t max_bytes) const {
  std::ifstream in(Path(job_id, attempt, rank), std::ios::binary);
  if (!in) return "";
  in.seekg(offset);
  std::string out(static_cast<size_t>(max_bytes), '\0');
  in.read(out.data(), max_bytes);
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

}  // namespace tupa::scheduler

#include "scheduler/service/log_store.h"

#include <algorithm>
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
  size_t skip = 0;
  if (offset.has_value()) {
    const uintmax_t size = fs::file_size(path, ec);
    const int64_t stored = ec ? 0 : static_cast<int64_t>(size);
    if (*offset + static_cast<int64_t>(data.size()) <= stored) {
      return absl::OkStatus();  // a resent chunk, already here
    }
    if (*offset < stored) skip = static_cast<size_t>(stored - *offset);
  }
  fs::create_directories(fs::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out.write(data.data() + skip,
            static_cast<std::streamsize>(data.size() - skip));
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
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

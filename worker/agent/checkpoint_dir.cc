#include "worker/agent/checkpoint_dir.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tupa::worker {
namespace {

namespace fs = std::filesystem;

constexpr char kOwnerFile[] = "OWNER";

std::string ReadOwner(const fs::path& dir) {
  std::ifstream in(dir / kOwnerFile);
  std::stringstream text;
  text << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(text.str()));
}

absl::Status WriteOwner(const fs::path& dir, const std::string& owner) {
  const fs::path tmp = dir / absl::StrCat(kOwnerFile, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << owner << "\n";
    if (!out)
      return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, dir / kOwnerFile, ec);
  if (ec)
    return absl::InternalError(absl::StrCat(tmp.string(), ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ClaimCheckpointDir(const std::string& root,
                                               int64_t job_id,
                                               int64_t created_at_ms) {
  const fs::path dir = fs::path(root) / absl::StrCat("job-", job_id);
  std::error_code ec;
  if (created_at_ms > 0 && fs::exists(dir, ec)) {
    const std::string owner = absl::StrCat(job_id, "@", created_at_ms);
    const std::string found = ReadOwner(dir);
    if (!found.empty() && found != owner) {
      const fs::path aside =
          fs::path(root) / absl::StrCat("job-", job_id, ".stale-", found);
      fs::rename(dir, aside, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("moving another job's checkpoints ", dir.string(),
                         " aside: ", ec.message()));
      }
    }
  }
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("creating ", dir.string(), ": ", ec.message()));
  }
  if (created_at_ms > 0) {
    const std::string owner = absl::StrCat(job_id, "@", created_at_ms);
    if (ReadOwner(dir) != owner) {
      if (absl::Status s = WriteOwner(dir, owner); !s.ok()) return s;
    }
  }
  return dir.string();
}

}  // namespace tupa::worker

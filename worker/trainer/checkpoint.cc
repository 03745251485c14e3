#include "worker/trainer/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checkpoint_fence.h"
#include "common/status_macros.h"

namespace tupa::trainer {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[] = "TUPACKPT";
constexpr uint32_t kVersion = 1;

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86, arm64)
    out_.append(b, sizeof(T));
  }
  void PutBytes(const void* p, size_t n) {
    out_.append(static_cast<const char*>(p), n);
  }
  void PutFloats(const std::vector<float>& v) {
    Put<uint64_t>(v.size());
    PutBytes(v.data(), v.size() * sizeof(float));
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  bool Get(T& v) {
    if (pos_ + sizeof(T) > in_.size()) return false;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetBytes(void* p, size_t n) {
    if (pos_ + n > in_.size()) return false;
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool GetFloats(std::vector<float>& v) {
    uint64_t n;
    if (!Get(n) || n > (in_.size() - pos_) / sizeof(float)) return false;
    v.resize(n);
    return GetBytes(v.data(), n * sizeof(float));
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

absl::Status ErrnoError(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// Writes `data` to `tmp` and fsyncs it.
absl::Status WriteTempDurably(const std::string& tmp, const std::string& data) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open " + tmp);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      absl::Status s = ErrnoError("write " + tmp);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) {
    absl::Status s = ErrnoError("fsync " + tmp);
    ::close(fd);
    return s;
  }
  ::close(fd);
  return absl::OkStatus();
}

// Renames `tmp` to `path` and fsyncs the directory.
absl::Status RenameDurably(const std::string& tmp, const std::string& path) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoError("rename " + tmp);
  }
  const std::string dir = fs::path(path).parent_path().string();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return absl::OkStatus();
}

// Checkpoint files in dir, sorted by step ascending.
std::vector<std::pair<int64_t, std::string>> ListCheckpoints(
    const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, "ckpt-") || !absl::EndsWith(name, ".bin")) {
      continue;
    }
    int64_t step;
    if (!absl::SimpleAtoi(name.substr(5, name.size() - 9), &step)) continue;
    out.emplace_back(step, entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

absl::Status WriteCheckpoint(const std::string& dir, const CheckpointState& s,
                             int keep, int32_t attempt) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("create ", dir, ": ", ec.message()));
  }
  Writer w;
  w.PutBytes(kMagic, 8);
  w.Put<uint32_t>(kVersion);
  w.Put<int64_t>(s.step);
  w.Put<int64_t>(s.optimizer_steps);
  w.Put<uint64_t>(s.seed);
  w.Put<int32_t>(s.world_size);
  w.Put<int32_t>(static_cast<int32_t>(s.widths.size()));
  for (int32_t x : s.widths) w.Put<int32_t>(x);
  w.Put<uint32_t>(static_cast<uint32_t>(s.optimizer.size()));
  w.PutBytes(s.optimizer.data(), s.optimizer.size());
  w.Put<float>(s.loss_scale);
  w.Put<int64_t>(s.good_steps);
  w.Put<double>(s.last_loss);
  w.PutFloats(s.params);
  w.PutFloats(s.state0);
  w.PutFloats(s.state1);
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(w.out().data()),
            static_cast<uInt>(w.out().size())));
  w.Put<uint32_t>(crc);
  const std::string path = absl::StrFormat("%s/ckpt-%012d.bin", dir, s.step);
  // The temporary name is the attempt's own: two attempts never share one.
  const std::string tmp = absl::StrCat(path, ".a", attempt, ".tmp");
  if (absl::Status st = WriteTempDurably(tmp, w.out()); !st.ok()) {
    fs::remove(tmp, ec);
    return st;
  }
  // Only the attempt the fence allows renames into place and prunes: a
  // stale one could otherwise replace or delete what the current attempt
  // resumes from.
  absl::Status published = PublishFenced(dir, attempt, [&] {
    RETURN_IF_ERROR(RenameDurably(tmp, path));
    auto all = ListCheckpoints(dir);
    for (size_t i = 0; i + keep < all.size(); ++i) {
      fs::remove(all[i].second, ec);
    }
    return absl::OkStatus();
  });
  if (!published.ok()) fs::remove(tmp, ec);
  return published;
}

std::optional<std::string> FindLatestCheckpoint(const std::string& dir) {
  auto all = ListCheckpoints(dir);
  if (all.empty()) return std::nullopt;
  return all.back().second;
}

absl::StatusOr<CheckpointState> ReadCheckpoint(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string data((std::istreambuf_iterator<char>(f)),
                   std::istreambuf_iterator<char>());
  auto corrupt = [&](const char* why) {
    return absl::DataLossError(absl::StrCat(path, ": ", why));
  };
  if (data.size() < 12 + 4 || std::memcmp(data.data(), kMagic, 8) != 0) {
    return corrupt("not a checkpoint");
  }
  uint32_t stored_crc;
  std::memcpy(&stored_crc, data.data() + data.size() - 4, 4);
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(data.data()),
            static_cast<uInt>(data.size() - 4)));
  if (crc != stored_crc) return corrupt("checksum mismatch");
  Reader r(data);
  char magic[8];
  uint32_t version;
  CheckpointState s;
  int32_t n_widths;
  uint32_t name_len;
  if (!r.GetBytes(magic, 8) || !r.Get(version) || version != kVersion) {
    return corrupt("unsupported version");
  }
  if (!r.Get(s.step) || !r.Get(s.optimizer_steps) || !r.Get(s.seed) ||
      !r.Get(s.world_size) || !r.Get(n_widths) || n_widths < 0 ||
      n_widths > 1024) {
    return corrupt("bad header");
  }
  s.widths.resize(n_widths);
  for (int32_t& x : s.widths) {
    if (!r.Get(x)) return corrupt("truncated");
  }
  if (!r.Get(name_len) || name_len > 64) return corrupt("bad optimizer");
  s.optimizer.resize(name_len);
  if (!r.GetBytes(s.optimizer.data(), name_len) || !r.Get(s.loss_scale) ||
      !r.Get(s.good_steps) || !r.Get(s.last_loss) || !r.GetFloats(s.params) ||
      !r.GetFloats(s.state0) || !r.GetFloats(s.state1)) {
    return corrupt("truncated");
  }
  if (r.pos() != data.size() - 4) return corrupt("trailing bytes");
  return s;
}

absl::StatusOr<std::optional<std::pair<std::string, CheckpointState>>>
ReadNewestGoodCheckpoint(const std::string& dir) {
  auto all = ListCheckpoints(dir);
  absl::Status newest_error;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    absl::StatusOr<CheckpointState> state = ReadCheckpoint(it->second);
    if (state.ok()) return std::make_pair(it->second, *std::move(state));
    if (!absl::IsDataLoss(state.status())) return state.status();
    if (newest_error.ok()) newest_error = state.status();
  }
  if (!newest_error.ok()) return newest_error;
  return std::nullopt;
}

absl::StatusOr<std::vector<std::pair<std::string, CheckpointState>>>
ReadGoodCheckpoints(const std::string& dir) {
  std::vector<std::pair<std::string, CheckpointState>> out;
  auto all = ListCheckpoints(dir);
  absl::Status newest_error;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    absl::StatusOr<CheckpointState> state = ReadCheckpoint(it->second);
    if (state.ok()) {
      out.emplace_back(it->second, *std::move(state));
      continue;
    }
    if (!absl::IsDataLoss(state.status())) return state.status();
    if (newest_error.ok()) newest_error = state.status();
  }
  if (out.empty() && !newest_error.ok()) return newest_error;
  return out;
}

std::string ShardCheckpointDir(const std::string& dir, int tp_rank,
                               int tensor) {
  if (tensor <= 1) return dir;
  return absl::StrFormat("%s/tensor-%d-of-%d", dir, tp_rank, tensor);
}

absl::Status CheckCheckpointTensorLayout(const std::string& dir, int tensor) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    int found = 0;
    if (absl::StartsWith(name, "ckpt-") && absl::EndsWith(name, ".bin")) {
      found = 1;
    } else if (absl::StartsWith(name, "tensor-") && entry.is_directory(ec)) {
      const size_t of = name.rfind("-of-");
      if (of == std::string::npos ||
          !absl::SimpleAtoi(name.substr(of + 4), &found)) {
        continue;
      }
      if (ListCheckpoints(entry.path().string()).empty()) continue;
    } else {
      continue;
    }
    if (found != tensor) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir, " holds checkpoints written with train.parallel.tensor ", found,
          "; this run has ", tensor,
          " (resharding to another degree is not supported)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tupa::trainer

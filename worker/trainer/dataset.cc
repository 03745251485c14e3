#include "worker/trainer/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/trainer/rng.h"

namespace tupa::trainer {
namespace {

int MaxLabelPlusOne(const std::vector<int32_t>& labels) {
  int32_t m = -1;
  for (int32_t l : labels) m = std::max(m, l);
  return m + 1;
}

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

template <typename T>
T LittleEndian(const unsigned char* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= T(p[i]) << (8 * i);
  return v;
}

// Finds `dir/name` or `dir/name.gz`.
absl::StatusOr<std::string> FindFile(const std::string& dir,
                                     const std::string& name) {
  for (const std::string& candidate :
       {absl::StrCat(dir, "/", name), absl::StrCat(dir, "/", name, ".gz")}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(dir, "/", name, "[.gz] not found"));
}

// Parses an IDX file; returns its dims and payload (uint8 only).
absl::StatusOr<std::pair<std::vector<uint32_t>, std::string>> ReadIdx(
    const std::string& path) {
  absl::StatusOr<std::string> data = ReadMaybeGzip(path);
  if (!data.ok()) return data.status();
  const auto* p = reinterpret_cast<const unsigned char*>(data->data());
  if (data->size() < 4 || p[0] != 0 || p[1] != 0 || p[2] != 0x08) {
    return absl::DataLossError(absl::StrCat(path, ": not a uint8 IDX file"));
  }
  const int ndim = p[3];
  if (data->size() < 4 + 4 * static_cast<size_t>(ndim)) {
    return absl::DataLossError(absl::StrCat(path, ": truncated header"));
  }
  std::vector<uint32_t> dims(ndim);
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  // The product of the dims, checked against the payload as it grows: a
  // header whose product wraps around must not pass for a small file.
  size_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    dims[i] = BigEndian32(p + 4 + 4 * i);
    if (__builtin_mul_overflow(total, static_cast<size_t>(dims[i]), &total) ||
        total > data->size()) {
      return absl::DataLossError(absl::StrCat(path, ": size mismatch"));
    }
  }
  if (data->size() != header + total) {
    return absl::DataLossError(absl::StrCat(path, ": size mismatch"));
  }
  return std::make_pair(std::move(dims), data->substr(header));
}

absl::StatusOr<Dataset> LoadIdxSplit(const std::string& dir,
                                     const std::string& prefix) {
  absl::StatusOr<std::string> images_path =
      FindFile(dir, prefix + "-images-idx3-ubyte");
  if (!images_path.ok()) return images_path.status();
  absl::StatusOr<std::string> labels_path =
      FindFile(dir, prefix + "-labels-idx1-ubyte");
  if (!labels_path.ok()) return labels_path.status();
  auto images = ReadIdx(*images_path);
  if (!images.ok()) return images.status();
  auto labels = ReadIdx(*labels_path);
  if (!labels.ok()) return labels.status();
  const auto& idims = images->first;
  if (idims.size() < 2 || labels->first.size() != 1 ||
      labels->first[0] != idims[0]) {
    return absl::DataLossError(
        absl::StrCat(dir, ": ", prefix, " images and labels disagree"));
  }
  // idims[0] > 0 rows share the payload, so their product fits in it.
  int64_t features = 1;
  for (size_t i = 1; i < idims.size(); ++i) features *= idims[i];
  if (features > (1 << 24)) {
    return absl::DataLossError(absl::StrCat(dir, ": ", prefix, " has ",
                                            features, " features per sample"));
  }
  const std::string& ybytes = labels->second;
  std::vector<int32_t> y(ybytes.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<uint8_t>(ybytes[i]);
  std::vector<uint8_t> x(images->second.begin(), images->second.end());
  return Dataset::FromU8(idims[0], static_cast<int>(features), std::move(x),
                         std::move(y));
}

absl::StatusOr<Dataset> LoadRawFile(const std::string& path) {
  absl::StatusOr<std::string> data = ReadMaybeGzip(path);
  if (!data.ok()) return data.status();
  const auto* p = reinterpret_cast<const unsigned char*>(data->data());
  constexpr size_t kHeader = 8 + 8 + 4 + 4;
  if (data->size() < kHeader || std::memcmp(p, "TUPARAW1", 8) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": not a TUPARAW1 file"));
  }
  const uint64_t n = LittleEndian<uint64_t>(p + 8);
  const uint32_t features = LittleEndian<uint32_t>(p + 16);
  const uint32_t dtype = LittleEndian<uint32_t>(p + 20);
  if (dtype > 1 || features == 0) {
    return absl::DataLossError(absl::StrCat(path, ": bad dtype/features"));
  }
  const size_t elem = dtype == 0 ? 1 : 4;
  // Checked: a header whose sizes wrap around must not pass for a small
  // file (and then ask for an impossible allocation).
  size_t row = 0, total = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(features), elem, &row) ||
      __builtin_add_overflow(row, size_t{4}, &row) ||
      __builtin_mul_overflow(static_cast<size_t>(n), row, &total) ||
      __builtin_add_overflow(total, kHeader, &total) || total != data->size()) {
    return absl::DataLossError(absl::StrCat(path, ": size mismatch"));
  }
  const size_t xbytes = static_cast<size_t>(n) * features * elem;
  std::vector<int32_t> y(n);
  for (uint64_t i = 0; i < n; ++i) {
    y[i] = LittleEndian<int32_t>(p + kHeader + xbytes + 4 * i);
    if (y[i] < 0) {
      return absl::DataLossError(absl::StrCat(path, ": negative label"));
    }
  }
  if (dtype == 0) {
    std::vector<uint8_t> x(p + kHeader, p + kHeader + xbytes);
    return Dataset::FromU8(n, features, std::move(x), std::move(y));
  }
  std::vector<float> x(n * features);
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t bits = LittleEndian<uint32_t>(p + kHeader + 4 * i);
    std::memcpy(&x[i], &bits, 4);
  }
  return Dataset::FromF32(n, features, std::move(x), std::move(y));
}

// Gaussian clusters: class c has a random centre; a sample is its class
// centre plus unit noise, so the task is learnable but not trivial.
Dataset MakeSynthetic(int64_t n, int features, int classes, uint64_t seed,
                      uint64_t stream) {
  Rng centre_rng(seed, 1000);
  std::vector<float> centres(static_cast<size_t>(classes) * features);
  // Centres ~3 noise standard deviations apart whatever the width.
  const float spread = 2.0f / std::sqrt(static_cast<float>(features));
  for (float& c : centres) c = spread * centre_rng.Normal();
  Rng rng(seed, stream);
  std::vector<float> x(static_cast<size_t>(n) * features);
  std::vector<int32_t> y(n);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<int32_t>(rng.Below(classes));
    const float* c = &centres[static_cast<size_t>(y[i]) * features];
    float* row = &x[static_cast<size_t>(i) * features];
    for (int f = 0; f < features; ++f) row[f] = c[f] + rng.Normal();
  }
  return Dataset::FromF32(n, features, std::move(x), std::move(y));
}

absl::Status CheckShape(const Dataset& d, int features, int classes,
                        const char* split) {
  if (d.features() != features) {
    return absl::InvalidArgumentError(
        absl::StrCat("data: ", split, " has ", d.features(),
                     " features but the model's input is ", features));
  }
  if (d.num_classes() > classes) {
    return absl::InvalidArgumentError(
        absl::StrCat("data: ", split, " has labels up to ", d.num_classes() - 1,
                     " but the model has ", classes, " outputs"));
  }
  if (d.size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("data: ", split, " empty"));
  }
  return absl::OkStatus();
}

}  // namespace

Dataset Dataset::FromU8(int64_t n, int features, std::vector<uint8_t> x,
                        std::vector<int32_t> labels) {
  Dataset d;
  d.n_ = n;
  d.features_ = features;
  d.classes_ = MaxLabelPlusOne(labels);
  d.u8_ = std::move(x);
  d.labels_ = std::move(labels);
  return d;
}

Dataset Dataset::FromF32(int64_t n, int features, std::vector<float> x,
                         std::vector<int32_t> labels) {
  Dataset d;
  d.n_ = n;
  d.features_ = features;
  d.classes_ = MaxLabelPlusOne(labels);
  d.f32_ = std::move(x);
  d.labels_ = std::move(labels);
  return d;
}

void Dataset::Gather(const int64_t* indices, int count, float* x,
                     int32_t* y) const {
  const size_t f = static_cast<size_t>(features_);
  for (int i = 0; i < count; ++i) {
    const int64_t idx = indices[i];
    float* __restrict out = x + i * f;
    if (!u8_.empty()) {
      const uint8_t* __restrict in = u8_.data() + idx * f;
      for (size_t k = 0; k < f; ++k) out[k] = in[k] / 255.0f;
    } else {
      std::memcpy(out, f32_.data() + idx * f, f * sizeof(float));
    }
    y[i] = labels_[idx];
  }
}

absl::StatusOr<std::string> ReadMaybeGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  gzbuffer(f, 1 << 20);
  std::string out;
  char buf[1 << 16];
  while (true) {
    int r = gzread(f, buf, sizeof(buf));
    if (r < 0) {
      int errnum;
      std::string msg = gzerror(f, &errnum);
      gzclose(f);
      return absl::DataLossError(absl::StrCat(path, ": ", msg));
    }
    if (r == 0) break;
    out.append(buf, r);
  }
  gzclose(f);
  return out;
}

absl::StatusOr<DataSplits> LoadData(const DataConfig& config, int features,
                                    int classes, uint64_t seed) {
  DataSplits splits;
  if (config.format == "synthetic" || config.format.empty()) {
    const int64_t n = config.samples > 0 ? config.samples : 8192;
    const int64_t tn = config.test_samples > 0 ? config.test_samples : 1024;
    splits.train = MakeSynthetic(n, features, classes, seed, 1);
    splits.test = MakeSynthetic(tn, features, classes, seed, 2);
    return splits;
  }
  if (config.path.empty()) {
    return absl::InvalidArgumentError("data.path: required for " +
                                      config.format);
  }
  if (config.format == "idx") {
    absl::StatusOr<Dataset> train = LoadIdxSplit(config.path, "train");
    if (!train.ok()) return train.status();
    splits.train = std::move(*train);
    absl::StatusOr<Dataset> test = LoadIdxSplit(config.path, "t10k");
    if (test.ok()) {
      splits.test = std::move(*test);
    } else if (!absl::IsNotFound(test.status())) {
      return test.status();
    }
  } else if (config.format == "raw") {
    absl::StatusOr<std::string> train_path = FindFile(config.path, "train.bin");
    if (!train_path.ok()) return train_path.status();
    absl::StatusOr<Dataset> train = LoadRawFile(*train_path);
    if (!train.ok()) return train.status();
    splits.train = std::move(*train);
    absl::StatusOr<std::string> test_path = FindFile(config.path, "test.bin");
    if (test_path.ok()) {
      absl::StatusOr<Dataset> test = LoadRawFile(*test_path);
      if (!test.ok()) return test.status();
      splits.test = std::move(*test);
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.format: want idx|raw|synthetic, got \"", config.format, "\""));
  }
  if (absl::Status s = CheckShape(splits.train, features, classes, "train");
      !s.ok()) {
    return s;
  }
  if (splits.test.has_value()) {
    if (absl::Status s = CheckShape(*splits.test, features, classes, "test");
        !s.ok()) {
      return s;
    }
  }
  return splits;
}

}  // namespace tupa::trainer

#include "worker/trainer/dataset.h"

#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tupa::trainer {
namespace {

namespace fs = std::filesystem;

std::string TempDir() {
  std::string t =
      fs::temp_directory_path() /
      absl::StrCat(
          "dataset_test_", ::getpid(), "_",
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(t);
  fs::create_directories(t);
  return t;
}

void WriteGz(const std::string& path, const std::string& data) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, data.data(), static_cast<unsigned>(data.size()));
  gzclose(f);
}

std::string IdxHeader(uint8_t ndim, std::initializer_list<uint32_t> dims) {
  std::string h = {0, 0, 8, static_cast<char>(ndim)};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<char>(d >> s));
  }
  return h;
}

TEST(DatasetTest, ReadsGzippedAndPlainIdxScaledTo01) {
  const std::string dir = TempDir();
  // 3 images of 2x2; train gzipped, test plain.
  std::string images = IdxHeader(3, {3, 2, 2}) + std::string(
                                                     "\x00\xff\x80\x01"
                                                     "\x02\x03\x04\x05"
                                                     "\x06\x07\x08\x09",
                                                     12);
  std::string labels = IdxHeader(1, {3}) + std::string("\x01\x00\x02", 3);
  WriteGz(dir + "/train-images-idx3-ubyte.gz", images);
  WriteGz(dir + "/train-labels-idx1-ubyte.gz", labels);
  std::ofstream(dir + "/t10k-images-idx3-ubyte", std::ios::binary) << images;
  std::ofstream(dir + "/t10k-labels-idx1-ubyte", std::ios::binary) << labels;
  DataConfig c;
  c.format = "idx";
  c.path = dir;
  auto d = LoadData(c, 4, 3, 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->train.size(), 3);
  ASSERT_TRUE(d->test.has_value());
  const int64_t idx[] = {0, 2};
  float x[8];
  int32_t y[2];
  d->train.Gather(idx, 2, x, y);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 1.0f);
  EXPECT_EQ(x[2], 128.0f / 255.0f);
  EXPECT_EQ(x[4], 6.0f / 255.0f);
  EXPECT_EQ(y[0], 1);
  EXPECT_EQ(y[1], 2);
  // The model's input width must match.
  EXPECT_EQ(LoadData(c, 5, 3, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  fs::remove_all(dir);
}

TEST(DatasetTest, ReadsRawFormat) {
  const std::string dir = TempDir();
  std::string raw = "TUPARAW1";
  auto put = [&raw](const void* p, size_t n) {
    raw.append(static_cast<const char*>(p), n);
  };
  const uint64_t n = 2;
  const uint32_t features = 3, dtype = 1;
  put(&n, 8);
  put(&features, 4);
  put(&dtype, 4);
  const float x[] = {0.5f, -1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  put(x, sizeof(x));
  const int32_t y[] = {4, 1};
  put(y, sizeof(y));
  std::ofstream(dir + "/train.bin", std::ios::binary) << raw;
  DataConfig c;
  c.format = "raw";
  c.path = dir;
  auto d = LoadData(c, 3, 5, 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->test.has_value());
  const int64_t idx[] = {1};
  float out[3];
  int32_t label;
  d->train.Gather(idx, 1, out, &label);
  EXPECT_EQ(out[2], 5.0f);
  EXPECT_EQ(label, 1);
  // Labels beyond the model's outputs are rejected.
  EXPECT_FALSE(LoadData(c, 3, 4, 0).ok());
  // Truncation is data loss.
  std::ofstream(dir + "/train.bin", std::ios::binary) << raw.substr(0, 30);
  EXPECT_EQ(LoadData(c, 3, 5, 0).status().code(), absl::StatusCode::kDataLoss);
  fs::remove_all(dir);
}

TEST(DatasetTest, SyntheticIsDeterministicInTheSeed) {
  DataConfig c;
  c.samples = 64;
  c.test_samples = 16;
  auto a = LoadData(c, 5, 3, 11);
  auto b = LoadData(c, 5, 3, 11);
  auto other = LoadData(c, 5, 3, 12);
  ASSERT_TRUE(a.ok() && b.ok() && other.ok());
  EXPECT_EQ(a->train.size(), 64);
  EXPECT_EQ(a->test->size(), 16);
  const int64_t idx[] = {7};
  float xa[5], xb[5], xo[5];
  int32_t ya, yb, yo;
  a->train.Gather(idx, 1, xa, &ya);
  b->train.Gather(idx, 1, xb, &yb);
  other->train.Gather(idx, 1, xo, &yo);
  EXPECT_EQ(std::memcmp(xa, xb, sizeof(xa)), 0);
  EXPECT_NE(std::memcmp(xa, xo, sizeof(xa)), 0);
}

TEST(DatasetTest, HeadersWhoseSizesWrapAroundAreDataLossNotCrashes) {
  const std::string dir = TempDir();
  // Raw: n = 2^62 samples of 4 one-byte features: n x (4 + 4) wraps to 0.
  std::string raw = "TUPARAW1";
  const uint64_t n = uint64_t{1} << 62;
  const uint32_t features = 4, dtype = 0;
  raw.append(reinterpret_cast<const char*>(&n), 8);
  raw.append(reinterpret_cast<const char*>(&features), 4);
  raw.append(reinterpret_cast<const char*>(&dtype), 4);
  std::ofstream(dir + "/train.bin", std::ios::binary) << raw;
  DataConfig c;
  c.format = "raw";
  c.path = dir;
  EXPECT_EQ(LoadData(c, 4, 2, 0).status().code(), absl::StatusCode::kDataLoss);

  // IDX: images whose dims multiply to 65536 mod 2^64 over a 64 KiB
  // payload, and 65537 labels to match the first dim.
  const std::string idx = TempDir() + "_idx";
  fs::create_directories(idx);
  std::ofstream(idx + "/train-images-idx3-ubyte", std::ios::binary)
      << IdxHeader(4, {65537, 65536, 1370698735u, 3766967055u})
      << std::string(65536, '\0');
  std::ofstream(idx + "/train-labels-idx1-ubyte", std::ios::binary)
      << IdxHeader(1, {65537}) << std::string(65537, '\0');
  c.format = "idx";
  c.path = idx;
  EXPECT_EQ(LoadData(c, 65536, 2, 0).status().code(),
            absl::StatusCode::kDataLoss);
  fs::remove_all(dir);
  fs::remove_all(idx);
}

TEST(DatasetTest, MissingFilesAreNotFound) {
  DataConfig c;
  c.format = "idx";
  c.path = "/nonexistent/tupa/data";
  EXPECT_EQ(LoadData(c, 4, 3, 0).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tupa::trainer

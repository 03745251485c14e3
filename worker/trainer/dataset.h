// Datasets for the trainer: IDX files (MNIST / Fashion-MNIST, gzipped or
// not), the raw binary format of docs/trainer.md, and seeded synthetic data.
// A Dataset is immutable after loading and safe to read from many threads.
#ifndef TUPA_WORKER_TRAINER_DATASET_H_
#define TUPA_WORKER_TRAINER_DATASET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tupa::trainer {

// In-memory samples: either uint8 features (scaled by 1/255 when gathered,
// as torch_mlp.py does) or fp32 features, plus int32 labels.
class Dataset {
 public:
  static Dataset FromU8(int64_t n, int features, std::vector<uint8_t> x,
                        std::vector<int32_t> labels);
  static Dataset FromF32(int64_t n, int features, std::vector<float> x,
                         std::vector<int32_t> labels);

  int64_t size() const { return n_; }
  int features() const { return features_; }
  // Largest label + 1.
  int num_classes() const { return classes_; }

  // Writes rows `indices[0..count)` as fp32 into x[count, features] and
  // their labels into y[count].
  void Gather(const int64_t* indices, int count, float* x, int32_t* y) const;

 private:
  int64_t n_ = 0;
  int features_ = 0;
  int classes_ = 0;
  std::vector<uint8_t> u8_;
  std::vector<float> f32_;
  std::vector<int32_t> labels_;
};

struct DataConfig {
  std::string format = "synthetic";  // "idx" | "raw" | "synthetic"
  std::string path;                  // directory for idx/raw
  int64_t samples = 0;               // synthetic; 0 = 8192
  int64_t test_samples = 0;          // synthetic; 0 = 1024
};

struct DataSplits {
  Dataset train;
  std::optional<Dataset> test;
};

// Loads the train (and, when present, test) split. `features`/`classes`
// are the model's input/output widths: synthetic data is generated with
// them, file data is checked against them (InvalidArgument on mismatch,
// NotFound for missing files, DataLoss for corrupt ones).
absl::StatusOr<DataSplits> LoadData(const DataConfig& config, int features,
                                    int classes, uint64_t seed);

// Reads a file, gunzipping it when it is gzip (plain files pass through).
absl::StatusOr<std::string> ReadMaybeGzip(const std::string& path);

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_DATASET_H_

// The defaults of the `train:` section (DESIGN §4), in one place: the
// scheduler applies them to a stored spec (ApplyJobSpecDefaults) and
// tupa-train to what it is given (trainer::TrainConfigFromSpec), so a spec
// means the same run wherever it is read. proto3 has no presence: a zero
// or empty field means "the default" below.
#ifndef TUPA_COMMON_TRAIN_DEFAULTS_H_
#define TUPA_COMMON_TRAIN_DEFAULTS_H_

#include <cstdint>

namespace tupa::train_defaults {

inline constexpr char kModelType[] = "mlp";
inline constexpr int kBatchSize = 128;  // per rank
inline constexpr int kEpochs = 1;       // when neither epochs nor steps
inline constexpr char kPrecision[] = "fp32";
inline constexpr int64_t kLogEvery = 50;  // steps between progress lines
// What tupa-train reads when run by hand without a data section; the
// scheduler requires train.data.format.
inline constexpr char kDataFormat[] = "synthetic";

inline constexpr char kOptimizer[] = "adamw";
inline constexpr double kLr = 1e-3;
inline constexpr double kAdamwWeightDecay = 0.01;  // sgd: 0
inline constexpr double kMomentum = 0.9;           // sgd
inline constexpr double kBeta1 = 0.9;
inline constexpr double kBeta2 = 0.999;
inline constexpr double kEps = 1e-8;
inline constexpr char kSchedule[] = "constant";

}  // namespace tupa::train_defaults

#endif  // TUPA_COMMON_TRAIN_DEFAULTS_H_

// Deterministic, platform-independent random numbers for the trainer.
// Everything random in a run (initial weights, shuffles, synthetic data) is
// a pure function of (seed, stream, counter), so a resumed run needs no RNG
// state beyond the seed and the step. (std:: distributions are
// implementation-defined and would break reproducibility across libraries.)
#ifndef TUPA_WORKER_TRAINER_RNG_H_
#define TUPA_WORKER_TRAINER_RNG_H_

#include <cmath>
#include <cstdint>

namespace tupa::trainer {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A small sequential generator (SplitMix64 stream). Not thread-safe.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream)
      : state_(SplitMix64(seed ^ SplitMix64(stream + 0x632be59bd9b4e019ULL))) {}

  uint64_t NextU64() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 24 random bits (exact in float).
  float Uniform() { return static_cast<float>(NextU64() >> 40) * 0x1.0p-24f; }
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n), n > 0 (multiply-shift; bias < 2^-40).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>(
        (static_cast<unsigned __int128>(NextU64()) * n) >> 64);
  }
  // Standard normal (Box-Muller, double internally).
  float Normal() {
    double u1 = (static_cast<double>(NextU64() >> 11) + 1.0) * 0x1.0p-53;
    double u2 = static_cast<double>(NextU64() >> 11) * 0x1.0p-53;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                              std::cos(6.283185307179586 * u2));
  }

 private:
  uint64_t state_;
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_RNG_H_

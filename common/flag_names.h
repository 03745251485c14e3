// Lets daemons accept `--worker-timeout` as well as absl's
// `--worker_timeout`: rewrites dashes in flag names (not values) in place.
#ifndef TUPA_COMMON_FLAG_NAMES_H_
#define TUPA_COMMON_FLAG_NAMES_H_

namespace tupa {

// Call before absl::ParseCommandLine. Stops at a bare "--".
void NormalizeFlagNames(int argc, char** argv);

}  // namespace tupa

#endif  // TUPA_COMMON_FLAG_NAMES_H_

// Process-wide logging setup (glog) for the daemons and tools.
#ifndef TUPA_COMMON_LOGGING_H_
#define TUPA_COMMON_LOGGING_H_

namespace tupa {

// Logs to stderr with glog's prefix; call once at the top of main().
void InitLogging(const char* argv0);

}  // namespace tupa

#endif  // TUPA_COMMON_LOGGING_H_

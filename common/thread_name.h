// Names the calling thread for top -H, perf and /proc/<pid>/task/*/comm, so
// that a profile of a daemon splits its own threads (the scheduler's loop,
// its worker inbox, the submit committer) from gRPC's.
#ifndef TUPA_COMMON_THREAD_NAME_H_
#define TUPA_COMMON_THREAD_NAME_H_

#include <string>

namespace tupa {

// Linux keeps the first 15 bytes of `name`; longer names are cut there.
void NameThisThread(const std::string& name);

// The calling thread's name as the kernel has it.
std::string ThisThreadName();

}  // namespace tupa

#endif  // TUPA_COMMON_THREAD_NAME_H_

// Reading a whole small file (configs, certificates, price catalogs).
#ifndef TUPA_COMMON_FILES_H_
#define TUPA_COMMON_FILES_H_

#include <optional>
#include <string>

namespace tupa {

// The file's bytes, or nullopt when it cannot be opened or read. Callers
// say which flag or field named the path in their own error.
std::optional<std::string> ReadWholeFile(const std::string& path);

}  // namespace tupa

#endif  // TUPA_COMMON_FILES_H_

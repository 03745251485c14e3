#include "common/flag_names.h"

#include <cstring>

namespace tupa {

void NormalizeFlagNames(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* arg = argv[i];
    if (std::strcmp(arg, "--") == 0) return;
    if (arg[0] != '-') continue;
    char* name = arg + (arg[1] == '-' ? 2 : 1);
    for (char* p = name; *p && *p != '='; ++p)
      if (*p == '-') *p = '_';
  }
}

}  // namespace tupa

#include "common/logging.h"

#include <glog/logging.h>

namespace tupa {

void InitLogging(const char* argv0) {
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv0);
}

}  // namespace tupa

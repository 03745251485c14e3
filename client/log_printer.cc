#include "client/log_printer.h"

#include "absl/strings/str_cat.h"

namespace tupa::client {

void LogPrinter::Write(const v1::LogChunk& chunk) {
  if (!prefix_) {
    out_ << chunk.data();
    out_.flush();
    return;
  }
  std::string& pending = partial_[{chunk.attempt(), chunk.rank()}];
  pending += chunk.data();
  const std::string label = absl::StrCat("[rank ", chunk.rank(), "] ");
  size_t begin = 0;
  for (size_t nl = pending.find('\n'); nl != std::string::npos;
       nl = pending.find('\n', begin)) {
    out_ << label;
    out_.write(pending.data() + begin, nl + 1 - begin);
    begin = nl + 1;
  }
  pending.erase(0, begin);
  out_.flush();
}

void LogPrinter::Finish() {
  for (auto& [key, pending] : partial_) {
    if (pending.empty()) continue;
    out_ << "[rank " << key.second << "] " << pending << "\n";
    pending.clear();
  }
  out_.flush();
}

}  // namespace tupa::client

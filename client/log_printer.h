// Writes LogChunks to a stream as they arrive. Chunks from several ranks
// interleave, so with a prefix each complete line is written as
// "[rank R] line" and partial lines wait for the rest of their rank's
// output; without one, bytes are copied as they come. Not thread-safe.
#ifndef TUPA_CLIENT_LOG_PRINTER_H_
#define TUPA_CLIENT_LOG_PRINTER_H_

#include <map>
#include <ostream>
#include <string>
#include <utility>

#include "tupa/v1/job_service.pb.h"

namespace tupa::client {

class LogPrinter {
 public:
  LogPrinter(std::ostream& out, bool prefix) : out_(out), prefix_(prefix) {}
  // Writes what `chunk` completes, and flushes.
  void Write(const v1::LogChunk& chunk);
  // Writes every rank's unfinished last line, ending it with '\n'.
  void Finish();

 private:
  std::ostream& out_;
  const bool prefix_;
  // (attempt, rank) -> bytes after the last newline.
  std::map<std::pair<int, int>, std::string> partial_;
};

}  // namespace tupa::client

#endif  // TUPA_CLIENT_LOG_PRINTER_H_

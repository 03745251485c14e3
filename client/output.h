// Output helpers for the CLI: aligned tables, protobuf JSON, and the
// humanised forms of times, durations and counts. Pure; thread-safe.
#ifndef TUPA_CLIENT_OUTPUT_H_
#define TUPA_CLIENT_OUTPUT_H_

#include <google/protobuf/message.h>
#include <google/protobuf/timestamp.pb.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tupa::client {

enum class OutputFormat { kTable, kJson };

// "table" or "json" (`-o`); anything else is InvalidArgument naming -o.
absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view text);

// A table with a header row. Columns are left-aligned and separated by two
// spaces; the last column is not padded. Rows shorter than the header are
// padded with empty cells. Control characters in cells are escaped
// (EscapeControl), so one row is one line whatever the cells hold.
class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  // Every line ends with '\n'.
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// The protobuf JSON mapping with proto field names (snake_case), default
// values printed, indented, ending with '\n'.
std::string ToJson(const google::protobuf::Message& message);

// A timestamp as absl::Time; the unset (zero) timestamp is InfinitePast.
absl::Time ToTime(const google::protobuf::Timestamp& ts);

// "3m ago", "just now", "-" for InfinitePast; "in 5s" for future times.
std::string HumanAgo(absl::Time t, absl::Time now);

// RFC 3339 in UTC with seconds, or "-" for InfinitePast.
std::string FormatUtc(absl::Time t);

// "2", "0.5", "1.25": a GPU count without trailing zeros.
std::string FormatCount(double value);

// `text` safe to print to a terminal on one line: each C0 control
// character and DEL becomes visible text ("\n", "\r", "\t", else "\x1b"
// style), so text from other users cannot move the cursor, recolour or
// forge lines. Other bytes, UTF-8 included, are kept.
std::string EscapeControl(absl::string_view text);

// Cuts `text` to `max_chars`, ending with "..." when cut; newlines become
// spaces and other control characters are escaped (EscapeControl) first.
std::string Truncate(absl::string_view text, size_t max_chars);

// Strips `prefix` from an enum value name: ("JOB_STATE_RUNNING",
// "JOB_STATE_") -> "RUNNING".
std::string StripEnumPrefix(absl::string_view name, absl::string_view prefix);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_OUTPUT_H_

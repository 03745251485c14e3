#include "client/output.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/quantity.h"

namespace tupa::client {
namespace {

// The largest whole unit only: "45s", "3m", "2h", "4d".
std::string Coarse(absl::Duration d) {
  const int64_t s = absl::ToInt64Seconds(d);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m");
  if (s < 86400) return absl::StrCat(s / 3600, "h");
  return absl::StrCat(s / 86400, "d");
}

}  // namespace

absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view text) {
  if (text == "table" || text.empty()) return OutputFormat::kTable;
  if (text == "json") return OutputFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("-o: must be table or json, got \"", text, "\""));
}

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(std::max(cells.size(), headers_.size()));
  for (std::string& cell : cells) cell = EscapeControl(cell);
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  std::vector<size_t> widths(headers_.size(), 0);
  auto measure = [&widths](const std::vector<std::string>& row) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  };
  measure(headers_);
  for (const auto& row : rows_) measure(row);
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    // Trailing empty cells would leave trailing spaces.
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&out, line, "\n");
  };
  emit(headers_);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  // Printing a well-formed message cannot fail; an empty object beats a
  // crash if it ever does.
  if (!google::protobuf::util::MessageToJsonString(message, &json, options)
           .ok()) {
    return "{}\n";
  }
  if (json.empty() || json.back() != '\n') json.push_back('\n');
  return json;
}

absl::Time ToTime(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return absl::InfinitePast();
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

std::string HumanAgo(absl::Time t, absl::Time now) {
  if (t == absl::InfinitePast()) return "-";
  const absl::Duration d = now - t;
  if (d < absl::ZeroDuration()) return absl::StrCat("in ", Coarse(-d));
  if (d < absl::Seconds(1)) return "just now";
  return absl::StrCat(Coarse(d), " ago");
}

std::string FormatUtc(absl::Time t) {
  if (t == absl::InfinitePast()) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::string FormatCount(double value) {
  std::string s = absl::StrFormat("%.3f", value);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string EscapeControl(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", u);
    }
  }
  return out;
}

std::string Truncate(absl::string_view text, size_t max_chars) {
  std::string s =
      EscapeControl(absl::StrReplaceAll(text, {{"\r\n", " "}, {"\n", " "}}));
  if (s.size() <= max_chars) return s;
  if (max_chars <= 3) return s.substr(0, max_chars);
  return absl::StrCat(s.substr(0, max_chars - 3), "...");
}

std::string StripEnumPrefix(absl::string_view name, absl::string_view prefix) {
  if (absl::StartsWith(name, prefix)) name.remove_prefix(prefix.size());
  return std::string(name);
}

}  // namespace tupa::client

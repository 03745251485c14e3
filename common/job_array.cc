#include "common/job_array.h"

#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tupa {
namespace {

absl::Status Bad(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// A whole non-negative decimal number, or -1.
int64_t Number(absl::string_view text) {
  if (text.empty() || text.size() > 9) return -1;
  for (char c : text)
    if (c < '0' || c > '9') return -1;
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) return -1;
  return value;
}

}  // namespace

absl::StatusOr<ArrayIndexes> ParseArrayIndexes(absl::string_view expression,
                                               absl::string_view field) {
  const std::string example = " (Slurm's syntax, e.g. 0-99%10 or 1,3,8-16:4%2)";
  ArrayIndexes out;
  absl::string_view list = expression;
  if (size_t percent = list.find('%'); percent != absl::string_view::npos) {
    const int64_t limit = Number(list.substr(percent + 1));
    if (limit <= 0)
      return Bad(field, absl::StrCat("the limit after % must be a whole "
                                     "number of at least 1, got \"",
                                     list.substr(percent + 1), "\"", example));
    out.max_running = static_cast<int32_t>(std::min<int64_t>(limit, 1 << 30));
    list = list.substr(0, percent);
  }
  if (list.empty()) return Bad(field, absl::StrCat("no indexes", example));
  std::set<int32_t> seen;
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    absl::string_view range = item, step_text;
    if (size_t colon = item.find(':'); colon != absl::string_view::npos) {
      range = item.substr(0, colon);
      step_text = item.substr(colon + 1);
    }
    int64_t first = -1, last = -1, step = 1;
    if (size_t dash = range.find('-'); dash != absl::string_view::npos) {
      first = Number(range.substr(0, dash));
      last = Number(range.substr(dash + 1));
    } else {
      first = last = Number(range);
      if (!step_text.empty() && first >= 0)
        return Bad(field, absl::StrCat("\"", item, "\": a step needs a range",
                                       example));
    }
    if (!step_text.empty()) step = Number(step_text);
    if (first < 0 || last < 0 || step <= 0)
      return Bad(field, absl::StrCat("\"", item, "\" is not N, A-B or A-B:STEP",
                                     example));
    if (last < first)
      return Bad(field, absl::StrCat("\"", item, "\": the range is reversed"));
    if (last > kMaxArrayIndex)
      return Bad(field, absl::StrCat("\"", item, "\": indexes go up to ",
                                     kMaxArrayIndex));
    for (int64_t i = first; i <= last; i += step) {
      if (!seen.insert(static_cast<int32_t>(i)).second)
        return Bad(field, absl::StrCat("index ", i, " is listed twice"));
      if (static_cast<int>(seen.size()) > kMaxArrayTasks)
        return Bad(field, absl::StrCat("more than ", kMaxArrayTasks,
                                       " tasks in one array"));
      out.indexes.push_back(static_cast<int32_t>(i));
    }
  }
  return out;
}

std::string SubstituteArrayIndex(absl::string_view text, int32_t index) {
  std::string out;
  size_t done = 0;
  for (size_t open = text.find("{{"); open != absl::string_view::npos;
       open = text.find("{{", open + 1)) {
    absl::string_view rest = text.substr(open + 2);
    const size_t rest_size = rest.size();
    rest = absl::StripLeadingAsciiWhitespace(rest);
    if (!absl::ConsumePrefix(&rest, "index")) continue;
    rest = absl::StripLeadingAsciiWhitespace(rest);
    if (!absl::ConsumePrefix(&rest, "}}")) continue;
    absl::StrAppend(&out, text.substr(done, open - done), index);
    done = open + 2 + (rest_size - rest.size());
    open = done - 1;
  }
  absl::StrAppend(&out, text.substr(done));
  return out;
}

bool HasArrayPlaceholder(absl::string_view text) {
  return SubstituteArrayIndex(text, 0) != text;
}

v1::JobSpec SubstituteArrayIndex(const v1::JobSpec& spec, int32_t index) {
  v1::JobSpec task = spec;
  task.set_name(SubstituteArrayIndex(spec.name(), index));
  for (std::string& word : *task.mutable_command())
    word = SubstituteArrayIndex(word, index);
  for (auto& [key, value] : *task.mutable_env())
    value = SubstituteArrayIndex(value, index);
  if (task.has_train() && task.train().has_data())
    task.mutable_train()->mutable_data()->set_path(
        SubstituteArrayIndex(spec.train().data().path(), index));
  return task;
}

void MarkArrayTask(v1::JobSpec& spec, int64_t array_id, int32_t index,
                   const ArrayIndexes& array, absl::string_view expression) {
  v1::ArrayTask& task = *spec.mutable_array();
  task.set_array_id(array_id);
  task.set_index(index);
  task.set_max_running(array.max_running);
  task.set_indexes(std::string(expression));
  task.set_size(static_cast<int32_t>(array.indexes.size()));
  (*spec.mutable_env())["TUPA_ARRAY_JOB_ID"] = absl::StrCat(array_id);
  (*spec.mutable_env())["TUPA_ARRAY_INDEX"] = absl::StrCat(index);
}

}  // namespace tupa

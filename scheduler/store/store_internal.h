// Internal to scheduler/store: conversions shared by the domain stores
// (SQL text <-> values). Not for other components.
#ifndef TUPA_SCHEDULER_STORE_STORE_INTERNAL_H_
#define TUPA_SCHEDULER_STORE_STORE_INTERNAL_H_

#include <google/protobuf/timestamp.pb.h>
#include <google/protobuf/util/json_util.h>

#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "scheduler/pricing/money.h"
#include "tupa/v1/job.pb.h"

namespace tupa::scheduler {

namespace store_internal {

inline std::string ToJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

inline google::protobuf::Timestamp FromMillis(int64_t ms) {
  google::protobuf::Timestamp t;
  t.set_seconds(ms / 1000);
  t.set_nanos(static_cast<int32_t>((ms % 1000) * 1000000));
  return t;
}

// "{1,2,3}" (an int[] as text) -> {1, 2, 3}.
inline std::vector<int32_t> ParseIntArray(const std::string& text) {
  std::vector<int32_t> out;
  std::string inner = text.size() >= 2 ? text.substr(1, text.size() - 2) : "";
  for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipEmpty())) {
    int32_t v;
    if (absl::SimpleAtoi(part, &v)) out.push_back(v);
  }
  return out;
}

// Builds a PostgreSQL array literal: {"a","b\"c"}. Every element is quoted,
// so no value reads as NULL, and only `"` and `\` need escaping. With
// unnest() it turns a batch of rows into one statement.
class ArrayLiteral {
 public:
  void Add(absl::string_view value) {
    text_ += text_.empty() ? "{\"" : ",\"";
    for (char c : value) {
      if (c == '"' || c == '\\') text_ += '\\';
      text_ += c;
    }
    text_ += '"';
  }
  bool empty() const { return text_.empty(); }
  std::string Take() { return text_.empty() ? "{}" : std::move(text_) + "}"; }

 private:
  std::string text_;
};

// The columns every job read selects, in the order RowToJob expects.
extern const char kJobColumns[];
// DataLoss naming the job and the column when a stored message (spec,
// progress) cannot be decoded.
absl::StatusOr<v1::Job> RowToJob(const pqxx::row& row);

// An amount read back from a NUMERIC column (as text). DataLoss naming
// `what` when it is not a Money (pricing/money.h).
absl::StatusOr<pricing::Money> MoneyFromSql(const pqxx::field& field,
                                            absl::string_view what);
// As MoneyFromSql, none for SQL NULL.
absl::StatusOr<std::optional<pricing::Money>> OptionalMoneyFromSql(
    const pqxx::field& field, absl::string_view what);
// The text a NULLIF($n, '')::numeric parameter takes: "" for none.
inline std::string MoneyParam(const std::optional<pricing::Money>& m) {
  return m.has_value() ? m->ToString() : std::string();
}

// A timestamptz SQL expression for parameter `$n` given in Unix ms.
inline std::string MillisParam(int n) {
  return "to_timestamp($" + std::to_string(n) + "::float8 / 1000)";
}

// Runs `sql` as the prepared statement `name` of w's connection: pqxx
// prepares it on the connection's first use (again after a reconnect) and
// preparing the same definition again is a no-op, so a batch is not parsed
// again. It is planned again: Database's connections force custom plans
// (database.cc).
template <typename... Args>
pqxx::result ExecPrepared(pqxx::transaction_base& w, const char* name,
                          const std::string& sql, Args&&... args) {
  w.conn().prepare(name, sql);
  return w.exec_prepared(name, std::forward<Args>(args)...);
}

}  // namespace store_internal
}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_STORE_INTERNAL_H_

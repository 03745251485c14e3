// Internal to scheduler/store: the transaction helper and conversions
// shared by the JobStore implementation files. Not for other components.
#ifndef TUPA_SCHEDULER_STORE_STORE_INTERNAL_H_
#define TUPA_SCHEDULER_STORE_STORE_INTERNAL_H_

#include <google/protobuf/timestamp.pb.h>
#include <google/protobuf/util/json_util.h>

#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/pg_errors.h"

namespace tupa::scheduler {

// A borrowed connection; returned to the pool unless it broke.
class JobStore::Lease {
 public:
  Lease(JobStore* store, std::unique_ptr<pqxx::connection> conn)
      : store_(store), conn_(std::move(conn)) {}
  ~Lease() { store_->Release(std::move(conn_)); }
  pqxx::connection& conn() { return *conn_; }

 private:
  JobStore* store_;
  std::unique_ptr<pqxx::connection> conn_;
};

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
v1::Job RowToJob(const pqxx::row& row);

// A timestamptz SQL expression for parameter `$n` given in Unix ms.
inline std::string MillisParam(int n) {
  return "to_timestamp($" + std::to_string(n) + "::float8 / 1000)";
}

// Runs `body(work)` in one transaction and commits when it returns OK;
// maps libpqxx exceptions (pg_errors.h).
template <typename T, typename Body>
absl::StatusOr<T> RunTx(absl::StatusOr<std::unique_ptr<JobStore::Lease>> lease,
                        Body body) {
  if (!lease.ok()) return lease.status();
  try {
    pqxx::work w((*lease)->conn());
    absl::StatusOr<T> result = body(w);
    if (result.ok()) w.commit();
    return result;
  } catch (...) {
    return StatusFromCurrentException();
  }
}

// Runs `body(nontransaction)` on a connection in autocommit mode: every
// statement commits on its own, atomically (one round trip, no BEGIN or
// COMMIT). For bodies whose writes are one statement; maps libpqxx
// exceptions like RunTx.
template <typename T, typename Body>
absl::StatusOr<T> RunAutocommit(
    absl::StatusOr<std::unique_ptr<JobStore::Lease>> lease, Body body) {
  if (!lease.ok()) return lease.status();
  try {
    pqxx::nontransaction w((*lease)->conn());
    return body(w);
  } catch (...) {
    return StatusFromCurrentException();
  }
}

}  // namespace store_internal
}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_STORE_INTERNAL_H_

// A jobs row -> v1::Job (store_internal.h), shared by every job read.
#include <google/protobuf/util/json_util.h>

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/store_internal.h"

namespace tupa::scheduler::store_internal {

using google::protobuf::util::JsonStringToMessage;

const char kJobColumns[] =
    "id, COALESCE(spec::text, ''), state, attempt, "
    "COALESCE(idempotency_key, ''), message, exit_code, "
    "COALESCE(progress::text, ''), "
    "(extract(epoch FROM created_at) * 1000)::bigint, "
    "COALESCE((extract(epoch FROM started_at) * 1000)::bigint, 0), "
    "COALESCE((extract(epoch FROM finished_at) * 1000)::bigint, 0), "
    "spec_proto";

namespace {

absl::Status Undecodable(int64_t id, absl::string_view column,
                         absl::string_view why) {
  return absl::DataLossError(absl::StrCat("job ", id, ": stored ", column,
                                          " cannot be decoded (", why, ")"));
}

}  // namespace

absl::StatusOr<v1::Job> RowToJob(const pqxx::row& row) {
  v1::Job job;
  job.set_id(row[0].as<int64_t>());
  // Jobs submitted before 0011_add_job_spec_proto.sql have only JSON.
  if (!row[11].is_null()) {
    const pqxx::binarystring proto(row[11]);
    if (!job.mutable_spec()->ParseFromArray(proto.data(),
                                            static_cast<int>(proto.size())))
      return Undecodable(job.id(), "spec_proto", "not a JobSpec");
  } else {
    auto parsed = JsonStringToMessage(row[1].c_str(), job.mutable_spec());
    if (!parsed.ok()) return Undecodable(job.id(), "spec", parsed.ToString());
  }
  job.set_state(StateFromName(row[2].c_str()));
  job.set_attempt(row[3].as<int32_t>());
  job.set_idempotency_key(row[4].c_str());
  job.set_message(row[5].c_str());
  job.set_exit_code(row[6].as<int32_t>());
  if (!std::string_view(row[7].c_str()).empty()) {
    auto parsed = JsonStringToMessage(row[7].c_str(), job.mutable_progress());
    if (!parsed.ok())
      return Undecodable(job.id(), "progress", parsed.ToString());
  }
  *job.mutable_created_at() = FromMillis(row[8].as<int64_t>());
  if (int64_t ms = row[9].as<int64_t>())
    *job.mutable_started_at() = FromMillis(ms);
  if (int64_t ms = row[10].as<int64_t>())
    *job.mutable_finished_at() = FromMillis(ms);
  return job;
}

absl::StatusOr<pricing::Money> MoneyFromSql(const pqxx::field& field,
                                            absl::string_view what) {
  absl::StatusOr<pricing::Money> m =
      field.is_null() ? absl::InvalidArgumentError("NULL")
                      : pricing::Money::FromString(field.c_str());
  if (!m.ok())
    return absl::DataLossError(
        absl::StrCat(what, ": stored amount cannot be decoded (",
                     m.status().message(), ")"));
  return m;
}

absl::StatusOr<std::optional<pricing::Money>> OptionalMoneyFromSql(
    const pqxx::field& field, absl::string_view what) {
  if (field.is_null()) return std::optional<pricing::Money>();
  ASSIGN_OR_RETURN(pricing::Money m, MoneyFromSql(field, what));
  return std::optional<pricing::Money>(m);
}

}  // namespace tupa::scheduler::store_internal

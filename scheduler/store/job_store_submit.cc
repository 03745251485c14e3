// JobStore: job submission, one statement per batch (group commit).
#include <map>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "scheduler/store/database.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/store_internal.h"

namespace tupa::scheduler {
namespace {

using store_internal::ArrayLiteral;
using store_internal::FromMillis;
using store_internal::kJobColumns;
using store_internal::RowToJob;

// Inserts every job of the batch (jobs_id_seq is the sequence of jobs.id,
// 0001_create_jobs.sql). The job row is the submission's record: no
// job_events row (0012_create_job_history.sql). Ids are drawn in
// request order before the insert, so that each returned row names its
// request (`ord`, 1-based). Keys are per user
// (0013_scope_idempotency_key_to_user.sql). Rows are inserted in (user,
// key) order: two batches that share keys then wait on each other instead
// of deadlocking. ON CONFLICT DO NOTHING skips a (user, key) that is
// already stored, or that an earlier request of the same batch holds;
// those requests read it back.
constexpr char kInsertJobsName[] = "tupa_insert_jobs";
constexpr char kInsertJobs[] =
    "WITH input AS MATERIALIZED ("
    "  SELECT nextval('jobs_id_seq') AS id, t.* FROM unnest($1::text[], "
    "    $2::text[], $3::text[], $4::int[], $5::bytea[], $6::text[], "
    "    $7::bigint[]) WITH ORDINALITY "
    "    AS t(name, user_name, team, priority, spec, key, array_id, ord)), "
    "job AS (INSERT INTO jobs (id, name, user_name, team, priority, "
    "  spec_proto, state, idempotency_key, array_id) "
    "  SELECT id, name, user_name, team, priority, spec, 'PENDING', "
    "    NULLIF(key, ''), NULLIF(array_id, 0) FROM input "
    "  ORDER BY user_name, key, ord "
    "  ON CONFLICT (user_name, idempotency_key) "
    "  WHERE idempotency_key IS NOT NULL "
    "  DO NOTHING RETURNING id, created_at) "
    "SELECT input.ord, job.id, "
    "  (extract(epoch FROM job.created_at) * 1000)::bigint "
    "FROM job JOIN input USING (id)";

// `bytes` in bytea's hex input format.
std::string HexBytea(const std::string& bytes) {
  return absl::StrCat("\\x", absl::BytesToHexString(bytes));
}

}  // namespace

absl::StatusOr<SubmitResult> JobStore::SubmitJob(const v1::JobSpec& spec,
                                                 const std::string& key) {
  ASSIGN_OR_RETURN(auto results, SubmitJobs({{&spec, &key}}));
  return std::move(results[0]);
}

absl::StatusOr<std::vector<SubmitResult>> JobStore::SubmitJobs(
    const std::vector<SubmitRequest>& requests) {
  ArrayLiteral names, users, teams, priorities, specs, keys, arrays;
  for (const SubmitRequest& r : requests) {
    names.Add(r.spec->name());
    users.Add(r.spec->user());
    teams.Add(r.spec->team());
    priorities.Add(absl::StrCat(r.spec->priority()));
    specs.Add(HexBytea(r.spec->SerializeAsString()));
    keys.Add(*r.idempotency_key);
    arrays.Add(absl::StrCat(r.spec->array().array_id()));
  }
  return db_->RunAutocommit<std::vector<SubmitResult>>(
      [&](pqxx::nontransaction& w)
          -> absl::StatusOr<std::vector<SubmitResult>> {
        std::vector<SubmitResult> out(requests.size());
        std::vector<bool> inserted(requests.size(), false);
        pqxx::result rows = store_internal::ExecPrepared(
            w, kInsertJobsName, kInsertJobs, names.Take(), users.Take(),
            teams.Take(), priorities.Take(), specs.Take(), keys.Take(),
            arrays.Take());
        for (const auto& row : rows) {
          const size_t i = static_cast<size_t>(row[0].as<int64_t>() - 1);
          // The new job is built from the request rather than read back:
          // submissions are the hot path.
          v1::Job& job = out[i].job;
          job.set_id(row[1].as<int64_t>());
          *job.mutable_spec() = *requests[i].spec;
          job.set_state(v1::JOB_STATE_PENDING);
          job.set_attempt(1);
          job.set_idempotency_key(*requests[i].idempotency_key);
          *job.mutable_created_at() = FromMillis(row[2].as<int64_t>());
          out[i].created = true;
          inserted[i] = true;
        }
        if (rows.size() == requests.size()) return out;
        // The rest named a key their user had stored: return that job.
        ArrayLiteral existing_users, existing_keys;
        for (size_t i = 0; i < requests.size(); ++i) {
          if (inserted[i]) continue;
          existing_users.Add(requests[i].spec->user());
          existing_keys.Add(*requests[i].idempotency_key);
        }
        pqxx::result stored = w.exec_params(
            absl::StrCat("SELECT ", kJobColumns,
                         " FROM jobs WHERE (user_name, idempotency_key) IN "
                         "(SELECT * FROM unnest($1::text[], $2::text[]))"),
            existing_users.Take(), existing_keys.Take());
        std::map<std::pair<std::string, std::string>, v1::Job> by_key;
        for (const auto& row : stored) {
          ASSIGN_OR_RETURN(v1::Job job, RowToJob(row));
          std::pair<std::string, std::string> user_key(job.spec().user(),
                                                       job.idempotency_key());
          by_key.emplace(std::move(user_key), std::move(job));
        }
        for (size_t i = 0; i < requests.size(); ++i) {
          if (inserted[i]) continue;
          auto it = by_key.find(
              {requests[i].spec->user(), *requests[i].idempotency_key});
          // A concurrent transaction holding the key has not committed yet.
          if (it == by_key.end())
            return absl::AbortedError("idempotency key conflict; retry");
          out[i].job = it->second;
        }
        return out;
      });
}

absl::StatusOr<ArraySubmitResult> JobStore::SubmitArray(
    std::vector<v1::JobSpec> tasks, const ArrayIndexes& array,
    const std::string& expression, const std::string& idempotency_key) {
  if (tasks.empty() || tasks.size() != array.indexes.size())
    return absl::InvalidArgumentError("array: one task per index is needed");
  ASSIGN_OR_RETURN(
      int64_t array_id,
      db_->RunAutocommit<int64_t>(
          [&](pqxx::nontransaction& w) -> absl::StatusOr<int64_t> {
            return w.exec1("SELECT nextval('jobs_id_seq')")[0].as<int64_t>();
          }));
  std::vector<std::string> keys(tasks.size());
  std::vector<SubmitRequest> requests(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    MarkArrayTask(tasks[i], array_id, array.indexes[i], array, expression);
    if (!idempotency_key.empty())
      keys[i] = absl::StrCat(idempotency_key, "#", array.indexes[i]);
    requests[i] = {&tasks[i], &keys[i]};
  }
  ArraySubmitResult out;
  ASSIGN_OR_RETURN(out.tasks, SubmitJobs(requests));
  out.created = out.tasks[0].created;
  // A retry: the tasks are the first call's, and so is the array's id.
  out.array_id = out.tasks[0].job.spec().array().array_id();
  return out;
}

}  // namespace tupa::scheduler

// JobStore: job reads and single-row job state changes.
#include "scheduler/store/job_store.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "scheduler/store/database.h"
#include "scheduler/store/store_internal.h"

namespace tupa::scheduler {

namespace {

using store_internal::FromMillis;
using store_internal::kJobColumns;
using store_internal::ParseIntArray;
using store_internal::RowToJob;
using store_internal::ToJson;

std::string IntArrayLiteral(const std::vector<int32_t>& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

void InsertEvent(pqxx::work& w, int64_t id, int32_t attempt,
                 const std::string& state, const std::string& message) {
  w.exec_params(
      "INSERT INTO job_events (job_id, attempt, state, message) "
      "VALUES ($1, $2, $3, $4)",
      id, attempt, state, message);
}

absl::Status NotCurrent(int64_t id, int32_t attempt) {
  return absl::FailedPreconditionError(absl::StrCat(
      "job ", id, " attempt ", attempt, " is not current or not active"));
}

}  // namespace

std::string StateName(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_PENDING:
      return "PENDING";
    case v1::JOB_STATE_ASSIGNED:
      return "ASSIGNED";
    case v1::JOB_STATE_RUNNING:
      return "RUNNING";
    case v1::JOB_STATE_SUCCEEDED:
      return "SUCCEEDED";
    case v1::JOB_STATE_FAILED:
      return "FAILED";
    case v1::JOB_STATE_CANCELLED:
      return "CANCELLED";
    default:
      return "UNSPECIFIED";
  }
}

v1::JobState StateFromName(const std::string& name) {
  for (v1::JobState s :
       {v1::JOB_STATE_PENDING, v1::JOB_STATE_ASSIGNED, v1::JOB_STATE_RUNNING,
        v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED})
    if (StateName(s) == name) return s;
  return v1::JOB_STATE_UNSPECIFIED;
}

JobStore::JobStore(Database* db, UsageStore* usage) : db_(db), usage_(usage) {}

absl::StatusOr<v1::Job> JobStore::GetJob(int64_t id) {
  return db_->RunTx<v1::Job>([&](pqxx::work& w) -> absl::StatusOr<v1::Job> {
    pqxx::result r = w.exec_params(
        absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id = $1"), id);
    if (r.empty())
      return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
    ASSIGN_OR_RETURN(v1::Job job, RowToJob(r[0]));
    pqxx::result a = w.exec_params(
        "SELECT worker_id, node_rank, device_indexes::text FROM allocations "
        "WHERE job_id = $1 AND attempt = $2 ORDER BY node_rank",
        id, job.attempt());
    for (const auto& row : a) {
      v1::Placement* p = job.add_placements();
      p->set_worker_id(row[0].c_str());
      p->set_node_rank(row[1].as<int32_t>());
      for (int32_t d : ParseIntArray(row[2].c_str())) p->add_device_indexes(d);
    }
    return job;
  });
}

absl::StatusOr<bool> JobStore::HasIdempotencyKey(const std::string& user,
                                                 const std::string& key) {
  return db_->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
    pqxx::result r = w.exec_params(
        "SELECT 1 FROM jobs WHERE user_name = $1 AND idempotency_key = $2 "
        "LIMIT 1",
        user, key);
    return !r.empty();
  });
}

absl::StatusOr<std::vector<v1::Job>> JobStore::ListJobs(const JobFilter& f) {
  std::vector<std::string> states;
  for (auto s : f.states) states.push_back(StateName(s));
  const std::string state_array =
      absl::StrCat("{", absl::StrJoin(states, ","), "}");
  const int limit = f.limit > 0 ? std::min(f.limit, 10000) : 500;
  return db_->RunTx<std::vector<v1::Job>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<v1::Job>> {
        pqxx::result r = w.exec_params(
            absl::StrCat("SELECT ", kJobColumns,
                         " FROM jobs WHERE (cardinality($1::text[]) = 0 OR "
                         "state = ANY($1::text[])) AND ($2 = '' OR user_name = "
                         "$2) AND ($3 = '' OR team = $3) AND ($5 = 0 OR "
                         "array_id = $5) ORDER BY id DESC LIMIT $4"),
            state_array, f.user, f.team, limit, f.array_id);
        std::vector<v1::Job> jobs;
        for (const auto& row : r) {
          ASSIGN_OR_RETURN(v1::Job job, RowToJob(row));
          jobs.push_back(std::move(job));
        }
        return jobs;
      });
}

absl::StatusOr<std::vector<v1::Job>> JobStore::LoadActiveJobs() {
  return db_->RunTx<std::vector<v1::Job>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<v1::Job>> {
        pqxx::result r = w.exec(absl::StrCat(
            "SELECT ", kJobColumns,
            // finished_at IS NULL: jobs_unfinished_idx (0017_job_state_
            // changes_heap_only.sql); no index has `state`.
            " FROM jobs WHERE finished_at IS NULL AND "
            "state IN ('PENDING', 'ASSIGNED', 'RUNNING') ORDER BY id"));
        std::vector<v1::Job> jobs;
        for (const auto& row : r) {
          ASSIGN_OR_RETURN(v1::Job job, RowToJob(row));
          jobs.push_back(std::move(job));
        }
        return jobs;
      });
}

absl::Status JobStore::AssignJob(int64_t id, int32_t attempt,
                                 const std::vector<AllocationRecord>& nodes) {
  return db_
      ->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
        pqxx::result r = w.exec_params(
            "UPDATE jobs SET state = 'ASSIGNED', updated_at = now() "
            "WHERE id = $1 AND attempt = $2 AND state = 'PENDING'",
            id, attempt);
        if (r.affected_rows() != 1) return NotCurrent(id, attempt);
        for (const AllocationRecord& a : nodes) {
          w.exec_params(
              absl::StrCat(
                  "INSERT INTO allocations (job_id, attempt, worker_id, "
                  "node_rank, device_indexes, gpu_share, master_port, "
                  "region, gpu_type, gpus, started_at) VALUES ($1, $2, "
                  "$3, "
                  "$4, $5::int[], $6, $7, $8, $9, $10, ",
                  store_internal::MillisParam(11), ")"),
              id, attempt, a.worker_id, a.node_rank,
              IntArrayLiteral(a.device_indexes), a.gpu_share, a.master_port,
              a.region, a.gpu_type, a.gpus, a.started_at_ms);
        }
        InsertEvent(w, id, attempt, "ASSIGNED", "");
        return true;
      })
      .status();
}

absl::Status JobStore::MarkRunning(int64_t id, int32_t attempt) {
  return db_
      ->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
        pqxx::result r = w.exec_params(
            "UPDATE jobs SET state = 'RUNNING', updated_at = now(), "
            "started_at = COALESCE(started_at, now()) "
            "WHERE id = $1 AND attempt = $2 AND state = 'ASSIGNED'",
            id, attempt);
        if (r.affected_rows() != 1) return NotCurrent(id, attempt);
        InsertEvent(w, id, attempt, "RUNNING", "");
        return true;
      })
      .status();
}

absl::Status JobStore::FinishJob(int64_t id, int32_t attempt,
                                 v1::JobState state, int32_t exit_code,
                                 const std::string& message,
                                 bool close_allocations) {
  const std::string name = StateName(state);
  return db_
      ->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
        pqxx::result r = w.exec_params(
            "UPDATE jobs SET state = $3, exit_code = $4, message = $5, "
            "finished_at = now(), updated_at = now() WHERE id = $1 AND "
            "attempt = $2 AND state IN ('PENDING', 'ASSIGNED', "
            "'RUNNING')",
            id, attempt, name, exit_code, message);
        if (r.affected_rows() != 1) return NotCurrent(id, attempt);
        if (close_allocations) {
          w.exec_params(
              "UPDATE allocations SET ended_at = now() WHERE job_id = "
              "$1 "
              "AND attempt = $2 AND ended_at IS NULL",
              id, attempt);
        }
        InsertEvent(w, id, attempt, name, message);
        return true;
      })
      .status();
}

namespace {

// Moves the job from one of `states` (an SQL list) at `attempt` to PENDING
// at attempt + 1; returns the new attempt.
absl::StatusOr<int32_t> RequeueIn(pqxx::work& w, int64_t id, int32_t attempt,
                                  const std::string& message,
                                  const char* states) {
  pqxx::result r = w.exec_params(
      absl::StrCat("UPDATE jobs SET state = 'PENDING', attempt = attempt + 1, "
                   "message = $3, updated_at = now() WHERE id = $1 AND "
                   "attempt = $2 AND state IN (",
                   states, ") RETURNING attempt"),
      id, attempt, message);
  if (r.empty()) return NotCurrent(id, attempt);
  const int32_t next = r[0][0].as<int32_t>();
  InsertEvent(w, id, next, "PENDING", message);
  return next;
}

}  // namespace

absl::StatusOr<int32_t> JobStore::RequeueJob(int64_t id, int32_t attempt,
                                             const std::string& message) {
  return db_->RunTx<int32_t>([&](pqxx::work& w) -> absl::StatusOr<int32_t> {
    return RequeueIn(w, id, attempt, message,
                     "'PENDING', 'ASSIGNED', 'RUNNING'");
  });
}

absl::StatusOr<int32_t> JobStore::RequeueUnstartedAssignment(
    int64_t id, int32_t attempt, const std::string& message) {
  return db_->RunTx<int32_t>([&](pqxx::work& w) -> absl::StatusOr<int32_t> {
    ASSIGN_OR_RETURN(int32_t next,
                     RequeueIn(w, id, attempt, message, "'ASSIGNED'"));
    w.exec_params(
        "UPDATE allocations SET ended_at = started_at WHERE job_id = $1 "
        "AND attempt = $2 AND ended_at IS NULL",
        id, attempt);
    return next;
  });
}

absl::Status JobStore::UpdateProgress(int64_t id, int32_t attempt,
                                      const v1::Progress& progress) {
  const std::string json = ToJson(progress);
  return db_
      ->RunTx<bool>([&](pqxx::work& w) -> absl::StatusOr<bool> {
        w.exec_params(
            "UPDATE jobs SET progress = $3::jsonb WHERE id = $1 AND "
            "attempt = $2",
            id, attempt, json);
        return true;
      })
      .status();
}

}  // namespace tupa::scheduler

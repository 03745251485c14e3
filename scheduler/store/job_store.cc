#include "scheduler/store/job_store.h"

#include <google/protobuf/util/json_util.h>

#include <pqxx/pqxx>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "scheduler/store/migrations.h"
#include "scheduler/store/pg_errors.h"
#include "scheduler/store/store_internal.h"

namespace tupa::scheduler {

using google::protobuf::util::JsonStringToMessage;

namespace store_internal {

const char kJobColumns[] =
    "id, COALESCE(spec::text, ''), state, attempt, "
    "COALESCE(idempotency_key, ''), message, exit_code, "
    "COALESCE(progress::text, ''), "
    "(extract(epoch FROM created_at) * 1000)::bigint, "
    "COALESCE((extract(epoch FROM started_at) * 1000)::bigint, 0), "
    "COALESCE((extract(epoch FROM finished_at) * 1000)::bigint, 0), "
    "spec_proto";

v1::Job RowToJob(const pqxx::row& row) {
  v1::Job job;
  job.set_id(row[0].as<int64_t>());
  // Jobs submitted before 0011_add_job_spec_proto.sql have only JSON.
  if (!row[11].is_null()) {
    const pqxx::binarystring proto(row[11]);
    (void)job.mutable_spec()->ParseFromArray(proto.data(), proto.size());
  } else {
    (void)JsonStringToMessage(row[1].c_str(), job.mutable_spec());
  }
  job.set_state(StateFromName(row[2].c_str()));
  job.set_attempt(row[3].as<int32_t>());
  job.set_idempotency_key(row[4].c_str());
  job.set_message(row[5].c_str());
  job.set_exit_code(row[6].as<int32_t>());
  if (!std::string_view(row[7].c_str()).empty())
    (void)JsonStringToMessage(row[7].c_str(), job.mutable_progress());
  *job.mutable_created_at() = FromMillis(row[8].as<int64_t>());
  if (int64_t ms = row[9].as<int64_t>())
    *job.mutable_started_at() = FromMillis(ms);
  if (int64_t ms = row[10].as<int64_t>())
    *job.mutable_finished_at() = FromMillis(ms);
  return job;
}

}  // namespace store_internal

namespace {

using store_internal::FromMillis;
using store_internal::kJobColumns;
using store_internal::RowToJob;
using store_internal::RunTx;
using store_internal::ToJson;

std::vector<int32_t> ParseIntArray(const std::string& text) {
  std::vector<int32_t> out;
  std::string inner = text.size() >= 2 ? text.substr(1, text.size() - 2) : "";
  for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipEmpty())) {
    int32_t v;
    if (absl::SimpleAtoi(part, &v)) out.push_back(v);
  }
  return out;
}

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

JobStore::JobStore(std::string url) : url_(std::move(url)) {}
JobStore::~JobStore() = default;

absl::StatusOr<std::unique_ptr<JobStore>> JobStore::Connect(
    const std::string& url, int pool_size) {
  auto store = std::unique_ptr<JobStore>(new JobStore(url));
  store->pool_size_ = std::max(1, pool_size);
  // Prove the server is reachable now; further connections open lazily.
  ASSIGN_OR_RETURN(auto lease, store->Acquire());
  return store;
}

absl::StatusOr<std::unique_ptr<JobStore::Lease>> JobStore::Acquire() {
  std::unique_ptr<pqxx::connection> conn;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](JobStore* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
          return !s->idle_.empty() || s->outstanding_ < s->pool_size_;
        },
        this));
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
    ++outstanding_;
  }
  if (conn == nullptr || !conn->is_open()) {
    try {
      conn = std::make_unique<pqxx::connection>(url_);
    } catch (...) {
      absl::MutexLock lock(&mu_);
      --outstanding_;
      return StatusFromCurrentException();
    }
  }
  return std::make_unique<Lease>(this, std::move(conn));
}

void JobStore::Release(std::unique_ptr<pqxx::connection> conn) {
  absl::MutexLock lock(&mu_);
  --outstanding_;
  if (conn != nullptr && conn->is_open()) idle_.push_back(std::move(conn));
}

absl::Status JobStore::Migrate() {
  auto result =
      RunTx<bool>(Acquire(), [](pqxx::work& w) -> absl::StatusOr<bool> {
        // Serialise concurrent schedulers starting against one database.
        w.exec("SELECT pg_advisory_xact_lock(7475706100)");
        w.exec(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "  version INT PRIMARY KEY, name TEXT NOT NULL,"
            "  applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
        pqxx::result applied = w.exec("SELECT version FROM schema_migrations");
        std::set<int> done;
        for (const auto& row : applied) done.insert(row[0].as<int>());
        for (const Migration& m : AllMigrations()) {
          if (done.count(m.version)) continue;
          w.exec(m.sql);
          w.exec_params(
              "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
              m.version, m.name);
        }
        return true;
      });
  return result.status();
}

absl::StatusOr<v1::Job> JobStore::GetJob(int64_t id) {
  return RunTx<
      v1::Job>(Acquire(), [&](pqxx::work& w) -> absl::StatusOr<v1::Job> {
    pqxx::result r = w.exec_params(
        absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id = $1"), id);
    if (r.empty())
      return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
    v1::Job job = RowToJob(r[0]);
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
  return RunTx<bool>(Acquire(), [&](pqxx::work& w) -> absl::StatusOr<bool> {
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
  return RunTx<std::vector<v1::Job>>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::vector<v1::Job>> {
        pqxx::result r = w.exec_params(
            absl::StrCat("SELECT ", kJobColumns,
                         " FROM jobs WHERE (cardinality($1::text[]) = 0 OR "
                         "state = ANY($1::text[])) AND ($2 = '' OR user_name = "
                         "$2) AND ($3 = '' OR team = $3) AND ($5 = 0 OR "
                         "array_id = $5) ORDER BY id DESC LIMIT $4"),
            state_array, f.user, f.team, limit, f.array_id);
        std::vector<v1::Job> jobs;
        for (const auto& row : r) jobs.push_back(RowToJob(row));
        return jobs;
      });
}

absl::StatusOr<std::vector<v1::Job>> JobStore::LoadActiveJobs() {
  return RunTx<std::vector<v1::Job>>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::vector<v1::Job>> {
        pqxx::result r = w.exec(absl::StrCat(
            "SELECT ", kJobColumns,
            " FROM jobs WHERE state IN ('PENDING', 'ASSIGNED', 'RUNNING') "
            "ORDER BY id"));
        std::vector<v1::Job> jobs;
        for (const auto& row : r) jobs.push_back(RowToJob(row));
        return jobs;
      });
}

absl::StatusOr<std::vector<AllocationRecord>> JobStore::LoadOpenAllocations() {
  return RunTx<std::vector<AllocationRecord>>(
      Acquire(),
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<AllocationRecord>> {
        pqxx::result r = w.exec(
            "SELECT job_id, attempt, worker_id, node_rank, "
            "device_indexes::text, gpu_share, master_port, region, gpu_type, "
            "gpus, (extract(epoch FROM started_at) * 1000)::bigint FROM "
            "allocations WHERE ended_at IS NULL ORDER BY job_id, node_rank");
        std::vector<AllocationRecord> out;
        for (const auto& row : r) {
          AllocationRecord a;
          a.job_id = row[0].as<int64_t>();
          a.attempt = row[1].as<int32_t>();
          a.worker_id = row[2].c_str();
          a.node_rank = row[3].as<int32_t>();
          a.device_indexes = ParseIntArray(row[4].c_str());
          a.gpu_share = row[5].as<double>();
          a.master_port = row[6].as<int32_t>();
          a.region = row[7].c_str();
          a.gpu_type = row[8].c_str();
          a.gpus = row[9].as<double>();
          a.started_at_ms = row[10].as<int64_t>();
          out.push_back(std::move(a));
        }
        return out;
      });
}

absl::StatusOr<std::vector<EndedNode>> JobStore::LoadEndedNodesOfActiveJobs() {
  return RunTx<std::vector<EndedNode>>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::vector<EndedNode>> {
        pqxx::result r = w.exec(
            "SELECT a.job_id, a.node_rank, a.exit_code FROM allocations a "
            "JOIN jobs j ON j.id = a.job_id AND j.attempt = a.attempt "
            "WHERE j.state IN ('ASSIGNED', 'RUNNING') "
            "AND a.ended_at IS NOT NULL ORDER BY a.job_id, a.node_rank");
        std::vector<EndedNode> out;
        for (const auto& row : r) {
          EndedNode n;
          n.job_id = row[0].as<int64_t>();
          n.node_rank = row[1].as<int32_t>();
          if (!row[2].is_null()) n.exit_code = row[2].as<int32_t>();
          out.push_back(n);
        }
        return out;
      });
}

absl::Status JobStore::AssignJob(int64_t id, int32_t attempt,
                                 const std::vector<AllocationRecord>& nodes) {
  return RunTx<bool>(
             Acquire(),
             [&](pqxx::work& w) -> absl::StatusOr<bool> {
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
                     IntArrayLiteral(a.device_indexes), a.gpu_share,
                     a.master_port, a.region, a.gpu_type, a.gpus,
                     a.started_at_ms);
               }
               InsertEvent(w, id, attempt, "ASSIGNED", "");
               return true;
             })
      .status();
}

absl::Status JobStore::MarkRunning(int64_t id, int32_t attempt) {
  return RunTx<bool>(
             Acquire(),
             [&](pqxx::work& w) -> absl::StatusOr<bool> {
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
  return RunTx<bool>(
             Acquire(),
             [&](pqxx::work& w) -> absl::StatusOr<bool> {
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
  return RunTx<int32_t>(Acquire(),
                        [&](pqxx::work& w) -> absl::StatusOr<int32_t> {
                          return RequeueIn(w, id, attempt, message,
                                           "'PENDING', 'ASSIGNED', 'RUNNING'");
                        });
}

absl::StatusOr<int32_t> JobStore::RequeueUnstartedAssignment(
    int64_t id, int32_t attempt, const std::string& message) {
  return RunTx<int32_t>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<int32_t> {
        ASSIGN_OR_RETURN(int32_t next,
                         RequeueIn(w, id, attempt, message, "'ASSIGNED'"));
        w.exec_params(
            "UPDATE allocations SET ended_at = started_at WHERE job_id = $1 "
            "AND attempt = $2 AND ended_at IS NULL",
            id, attempt);
        return next;
      });
}

absl::Status JobStore::CloseAllocation(int64_t id, int32_t attempt,
                                       int32_t node_rank, int64_t ended_at_ms,
                                       const std::string& cost,
                                       const std::string& currency,
                                       std::optional<int32_t> exit_code) {
  const std::string exit_text =
      exit_code.has_value() ? absl::StrCat(*exit_code) : "";
  absl::Status closed =
      RunTx<bool>(Acquire(), [&](pqxx::work& w) -> absl::StatusOr<bool> {
        w.exec_params(
            absl::StrCat("UPDATE allocations SET ended_at = GREATEST("
                         "started_at, ",
                         store_internal::MillisParam(4),
                         "), cost = NULLIF($5, '')::numeric, currency = "
                         "NULLIF($6, ''), exit_code = NULLIF($7, '')::int "
                         "WHERE job_id = $1 AND attempt = $2 "
                         "AND node_rank = $3 AND ended_at IS NULL"),
            id, attempt, node_rank, ended_at_ms, cost, currency, exit_text);
        return true;
      }).status();
  // After the commit, and also after a failure (the commit may have
  // happened): TeamSpend's cached answers may be stale.
  absl::MutexLock lock(&spend_mu_);
  ++cost_generation_;
  return closed;
}

absl::Status JobStore::UpdateProgress(int64_t id, int32_t attempt,
                                      const v1::Progress& progress) {
  const std::string json = ToJson(progress);
  return RunTx<bool>(
             Acquire(),
             [&](pqxx::work& w) -> absl::StatusOr<bool> {
               w.exec_params(
                   "UPDATE jobs SET progress = $3::jsonb WHERE id = $1 AND "
                   "attempt = $2",
                   id, attempt, json);
               return true;
             })
      .status();
}

namespace {

std::string WorkerStateName(v1::WorkerState s) {
  switch (s) {
    case v1::WORKER_STATE_DRAINING:
      return "DRAINING";
    case v1::WORKER_STATE_LOST:
      return "LOST";
    case v1::WORKER_STATE_OFFLINE:
      return "OFFLINE";
    default:
      return "UP";
  }
}

v1::WorkerState WorkerStateFromName(const std::string& s) {
  if (s == "DRAINING") return v1::WORKER_STATE_DRAINING;
  if (s == "LOST") return v1::WORKER_STATE_LOST;
  if (s == "OFFLINE") return v1::WORKER_STATE_OFFLINE;
  return v1::WORKER_STATE_UP;
}

}  // namespace

absl::Status JobStore::UpsertWorker(const v1::Worker& worker) {
  v1::Worker devices_only;
  *devices_only.mutable_devices() = worker.devices();
  *devices_only.mutable_labels() = worker.labels();
  const std::string json = ToJson(devices_only);
  return RunTx<bool>(
             Acquire(),
             [&](pqxx::work& w) -> absl::StatusOr<bool> {
               w.exec_params(
                   "INSERT INTO workers (id, region, instance_id, labels, "
                   "devices, "
                   "cpu, memory_bytes, address, state, offering) VALUES ($1, "
                   "$2, "
                   "$3, COALESCE(($4::jsonb)->'labels', '{}'), "
                   "COALESCE(($4::jsonb)->'devices', '[]'), $5, $6, $7, $8, "
                   "$9) "
                   "ON CONFLICT (id) DO UPDATE SET region = EXCLUDED.region, "
                   "instance_id = EXCLUDED.instance_id, labels = "
                   "EXCLUDED.labels, "
                   "devices = EXCLUDED.devices, cpu = EXCLUDED.cpu, "
                   "memory_bytes = "
                   "EXCLUDED.memory_bytes, address = EXCLUDED.address, state = "
                   "EXCLUDED.state, offering = EXCLUDED.offering, last_seen = "
                   "now()",
                   worker.id(), worker.region(), worker.instance_id(), json,
                   worker.cpu(), worker.memory_bytes(), worker.address(),
                   WorkerStateName(worker.state()), worker.offering());
               return true;
             })
      .status();
}

absl::Status JobStore::SetWorkerState(const std::string& id,
                                      v1::WorkerState state) {
  return RunTx<bool>(Acquire(),
                     [&](pqxx::work& w) -> absl::StatusOr<bool> {
                       w.exec_params(
                           "UPDATE workers SET state = $2, last_seen = now() "
                           "WHERE id = $1",
                           id, WorkerStateName(state));
                       return true;
                     })
      .status();
}

absl::Status JobStore::SetWorkerDrain(const std::string& id, bool drained) {
  return RunTx<bool>(
             Acquire(),
             [&](pqxx::work& w) -> absl::StatusOr<bool> {
               pqxx::result r = w.exec_params(
                   "UPDATE workers SET drain_requested = $2, state = CASE "
                   "WHEN $2 AND state = 'UP' THEN 'DRAINING' "
                   "WHEN NOT $2 AND state = 'DRAINING' THEN 'UP' "
                   "ELSE state END WHERE id = $1",
                   id, drained);
               if (r.affected_rows() == 0)
                 return absl::NotFoundError(
                     absl::StrCat("worker ", id, " not found"));
               return true;
             })
      .status();
}

absl::StatusOr<std::vector<v1::Worker>> JobStore::ListWorkers() {
  return RunTx<std::vector<v1::Worker>>(
      Acquire(), [&](pqxx::work& w) -> absl::StatusOr<std::vector<v1::Worker>> {
        pqxx::result r = w.exec(
            "SELECT id, region, instance_id, jsonb_build_object('labels', "
            "labels, 'devices', devices)::text, cpu, memory_bytes, address, "
            "state, (extract(epoch FROM last_seen) * 1000)::bigint, offering, "
            "drain_requested FROM workers ORDER BY id");
        std::vector<v1::Worker> out;
        for (const auto& row : r) {
          v1::Worker wk;
          (void)JsonStringToMessage(row[3].c_str(), &wk);
          wk.set_id(row[0].c_str());
          wk.set_region(row[1].c_str());
          wk.set_instance_id(row[2].c_str());
          wk.set_cpu(row[4].as<double>());
          wk.set_memory_bytes(row[5].as<int64_t>());
          wk.set_address(row[6].c_str());
          wk.set_state(WorkerStateFromName(row[7].c_str()));
          *wk.mutable_last_seen() = FromMillis(row[8].as<int64_t>());
          wk.set_offering(row[9].c_str());
          wk.set_drain_requested(row[10].as<bool>());
          out.push_back(std::move(wk));
        }
        return out;
      });
}

}  // namespace tupa::scheduler

// JobStore::CommitBatch and WriteBatch: many jobs' state changes in one
// transaction, one statement per kind of change (write_batch.h).
#include <map>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "scheduler/store/database.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/store_internal.h"
#include "scheduler/store/usage_store.h"
#include "scheduler/store/write_batch.h"

namespace tupa::scheduler {

size_t WriteBatch::AssignJob(int64_t id, int32_t attempt,
                             std::vector<AllocationRecord> nodes) {
  assigns_.push_back({{size_, id, attempt}, std::move(nodes)});
  return size_++;
}

size_t WriteBatch::MarkRunning(int64_t id, int32_t attempt) {
  running_.push_back({size_, id, attempt});
  return size_++;
}

size_t WriteBatch::CloseAllocation(int64_t id, int32_t attempt,
                                   int32_t node_rank, int64_t ended_at_ms,
                                   std::optional<pricing::Money> cost,
                                   std::string currency,
                                   std::optional<int32_t> exit_code) {
  closes_.push_back({size_, id, attempt, node_rank, ended_at_ms, cost,
                     std::move(currency), exit_code});
  return size_++;
}

size_t WriteBatch::FinishJob(int64_t id, int32_t attempt, v1::JobState state,
                             int32_t exit_code, std::string message) {
  finishes_.push_back(
      {{size_, id, attempt}, state, exit_code, std::move(message)});
  return size_++;
}

size_t WriteBatch::UpdateProgress(int64_t id, int32_t attempt,
                                  const v1::Progress& progress) {
  progress_.push_back({{size_, id, attempt}, store_internal::ToJson(progress)});
  return size_++;
}

namespace {

using store_internal::ArrayLiteral;

// The (id, attempt) pairs a fenced UPDATE ... RETURNING id, attempt touched.
using Touched = std::set<std::pair<int64_t, int32_t>>;

Touched TouchedRows(const pqxx::result& r) {
  Touched out;
  for (const auto& row : r)
    out.emplace(row[0].as<int64_t>(), row[1].as<int32_t>());
  return out;
}

std::string Int64s(const std::vector<int64_t>& v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}
std::string Int32s(const std::vector<int32_t>& v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}
std::string Float64s(const std::vector<double>& v) {
  std::vector<std::string> text;
  for (double d : v) text.push_back(absl::StrFormat("%.17g", d));
  return absl::StrCat("{", absl::StrJoin(text, ","), "}");
}

// Every job change writes a job_events row for what it did, like the
// single-row methods (InsertEvent in job_store.cc).
constexpr char kEventsOfTouched[] =
    "e AS (INSERT INTO job_events (job_id, attempt, state, message) "
    "SELECT id, attempt, ";

// PENDING -> ASSIGNED for each (id, attempt), inserting the allocation
// rows of the jobs that moved.
Touched AssignIn(pqxx::work& w, const std::vector<WriteBatch::Assign>& assigns,
                 const std::vector<int64_t>& ids,
                 const std::vector<int32_t>& attempts) {
  ArrayLiteral workers, devices, regions, types;
  std::vector<int64_t> job_ids, started;
  std::vector<int32_t> job_attempts, ranks, ports;
  std::vector<double> shares, gpus;
  for (const auto& a : assigns) {
    for (const AllocationRecord& n : a.nodes) {
      job_ids.push_back(a.job.id);
      job_attempts.push_back(a.job.attempt);
      workers.Add(n.worker_id);
      ranks.push_back(n.node_rank);
      devices.Add(Int32s(n.device_indexes));
      shares.push_back(n.gpu_share);
      ports.push_back(n.master_port);
      regions.Add(n.region);
      types.Add(n.gpu_type);
      gpus.push_back(n.gpus);
      started.push_back(n.started_at_ms);
    }
  }
  static const std::string kSql = absl::StrCat(
      "WITH u AS (UPDATE jobs j SET state = 'ASSIGNED', updated_at = now() "
      "FROM unnest($1::bigint[], $2::int[]) AS t(id, attempt) "
      "WHERE j.id = t.id AND j.attempt = t.attempt AND "
      "j.state = 'PENDING' RETURNING j.id, j.attempt), "
      "n AS (INSERT INTO allocations (job_id, attempt, worker_id, "
      "node_rank, device_indexes, gpu_share, master_port, region, "
      "gpu_type, gpus, started_at) "
      "SELECT n.job_id, n.attempt, n.worker_id, n.node_rank, "
      "n.devices::int[], n.share, n.port, n.region, n.gpu_type, n.gpus, "
      "to_timestamp(n.started_ms::float8 / 1000) "
      "FROM unnest($3::bigint[], $4::int[], $5::text[], $6::int[], "
      "$7::text[], $8::float8[], $9::int[], $10::text[], $11::text[], "
      "$12::float8[], $13::bigint[]) AS n(job_id, attempt, worker_id, "
      "node_rank, devices, share, port, region, gpu_type, gpus, "
      "started_ms) JOIN u ON u.id = n.job_id AND u.attempt = n.attempt), ",
      kEventsOfTouched, "'ASSIGNED', '' FROM u) SELECT id, attempt FROM u");
  pqxx::result r = store_internal::ExecPrepared(
      w, "tupa_assign_jobs", kSql, Int64s(ids), Int32s(attempts),
      Int64s(job_ids), Int32s(job_attempts), workers.Take(), Int32s(ranks),
      devices.Take(), Float64s(shares), Int32s(ports), regions.Take(),
      types.Take(), Float64s(gpus), Int64s(started));
  return TouchedRows(r);
}

Touched MarkRunningIn(pqxx::work& w, const std::vector<int64_t>& ids,
                      const std::vector<int32_t>& attempts) {
  static const std::string kSql = absl::StrCat(
      "WITH u AS (UPDATE jobs j SET state = 'RUNNING', updated_at = now(), "
      "started_at = COALESCE(j.started_at, now()) "
      "FROM unnest($1::bigint[], $2::int[]) AS t(id, attempt) "
      "WHERE j.id = t.id AND j.attempt = t.attempt AND "
      "j.state = 'ASSIGNED' RETURNING j.id, j.attempt), ",
      kEventsOfTouched, "'RUNNING', '' FROM u) SELECT id, attempt FROM u");
  pqxx::result r = store_internal::ExecPrepared(w, "tupa_mark_running", kSql,
                                                Int64s(ids), Int32s(attempts));
  return TouchedRows(r);
}

void CloseAllocationsIn(pqxx::work& w,
                        const std::vector<WriteBatch::Close>& closes) {
  std::vector<int64_t> ids, ended;
  std::vector<int32_t> attempts, ranks;
  ArrayLiteral costs, currencies, exits;
  for (const auto& c : closes) {
    ids.push_back(c.id);
    attempts.push_back(c.attempt);
    ranks.push_back(c.node_rank);
    ended.push_back(c.ended_at_ms);
    costs.Add(store_internal::MoneyParam(c.cost));
    currencies.Add(c.currency);
    exits.Add(c.exit_code ? absl::StrCat(*c.exit_code) : "");
  }
  store_internal::ExecPrepared(
      w, "tupa_close_allocations",
      "UPDATE allocations a SET ended_at = GREATEST(a.started_at, "
      "to_timestamp(t.ended_ms::float8 / 1000)), "
      "cost = NULLIF(t.cost, '')::numeric, currency = NULLIF(t.currency, ''), "
      "exit_code = NULLIF(t.exit_code, '')::int "
      "FROM unnest($1::bigint[], $2::int[], $3::int[], $4::bigint[], "
      "$5::text[], $6::text[], $7::text[]) "
      "AS t(id, attempt, node_rank, ended_ms, cost, currency, exit_code) "
      "WHERE a.job_id = t.id AND a.attempt = t.attempt AND "
      "a.node_rank = t.node_rank AND a.ended_at IS NULL",
      Int64s(ids), Int32s(attempts), Int32s(ranks), Int64s(ended), costs.Take(),
      currencies.Take(), exits.Take());
}

Touched FinishJobsIn(pqxx::work& w,
                     const std::vector<WriteBatch::Finish>& finishes) {
  std::vector<int64_t> ids;
  std::vector<int32_t> attempts, codes;
  ArrayLiteral states, messages;
  for (const auto& f : finishes) {
    ids.push_back(f.job.id);
    attempts.push_back(f.job.attempt);
    states.Add(StateName(f.state));
    codes.push_back(f.exit_code);
    messages.Add(f.message);
  }
  static const std::string kSql = absl::StrCat(
      "WITH u AS (UPDATE jobs j SET state = t.state, exit_code = "
      "t.exit_code, message = t.message, finished_at = now(), "
      "updated_at = now() FROM unnest($1::bigint[], $2::int[], "
      "$3::text[], $4::int[], $5::text[]) AS t(id, attempt, state, "
      "exit_code, message) WHERE j.id = t.id AND j.attempt = t.attempt "
      "AND j.state IN ('PENDING', 'ASSIGNED', 'RUNNING') "
      "RETURNING j.id, j.attempt, t.state, t.message), ",
      kEventsOfTouched, "state, message FROM u) SELECT id, attempt FROM u");
  pqxx::result r = store_internal::ExecPrepared(
      w, "tupa_finish_jobs", kSql, Int64s(ids), Int32s(attempts), states.Take(),
      Int32s(codes), messages.Take());
  return TouchedRows(r);
}

void UpdateProgressIn(pqxx::work& w,
                      const std::vector<WriteBatch::Progress>& progress) {
  std::vector<int64_t> ids;
  std::vector<int32_t> attempts;
  ArrayLiteral json;
  std::set<int64_t> seen;
  for (auto it = progress.rbegin(); it != progress.rend(); ++it) {
    if (!seen.insert(it->job.id).second) continue;  // the last one wins
    ids.push_back(it->job.id);
    attempts.push_back(it->job.attempt);
    json.Add(it->json);
  }
  store_internal::ExecPrepared(
      w, "tupa_update_progress",
      "UPDATE jobs j SET progress = t.progress::jsonb "
      "FROM unnest($1::bigint[], $2::int[], $3::text[]) "
      "AS t(id, attempt, progress) WHERE j.id = t.id AND j.attempt = t.attempt",
      Int64s(ids), Int32s(attempts), json.Take());
}

absl::Status Fenced(const Touched& touched, int64_t id, int32_t attempt) {
  if (touched.count({id, attempt})) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "job ", id, " attempt ", attempt, " is not current or not active"));
}

}  // namespace

absl::StatusOr<std::vector<absl::Status>> JobStore::CommitBatch(
    const WriteBatch& batch) {
  if (batch.empty()) return std::vector<absl::Status>();
  auto result = db_->RunTx<std::vector<absl::Status>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<absl::Status>> {
        std::vector<absl::Status> out(batch.size());
        auto fence = [&](const auto& changes, auto run) {
          if (changes.empty()) return;
          std::vector<int64_t> ids;
          std::vector<int32_t> attempts;
          for (const auto& c : changes) {
            ids.push_back(c.id);
            attempts.push_back(c.attempt);
          }
          const Touched touched = run(ids, attempts);
          for (const auto& c : changes)
            out[c.index] = Fenced(touched, c.id, c.attempt);
        };
        std::vector<WriteBatch::JobAttempt> assigned, finished;
        for (const auto& a : batch.assigns_) assigned.push_back(a.job);
        for (const auto& f : batch.finishes_) finished.push_back(f.job);
        fence(assigned, [&](const auto& ids, const auto& attempts) {
          return AssignIn(w, batch.assigns_, ids, attempts);
        });
        fence(batch.running_, [&](const auto& ids, const auto& attempts) {
          return MarkRunningIn(w, ids, attempts);
        });
        if (!batch.closes_.empty()) CloseAllocationsIn(w, batch.closes_);
        fence(finished, [&](const auto&, const auto&) {
          return FinishJobsIn(w, batch.finishes_);
        });
        if (!batch.progress_.empty()) UpdateProgressIn(w, batch.progress_);
        return out;
      });
  if (!batch.closes_.empty()) {
    // After the commit, and after a failure too (the commit may have
    // happened): TeamSpend's cached answers may be stale.
    if (usage_ != nullptr) usage_->CostsChanged();
  }
  return result;
}

}  // namespace tupa::scheduler

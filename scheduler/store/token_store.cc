#include "scheduler/store/token_store.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "scheduler/store/database.h"
#include "scheduler/store/store_internal.h"

namespace tupa::scheduler {
namespace {

constexpr char kColumns[] =
    "id, user_name, team, role, "
    "(extract(epoch FROM created_at) * 1000)::bigint, "
    "COALESCE((extract(epoch FROM revoked_at) * 1000)::bigint, 0)";

ApiTokenRecord FromRow(const pqxx::row& row) {
  ApiTokenRecord t;
  t.id = row[0].as<int64_t>();
  t.user = row[1].c_str();
  t.team = row[2].c_str();
  t.admin = std::string(row[3].c_str()) == "admin";
  t.created_at_ms = row[4].as<int64_t>();
  t.revoked_at_ms = row[5].as<int64_t>();
  return t;
}

}  // namespace

TokenStore::TokenStore(Database* db) : db_(db) {}

absl::StatusOr<ApiTokenRecord> TokenStore::InsertToken(
    const std::string& sha256_hex, const std::string& user,
    const std::string& team, bool admin, const char* on_conflict) {
  return db_->RunTx<ApiTokenRecord>(
      [&](pqxx::work& w) -> absl::StatusOr<ApiTokenRecord> {
        pqxx::result r = w.exec_params(
            absl::StrCat("INSERT INTO api_tokens (token_sha256, user_name, "
                         "team, role) VALUES ($1, $2, $3, $4) ",
                         on_conflict, " RETURNING ", kColumns),
            sha256_hex, user, team, admin ? "admin" : "user");
        return FromRow(r[0]);
      });
}

absl::StatusOr<ApiTokenRecord> TokenStore::CreateToken(
    const std::string& sha256_hex, const std::string& user,
    const std::string& team, bool admin) {
  return InsertToken(sha256_hex, user, team, admin, "");
}

absl::StatusOr<ApiTokenRecord> TokenStore::UpsertToken(
    const std::string& sha256_hex, const std::string& user,
    const std::string& team, bool admin) {
  return InsertToken(sha256_hex, user, team, admin,
                     "ON CONFLICT (token_sha256) DO UPDATE SET "
                     "user_name = EXCLUDED.user_name, team = EXCLUDED.team, "
                     "role = EXCLUDED.role");
}

absl::StatusOr<ApiTokenRecord> TokenStore::LookupToken(
    const std::string& sha256_hex) {
  return db_->RunTx<ApiTokenRecord>(
      [&](pqxx::work& w) -> absl::StatusOr<ApiTokenRecord> {
        pqxx::result r = w.exec_params(
            absl::StrCat("SELECT ", kColumns,
                         " FROM api_tokens WHERE token_sha256 = $1"),
            sha256_hex);
        if (r.empty()) return absl::NotFoundError("token: unknown");
        return FromRow(r[0]);
      });
}

absl::StatusOr<std::vector<ApiTokenRecord>> TokenStore::ListTokens() {
  return db_->RunTx<std::vector<ApiTokenRecord>>(
      [&](pqxx::work& w) -> absl::StatusOr<std::vector<ApiTokenRecord>> {
        pqxx::result r = w.exec_params(
            absl::StrCat("SELECT ", kColumns, " FROM api_tokens ORDER BY id"));
        std::vector<ApiTokenRecord> out;
        for (const auto& row : r) out.push_back(FromRow(row));
        return out;
      });
}

absl::StatusOr<ApiTokenRecord> TokenStore::RevokeToken(int64_t id) {
  return db_->RunTx<ApiTokenRecord>(
      [&](pqxx::work& w) -> absl::StatusOr<ApiTokenRecord> {
        pqxx::result r = w.exec_params(
            absl::StrCat("UPDATE api_tokens SET revoked_at = "
                         "COALESCE(revoked_at, now()) WHERE id = $1 "
                         "RETURNING ",
                         kColumns),
            id);
        if (r.empty())
          return absl::NotFoundError(absl::StrCat("token ", id, ": not found"));
        return FromRow(r[0]);
      });
}

}  // namespace tupa::scheduler

// TokenStore: API tokens (bearer tokens with a user, team and role). The
// token itself never reaches the store, only its SHA-256 (lowercase hex).
//
// Every method is one transaction on the shared Database (database.h);
// errors follow pg_errors.h. Thread-safe.
#ifndef TUPA_SCHEDULER_STORE_TOKEN_STORE_H_
#define TUPA_SCHEDULER_STORE_TOKEN_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tupa::scheduler {

class Database;  // database.h

// One API token row.
struct ApiTokenRecord {
  int64_t id = 0;
  std::string user;
  std::string team;
  bool admin = false;
  int64_t created_at_ms = 0;
  int64_t revoked_at_ms = 0;  // 0: active
};

class TokenStore {
 public:
  // `db` outlives the store.
  explicit TokenStore(Database* db);

  // AlreadyExists when a row has that hash.
  absl::StatusOr<ApiTokenRecord> CreateToken(const std::string& sha256_hex,
                                             const std::string& user,
                                             const std::string& team,
                                             bool admin);
  // Inserts the token, or makes an existing row with that hash belong to
  // `user`/`team` with the given role (a revoked row stays revoked).
  absl::StatusOr<ApiTokenRecord> UpsertToken(const std::string& sha256_hex,
                                             const std::string& user,
                                             const std::string& team,
                                             bool admin);
  // NotFound when no row has that hash (revoked rows are returned).
  absl::StatusOr<ApiTokenRecord> LookupToken(const std::string& sha256_hex);
  // All rows, by id.
  absl::StatusOr<std::vector<ApiTokenRecord>> ListTokens();
  // Sets revoked_at (idempotent); NotFound for an unknown id.
  absl::StatusOr<ApiTokenRecord> RevokeToken(int64_t id);

 private:
  // CreateToken and UpsertToken: one INSERT, `on_conflict` the difference.
  absl::StatusOr<ApiTokenRecord> InsertToken(const std::string& sha256_hex,
                                             const std::string& user,
                                             const std::string& team,
                                             bool admin,
                                             const char* on_conflict);

  Database* const db_;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_STORE_TOKEN_STORE_H_

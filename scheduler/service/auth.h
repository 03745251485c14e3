// Authentication (bearer token -> Principal) and authorization: the ONE
// place that decides who may do what. Handlers call Authenticate() first,
// then one Can*() function per decision; nothing else in the scheduler
// looks at roles or teams.
//
// Rules (DESIGN §9):
//   - a user submits as themselves: with auth on, the job's user and team
//     come from the token (ApplySubmitter), never from the request;
//   - a user reads (get, list, watch, logs) their own and their team-mates'
//     jobs, and cancels only their own;
//   - other teams' jobs are invisible: NOT_FOUND for one job, filtered out
//     of lists;
//   - workers are visible to every authenticated caller; draining one, the
//     cost report of all teams and token administration need an admin
//     (a user's cost report covers their own team only);
//   - admins may do everything.
// With auth disabled (dev mode) every caller is an anonymous admin and no
// request field is overridden.
//
// Tokens are "tupa_" + 64 hex digits (32 bytes from RAND_bytes); the store
// keeps only their SHA-256 (hex). Authenticator is thread-safe.
#ifndef TUPA_SCHEDULER_SERVICE_AUTH_H_
#define TUPA_SCHEDULER_SERVICE_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/token_store.h"
#include "tupa/v1/job.pb.h"

namespace tupa::scheduler {

enum class Role { kUser, kAdmin };

struct Principal {
  std::string user;
  std::string team;
  Role role = Role::kUser;
  // Auth is off: an anonymous admin whose requests are taken as given.
  bool anonymous = false;
};

// The principal every call gets while auth is disabled.
Principal AnonymousAdmin();

// Lowercase hex SHA-256 of `token` (OpenSSL EVP).
std::string HashToken(absl::string_view token);
// A fresh token: "tupa_" + hex of 32 bytes from RAND_bytes.
std::string NewToken();

class Authenticator {
 public:
  // `store` may be null only when `enabled` is false.
  Authenticator(TokenStore* store, bool enabled,
                absl::Duration cache_ttl = absl::Seconds(5));

  bool enabled() const { return enabled_; }

  // The caller of `ctx` (its `authorization: Bearer TOKEN` metadata).
  // UNAUTHENTICATED for a missing, malformed, unknown or revoked token;
  // UNAVAILABLE when the store cannot be reached.
  absl::StatusOr<Principal> Authenticate(const grpc::ServerContextBase& ctx);
  absl::StatusOr<Principal> AuthenticateToken(absl::string_view token);

  // Forgets cached lookups (after a revocation).
  void InvalidateCache();

 private:
  struct CacheEntry {
    absl::StatusOr<Principal> principal;
    absl::Time expires;
  };

  TokenStore* const store_;
  const bool enabled_;
  const absl::Duration ttl_;
  absl::Mutex mu_;
  std::map<std::string, CacheEntry> cache_ ABSL_GUARDED_BY(mu_);
};

// ---- authorization: one function per decision ---------------------------
bool IsAdmin(const Principal& p);
// Get, list, watch, logs of one job.
bool CanReadJob(const Principal& p, const v1::JobSpec& spec);
bool CanCancelJob(const Principal& p, const v1::JobSpec& spec);
// Every job of every team, unfiltered.
bool CanListAll(const Principal& p);
bool CanListWorkers(const Principal& p);
bool CanDrainWorker(const Principal& p);
bool CanEstimate(const Principal& p);
// The cost report of every team (a user gets their own team's).
bool CanSeeAllCosts(const Principal& p);
bool CanAdministerTokens(const Principal& p);

// With auth on, the job's user (and team, when the token has one) become
// the caller's.
void ApplySubmitter(const Principal& p, v1::JobSpec& spec);
// Narrows a job list filter to what `p` may see; false when the filter
// asks only for jobs `p` may not see (the answer is an empty list).
bool ScopeJobFilter(const Principal& p, JobFilter& filter);

// PERMISSION_DENIED naming the action and the caller.
absl::Status PermissionDenied(const Principal& p, absl::string_view action);

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_AUTH_H_

#include "scheduler/service/auth.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace tupa::scheduler {
namespace {

constexpr char kTokenPrefix[] = "tupa_";
constexpr size_t kMaxTokenSize = 512;
constexpr size_t kMaxCacheEntries = 10000;

absl::Status Unauthenticated(absl::string_view why) {
  return absl::UnauthenticatedError(absl::StrCat(
      "unauthenticated: ", why,
      " (send `authorization: Bearer TOKEN`; the CLI reads TUPA_TOKEN)"));
}

}  // namespace

Principal AnonymousAdmin() {
  Principal p;
  p.role = Role::kAdmin;
  p.anonymous = true;
  return p;
}

std::string HashToken(absl::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest, &size, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(
      reinterpret_cast<const char*>(digest), static_cast<size_t>(size)));
}

std::string NewToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) abort();  // no entropy: unsafe
  return absl::StrCat(
      kTokenPrefix, absl::BytesToHexString(absl::string_view(
                        reinterpret_cast<const char*>(bytes), sizeof(bytes))));
}

Authenticator::Authenticator(TokenStore* store, bool enabled,
                             absl::Duration cache_ttl)
    : store_(store), enabled_(enabled), ttl_(cache_ttl) {}

absl::StatusOr<Principal> Authenticator::Authenticate(
    const grpc::ServerContextBase& ctx) {
  if (!enabled_) return AnonymousAdmin();
  const auto& metadata = ctx.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return Unauthenticated("no bearer token");
  const absl::string_view value(it->second.data(), it->second.size());
  if (!absl::StartsWithIgnoreCase(value, "bearer "))
    return Unauthenticated("authorization is not a bearer token");
  return AuthenticateToken(absl::StripAsciiWhitespace(value.substr(7)));
}

absl::StatusOr<Principal> Authenticator::AuthenticateToken(
    absl::string_view token) {
  if (!enabled_) return AnonymousAdmin();
  if (token.empty()) return Unauthenticated("empty bearer token");
  if (token.size() > kMaxTokenSize) return Unauthenticated("invalid token");
  const std::string hash = HashToken(token);
  const absl::Time now = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    auto it = cache_.find(hash);
    if (it != cache_.end() && it->second.expires > now)
      return it->second.principal;
  }
  absl::StatusOr<Principal> result;
  absl::StatusOr<ApiTokenRecord> record = store_->LookupToken(hash);
  if (record.ok() && record->revoked_at_ms != 0) {
    result = Unauthenticated("token revoked");
  } else if (record.ok()) {
    Principal p;
    p.user = record->user;
    p.team = record->team;
    p.role = record->admin ? Role::kAdmin : Role::kUser;
    result = p;
  } else if (record.status().code() == absl::StatusCode::kNotFound) {
    result = Unauthenticated("invalid token");
  } else {
    // The store is down: neither cache nor admit.
    return absl::UnavailableError(
        absl::StrCat("cannot check the token: ", record.status().message()));
  }
  absl::MutexLock lock(&mu_);
  if (cache_.size() >= kMaxCacheEntries) cache_.clear();
  cache_[hash] = CacheEntry{result, now + ttl_};
  return result;
}

void Authenticator::InvalidateCache() {
  absl::MutexLock lock(&mu_);
  cache_.clear();
}

bool IsAdmin(const Principal& p) { return p.role == Role::kAdmin; }

bool CanReadJob(const Principal& p, const v1::JobSpec& spec) {
  if (IsAdmin(p)) return true;
  if (spec.user() == p.user) return true;
  return !p.team.empty() && spec.team() == p.team;
}

bool CanCancelJob(const Principal& p, const v1::JobSpec& spec) {
  return IsAdmin(p) || (!p.user.empty() && spec.user() == p.user);
}

bool CanListAll(const Principal& p) { return IsAdmin(p); }
bool CanListWorkers(const Principal&) { return true; }
bool CanDrainWorker(const Principal& p) { return IsAdmin(p); }
bool CanEstimate(const Principal&) { return true; }
bool CanSeeAllCosts(const Principal& p) { return IsAdmin(p); }
bool CanAdministerTokens(const Principal& p) { return IsAdmin(p); }

void ApplySubmitter(const Principal& p, v1::JobSpec& spec) {
  if (p.anonymous) return;
  spec.set_user(p.user);
  if (!p.team.empty() || !IsAdmin(p)) spec.set_team(p.team);
}

bool ScopeJobFilter(const Principal& p, JobFilter& filter) {
  if (CanListAll(p)) return true;
  if (!filter.team.empty() && filter.team != p.team) {
    // Another team's list: only the caller's own jobs there, if any.
    if (!filter.user.empty() && filter.user != p.user) return false;
    filter.user = p.user;
    return true;
  }
  if (filter.user.empty() || filter.user == p.user) {
    if (filter.team.empty() && filter.user.empty()) filter.team = p.team;
    return true;
  }
  filter.team = p.team;  // a team-mate's jobs
  return true;
}

absl::Status PermissionDenied(const Principal& p, absl::string_view action) {
  return absl::PermissionDeniedError(
      absl::StrCat("permission denied: ", action, " (you are ", p.user,
                   p.team.empty() ? "" : absl::StrCat(" of team ", p.team),
                   ", role ", IsAdmin(p) ? "admin" : "user", ")"));
}

}  // namespace tupa::scheduler

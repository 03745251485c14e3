#include "worker/agent/advertise_addr.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tupa::worker {
namespace {

std::string AddressText(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf,
              sizeof(buf));
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr,
              buf, sizeof(buf));
  }
  return buf;
}

bool IsIpLiteral(const std::string& host) {
  in_addr v4;
  in6_addr v6;
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 ||
         inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

}  // namespace

absl::StatusOr<HostPort> ParseTarget(const std::string& target) {
  absl::string_view t = absl::StripAsciiWhitespace(target);
  if (t.empty()) return absl::InvalidArgumentError("--scheduler: empty");
  if (absl::StartsWith(t, "unix:") || absl::StartsWith(t, "unix-abstract:"))
    return HostPort{"", ""};
  if (!absl::ConsumePrefix(&t, "dns:///") && !absl::ConsumePrefix(&t, "dns:"))
    if (!absl::ConsumePrefix(&t, "ipv4:")) absl::ConsumePrefix(&t, "ipv6:");
  HostPort out;
  if (absl::ConsumePrefix(&t, "[")) {
    const size_t close = t.find(']');
    if (close == absl::string_view::npos)
      return absl::InvalidArgumentError(
          absl::StrCat("--scheduler: unclosed [ in ", target));
    out.host = std::string(t.substr(0, close));
    absl::string_view rest = t.substr(close + 1);
    if (absl::ConsumePrefix(&rest, ":")) out.port = std::string(rest);
    return out;
  }
  const size_t colon = t.rfind(':');
  // One colon: host:port. More: a bare IPv6 address.
  if (colon != absl::string_view::npos && t.find(':') == colon) {
    out.host = std::string(t.substr(0, colon));
    out.port = std::string(t.substr(colon + 1));
  } else {
    out.host = std::string(t);
  }
  return out;
}

bool IsLoopbackHost(const std::string& host) {
  if (host.empty()) return true;
  const std::string h = absl::AsciiStrToLower(host);
  if (h == "localhost" || absl::EndsWith(h, ".localhost")) return true;
  in_addr v4;
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
  }
  return false;
}

absl::StatusOr<std::string> ResolveToIp(const std::string& host) {
  if (IsIpLiteral(host)) return host;
  addrinfo hints = {};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr)
    return absl::NotFoundError(
        absl::StrCat(host, " does not resolve: ", gai_strerror(rc)));
  std::string v4, v6;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET && v4.empty()) v4 = AddressText(a->ai_addr);
    if (a->ai_family == AF_INET6 && v6.empty()) v6 = AddressText(a->ai_addr);
  }
  freeaddrinfo(found);
  if (!v4.empty()) return v4;
  if (!v6.empty()) return v6;
  return absl::NotFoundError(absl::StrCat(host, " has no IP address"));
}

absl::StatusOr<std::string> LocalAddressTowards(const std::string& target) {
  absl::StatusOr<HostPort> hp = ParseTarget(target);
  if (!hp.ok()) return hp.status();
  if (hp->host.empty()) return std::string("127.0.0.1");  // unix socket
  absl::StatusOr<std::string> ip = ResolveToIp(hp->host);
  if (!ip.ok()) return absl::UnavailableError(ip.status().message());
  addrinfo hints = {};
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* found = nullptr;
  // Any port routes the same; connect() on UDP sends nothing.
  if (getaddrinfo(ip->c_str(), "9", &hints, &found) != 0 || found == nullptr)
    return absl::UnavailableError(absl::StrCat("cannot parse ", *ip));
  absl::StatusOr<std::string> out =
      absl::UnavailableError(absl::StrCat("no route to ", *ip));
  const int fd = socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_storage local = {};
    socklen_t len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0)
      out = AddressText(reinterpret_cast<sockaddr*>(&local));
  } else if (fd >= 0) {
    out = absl::UnavailableError(
        absl::StrCat("no route to ", *ip, ": ", std::strerror(errno)));
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return out;
}

absl::StatusOr<std::string> CheckAdvertiseAddr(const std::string& flag,
                                               const std::string& scheduler) {
  const std::string given(absl::StripAsciiWhitespace(flag));
  if (given.empty()) return std::string();
  absl::StatusOr<std::string> ip = ResolveToIp(given);
  if (!ip.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("--advertise-addr ", given, ": ", ip.status().message(),
                     " (MASTER_ADDR must be an IP that other hosts reach)"));
  if (!IsLoopbackHost(*ip)) return *ip;
  absl::StatusOr<HostPort> hp = ParseTarget(scheduler);
  if (!hp.ok()) return hp.status();
  // A scheduler on loopback means a one-host cluster: loopback is right.
  bool scheduler_local = IsLoopbackHost(hp->host);
  if (!scheduler_local) {
    absl::StatusOr<std::string> sip = ResolveToIp(hp->host);
    scheduler_local = sip.ok() && IsLoopbackHost(*sip);
  }
  if (scheduler_local) return *ip;
  return absl::InvalidArgumentError(absl::StrCat(
      "--advertise-addr ", given,
      " is a loopback address but the scheduler (--scheduler ", scheduler,
      ") is on another host: ranks of a job this worker leads on other hosts "
      "would dial their own loopback for MASTER_ADDR. Leave --advertise-addr "
      "unset (the local address of the connection to the scheduler is "
      "advertised) or give an address the other hosts reach"));
}

}  // namespace tupa::worker

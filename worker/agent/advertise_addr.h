// The address a worker advertises (DESIGN §6): other nodes reach it there,
// and it is the MASTER_ADDR of the jobs it leads, so it is always an IP.
//
// By default it is the local IP of the worker's connection to the
// scheduler (the address the kernel routes the scheduler's traffic from),
// so a worker on a host of its own advertises that host's address, and one
// beside a scheduler on loopback advertises loopback. An explicit loopback
// address with a scheduler on another host is refused: ranks on other
// hosts would dial their own loopback. Pure functions except for name
// resolution (getaddrinfo) and a connected UDP socket (no packet is sent).
#ifndef TUPA_WORKER_AGENT_ADVERTISE_ADDR_H_
#define TUPA_WORKER_AGENT_ADVERTISE_ADDR_H_

#include <string>

#include "absl/status/statusor.h"

namespace tupa::worker {

struct HostPort {
  std::string host;  // a name or an IP, without brackets; "" for unix:
  std::string port;
};

// The host and port of a gRPC target: host:port, [v6]:port, dns:///host:port,
// ipv4:host:port, ipv6:[v6]:port; unix:PATH gives an empty host.
// InvalidArgument for an empty target.
absl::StatusOr<HostPort> ParseTarget(const std::string& target);

// True for localhost, 127.0.0.0/8, ::1 and an empty host (unix sockets).
bool IsLoopbackHost(const std::string& host);

// The IP (text) of `host`: the host itself when it is an IP literal, else
// its first IPv4 address (IPv6 when it has none). NotFound when it does not
// resolve.
absl::StatusOr<std::string> ResolveToIp(const std::string& host);

// The local IP of a connection to the scheduler at `target`. Unavailable
// when the scheduler's host does not resolve or has no route.
absl::StatusOr<std::string> LocalAddressTowards(const std::string& target);

// Checks --advertise-addr against --scheduler at start: "" (the default)
// stays "" (found per connection by LocalAddressTowards); a name becomes
// its IP; a loopback address with a scheduler that is not on loopback is
// InvalidArgument naming the flag and the fix.
absl::StatusOr<std::string> CheckAdvertiseAddr(const std::string& flag,
                                               const std::string& scheduler);

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_ADVERTISE_ADDR_H_

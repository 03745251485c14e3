#include "worker/trainer/tcp_store.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tupa::trainer {
namespace {

enum Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3 };

bool ReadFull(int fd, void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteFull(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void AppendU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

bool ReadU32(int fd, uint32_t& v) {
  unsigned char b[4];
  if (!ReadFull(fd, b, 4)) return false;
  v = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  return true;
}

bool ReadString(int fd, std::string& s) {
  uint32_t len;
  if (!ReadU32(fd, len) || len > (1u << 28)) return false;
  s.resize(len);
  return len == 0 || ReadFull(fd, s.data(), len);
}

absl::Status Errno(const char* what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(
    int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    absl::Status s = Errno(absl::StrCat("bind port ", port).c_str());
    ::close(fd);
    return s;
  }
  if (::listen(fd, 128) != 0) {
    absl::Status s = Errno("listen");
    ::close(fd);
    return s;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  auto server = std::unique_ptr<TcpStoreServer>(
      new TcpStoreServer(fd, ntohs(addr.sin_port)));
  server->accept_thread_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

TcpStoreServer::TcpStoreServer(int listen_fd, int port)
    : listen_fd_(listen_fd), port_(port) {}

TcpStoreServer::~TcpStoreServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  accept_thread_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);
    threads = std::move(client_threads_);
  }
  changed_.notify_all();
  for (std::thread& t : threads) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : client_fds_) ::close(fd);
}

void TcpStoreServer::AcceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    client_fds_.push_back(fd);
    client_threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void TcpStoreServer::Serve(int fd) {
  while (!stopping_) {
    uint8_t op;
    std::string key, value;
    uint32_t timeout_ms;
    if (!ReadFull(fd, &op, 1) || !ReadString(fd, key) ||
        !ReadString(fd, value) || !ReadU32(fd, timeout_ms)) {
      return;
    }
    uint8_t status = 0;
    std::string reply;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (op == kSet) {
        data_[key] = std::move(value);
        changed_.notify_all();
      } else if (op == kGet) {
        bool found = changed_.wait_for(
            lock, std::chrono::milliseconds(timeout_ms),
            [&] { return stopping_ || data_.count(key) > 0; });
        auto it = data_.find(key);
        if (found && it != data_.end()) {
          reply = it->second;
        } else {
          status = 1;
        }
      } else if (op == kAdd) {
        int64_t current = 0, delta = 0;
        auto it = data_.find(key);
        if (it != data_.end()) (void)absl::SimpleAtoi(it->second, &current);
        (void)absl::SimpleAtoi(value, &delta);
        reply = absl::StrCat(current + delta);
        data_[key] = reply;
        changed_.notify_all();
      } else {
        return;
      }
    }
    std::string out(1, static_cast<char>(status));
    AppendU32(out, static_cast<uint32_t>(reply.size()));
    out += reply;
    if (!WriteFull(fd, out.data(), out.size())) return;
  }
}

absl::StatusOr<std::unique_ptr<TcpStoreClient>> TcpStoreClient::Connect(
    const std::string& host, int port, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  std::string last_error = "no attempt";
  while (true) {
    addrinfo* res = nullptr;
    int rc =
        ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) {
      last_error = absl::StrCat("resolve ", host, ": ", gai_strerror(rc));
    } else {
      for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                          ai->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
          ::freeaddrinfo(res);
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          return std::unique_ptr<TcpStoreClient>(new TcpStoreClient(fd));
        }
        last_error = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(res);
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rendezvous store ", host, ":", port, " unreachable: ", last_error));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

TcpStoreClient::~TcpStoreClient() { ::close(fd_); }

absl::StatusOr<std::string> TcpStoreClient::Call(uint8_t op,
                                                 absl::string_view key,
                                                 absl::string_view value,
                                                 absl::Duration timeout) {
  std::string req(1, static_cast<char>(op));
  AppendU32(req, static_cast<uint32_t>(key.size()));
  req.append(key.data(), key.size());
  AppendU32(req, static_cast<uint32_t>(value.size()));
  req.append(value.data(), value.size());
  int64_t ms = std::max<int64_t>(0, absl::ToInt64Milliseconds(timeout));
  AppendU32(req, static_cast<uint32_t>(std::min<int64_t>(ms, 0xffffffffLL)));
  std::lock_guard<std::mutex> lock(mu_);
  uint8_t status;
  std::string reply;
  if (!WriteFull(fd_, req.data(), req.size()) || !ReadFull(fd_, &status, 1) ||
      !ReadString(fd_, reply)) {
    return absl::UnavailableError("rendezvous store connection lost");
  }
  if (status != 0) {
    return absl::DeadlineExceededError(
        absl::StrCat("rendezvous store: key \"", key, "\" not set in time"));
  }
  return reply;
}

absl::Status TcpStoreClient::Set(absl::string_view key,
                                 absl::string_view value) {
  return Call(kSet, key, value, absl::ZeroDuration()).status();
}

absl::StatusOr<std::string> TcpStoreClient::Get(absl::string_view key,
                                                absl::Duration timeout) {
  return Call(kGet, key, "", timeout);
}

absl::StatusOr<int64_t> TcpStoreClient::Add(absl::string_view key,
                                            int64_t delta) {
  absl::StatusOr<std::string> r =
      Call(kAdd, key, absl::StrCat(delta), absl::ZeroDuration());
  if (!r.ok()) return r.status();
  int64_t v = 0;
  if (!absl::SimpleAtoi(*r, &v)) {
    return absl::InternalError("rendezvous store: bad ADD reply");
  }
  return v;
}

absl::Status TcpStoreClient::Wait(const std::vector<std::string>& keys,
                                  absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (const std::string& key : keys) {
    absl::StatusOr<std::string> r = Get(key, deadline - absl::Now());
    if (!r.ok()) return r.status();
  }
  return absl::OkStatus();
}

}  // namespace tupa::trainer

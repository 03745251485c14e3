// TcpStore: the KvStore rank 0 serves at MASTER_ADDR:MASTER_PORT and every
// rank (rank 0 included) talks to as a client, like torch's TCPStore.
//
// Wire protocol (all integers little-endian), one request at a time per
// connection:
//   request  = op:u8, key_len:u32, key, value_len:u32, value, timeout_ms:u32
//   response = status:u8 (0 ok, 1 timed out), value_len:u32, value
// ops: 1 SET, 2 GET (waits up to timeout_ms for the key), 3 ADD (value is a
// decimal delta; the reply is the new decimal value).
#ifndef TUPA_WORKER_TRAINER_TCP_STORE_H_
#define TUPA_WORKER_TRAINER_TCP_STORE_H_

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "worker/trainer/kv_store.h"

namespace tupa::trainer {

// The server half. Listens on all interfaces at `port` (0 picks a free one)
// and serves until destroyed. Thread-safe.
class TcpStoreServer {
 public:
  static absl::StatusOr<std::unique_ptr<TcpStoreServer>> Start(int port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }

 private:
  TcpStoreServer(int listen_fd, int port);
  void AcceptLoop();
  void Serve(int fd);

  const int listen_fd_;
  const int port_;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::string> data_ ABSL_GUARDED_BY(mu_);
  std::vector<int> client_fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> client_threads_ ABSL_GUARDED_BY(mu_);
};

// The client half: one connection, serialised by a mutex. Thread-safe.
class TcpStoreClient : public KvStore {
 public:
  // Connects to host:port, retrying until `timeout` (the server may not be
  // up yet). DeadlineExceeded when it never answers.
  static absl::StatusOr<std::unique_ptr<TcpStoreClient>> Connect(
      const std::string& host, int port, absl::Duration timeout);
  ~TcpStoreClient() override;

  absl::Status Set(absl::string_view key, absl::string_view value) override;
  absl::StatusOr<std::string> Get(absl::string_view key,
                                  absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta) override;
  absl::Status Wait(const std::vector<std::string>& keys,
                    absl::Duration timeout) override;

 private:
  explicit TcpStoreClient(int fd) : fd_(fd) {}
  absl::StatusOr<std::string> Call(uint8_t op, absl::string_view key,
                                   absl::string_view value,
                                   absl::Duration timeout);

  std::mutex mu_;
  int fd_;
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_TCP_STORE_H_

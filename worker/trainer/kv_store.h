// KvStore: the rendezvous key/value store shared by the ranks of one run
// (torch's c10d Store). Rank 0 serves it over TCP (tcp_store.h); backends
// use it to exchange connection data (Gloo addresses, the NCCL unique id).
// Implementations are thread-safe.
#ifndef TUPA_WORKER_TRAINER_KV_STORE_H_
#define TUPA_WORKER_TRAINER_KV_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tupa::trainer {

class KvStore {
 public:
  virtual ~KvStore() = default;

  // Sets key to value (overwrites).
  virtual absl::Status Set(absl::string_view key, absl::string_view value) = 0;
  // Waits until key exists (or `timeout` passes: DeadlineExceeded) and
  // returns its value.
  virtual absl::StatusOr<std::string> Get(absl::string_view key,
                                          absl::Duration timeout) = 0;
  // Atomically adds `delta` to the integer stored at key (missing = 0) and
  // returns the new value.
  virtual absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta) = 0;
  // Waits until all keys exist; DeadlineExceeded after `timeout`.
  virtual absl::Status Wait(const std::vector<std::string>& keys,
                            absl::Duration timeout) = 0;
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_KV_STORE_H_

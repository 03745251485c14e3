// GlooComm: CPU collectives for the CPU backend. Connects the ranks with
// Gloo's TCP transport (rendezvous through a KvStore) and runs all-reduces
// on a dedicated comm thread so they overlap with the backward pass.
//
// Gloo reports errors with exceptions; they are caught here and become
// Unavailable. After an error every later call fails. Thread-compatible:
// the public methods are called from one thread (the engine's); the comm
// thread is internal.
#ifndef TUPA_WORKER_TRAINER_CPU_GLOO_COMM_H_
#define TUPA_WORKER_TRAINER_CPU_GLOO_COMM_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "worker/trainer/kv_store.h"

namespace gloo {
class Context;
}

namespace tupa::trainer {

class GlooComm {
 public:
  GlooComm() = default;
  ~GlooComm();
  GlooComm(const GlooComm&) = delete;
  GlooComm& operator=(const GlooComm&) = delete;

  // Rendezvous with the other ranks of one group: `rank` and `world_size`
  // are within the group, whose members all pass the same `prefix` (a
  // group's keys in the shared store; groups with different prefixes are
  // independent). `bind_address` is this host's address reachable by the
  // peers ("127.0.0.1" on one machine).
  absl::Status Init(KvStore& store, int rank, int world_size,
                    const std::string& bind_address, absl::Duration timeout,
                    const std::string& prefix = "gloo");

  // Queues an in-place float sum; runs on the comm thread in FIFO order.
  absl::Status AllReduceSumAsync(float* data, size_t n);
  // Waits for the queue to drain; returns the first error.
  absl::Status Wait();
  // Synchronous broadcast of raw bytes from `root` (drains the queue first).
  absl::Status Broadcast(void* data, size_t bytes, int root);
  // Synchronous in-place sums on the calling thread (drain the queue first).
  absl::Status AllReduceSumNow(float* data, size_t n);
  absl::Status AllReduceSumNow(double* data, size_t n);

 private:
  struct Work {
    float* data;
    size_t n;
  };
  void CommLoop();
  template <typename T>
  absl::Status AllReduceNow(T* data, size_t n);

  std::shared_ptr<gloo::Context> context_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work> queue_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  uint32_t tag_ = 0;  // comm thread only (and Broadcast when idle)
};

}  // namespace tupa::trainer

#endif  // TUPA_WORKER_TRAINER_CPU_GLOO_COMM_H_

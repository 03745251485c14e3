// TimerQueue: runs callbacks at given times on a small fixed pool of
// threads, so thousands of simulated workers (heartbeats, node ends,
// progress) need no thread each. Callbacks must be short and must not
// block: they run one after another on the pool. Thread-safe. Timers
// still pending at Stop() (or destruction) are dropped, never run.
#ifndef TUPA_BENCH_FLEET_SIM_TIMER_QUEUE_H_
#define TUPA_BENCH_FLEET_SIM_TIMER_QUEUE_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tupa::fleet_sim {

class TimerQueue {
 public:
  explicit TimerQueue(int threads);
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  void At(absl::Time when, std::function<void()> fn);
  void After(absl::Duration delay, std::function<void()> fn);
  // Drops pending timers and joins the threads (waits for running ones).
  void Stop();

 private:
  struct Entry {
    absl::Time when;
    uint64_t seq;  // FIFO among equal times
    std::function<void()> fn;
    bool operator>(const Entry& o) const {
      return when != o.when ? when > o.when : seq > o.seq;
    }
  };
  void Loop();

  absl::Mutex mu_;
  absl::CondVar changed_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tupa::fleet_sim

#endif  // TUPA_BENCH_FLEET_SIM_TIMER_QUEUE_H_

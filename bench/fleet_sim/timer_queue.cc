#include "bench/fleet_sim/timer_queue.h"

namespace tupa::fleet_sim {

TimerQueue::TimerQueue(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

TimerQueue::~TimerQueue() { Stop(); }

void TimerQueue::At(absl::Time when, std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  const bool earliest = heap_.empty() || when < heap_.top().when;
  heap_.push(Entry{when, next_seq_++, std::move(fn)});
  if (earliest) changed_.Signal();
}

void TimerQueue::After(absl::Duration delay, std::function<void()> fn) {
  At(absl::Now() + delay, std::move(fn));
}

void TimerQueue::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    while (!heap_.empty()) heap_.pop();
    changed_.SignalAll();
  }
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

void TimerQueue::Loop() {
  while (true) {
    std::function<void()> fn;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_) {
        if (heap_.empty()) {
          changed_.Wait(&mu_);
          continue;
        }
        const absl::Time due = heap_.top().when;
        if (absl::Now() >= due) break;
        changed_.WaitWithDeadline(&mu_, due);
      }
      if (stopping_) return;
      // priority_queue::top() is const: move out through a cast, then pop.
      fn = std::move(const_cast<Entry&>(heap_.top()).fn);
      heap_.pop();
      // Another thread may take the next due timer meanwhile.
      if (!heap_.empty()) changed_.Signal();
    }
    fn();
  }
}

}  // namespace tupa::fleet_sim

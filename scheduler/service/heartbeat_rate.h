// How often each worker heartbeats, so that a large fleet does not spend
// the scheduler's CPU on leases (Nomad's max_heartbeats_per_second, the
// same idea as Kubernetes' 10-second node leases).
//
// A small fleet heartbeats every `base` (1 s by default: utilisation
// samples and loss detection stay as fresh as before). Above
// max_per_second x base workers the interval grows so that the whole
// fleet sends at most max_per_second heartbeats a second: 1,000 workers
// at 250/s beat every 4 s. It never passes a third of the lease
// (--worker-timeout), so a worker always has three heartbeats to renew
// its lease before it is counted lost or fences itself.
//
// The scheduler sends the interval in the Welcome and in every
// HeartbeatAck; workers adopt the newest one.
#ifndef TUPA_SCHEDULER_SERVICE_HEARTBEAT_RATE_H_
#define TUPA_SCHEDULER_SERVICE_HEARTBEAT_RATE_H_

#include "absl/time/time.h"

namespace tupa::scheduler {

struct HeartbeatRate {
  absl::Duration base = absl::Seconds(1);
  // The whole fleet's heartbeats per second; <= 0: no limit (always base).
  double max_per_second = 250;
  // The worker lease; the interval stays at most a third of it.
  absl::Duration lease = absl::Seconds(15);

  // The interval for a fleet of `connected` workers, whole milliseconds.
  absl::Duration IntervalFor(int connected) const;
};

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_HEARTBEAT_RATE_H_

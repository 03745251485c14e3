// The job halves of Decide(): scale-up requests for pending jobs that fit
// no live worker, and zombie jobs. Internal to tupa_idle (call Decide());
// each appends to `d` and to `d->state`. Pure; thread-compatible.
#ifndef TUPA_SCHEDULER_IDLE_JOBS_H_
#define TUPA_SCHEDULER_IDLE_JOBS_H_

#include "absl/time/time.h"
#include "scheduler/idle/decide.h"

namespace tupa::scheduler::idle {

// The shortest time between two scale-up requests for one job.
inline constexpr absl::Duration kMinScaleUpRepeat = absl::Minutes(1);

// A pending job that fits no live worker and has waited pending_after asks
// for its pool once per pending_after (or kMinScaleUpRepeat, if longer).
// The pool is the job's first GPU type
// in the region where that type is cheapest among live workers (any region
// when none runs it); requests are grouped by pool.
//
// With `room_within` > 0 (the cost rule: its boot_time), a job asks only
// when the live workers will not have room for it within that time either:
// pending jobs in snapshot order are given the room the workers have now
// plus what running jobs give back by now + room_within
// (WorkerInfo::releases), and one that gets room waits for it: a boot
// would come no sooner and would be paid for nothing.
void DecideScaleUps(const ScaleUpPolicy& policy, absl::Duration room_within,
                    const Snapshot& snapshot, const PolicyState& previous,
                    absl::Time now, Decisions* d);

// A running job whose measured activity stays below `threshold` for
// policy.after is reported once; unmeasured jobs never are.
void DecideZombies(const ZombieJobPolicy& policy, double threshold,
                   const Snapshot& snapshot, const PolicyState& previous,
                   absl::Time now, Decisions* d);

}  // namespace tupa::scheduler::idle

#endif  // TUPA_SCHEDULER_IDLE_JOBS_H_

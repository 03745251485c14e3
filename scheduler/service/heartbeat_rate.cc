#include "scheduler/service/heartbeat_rate.h"

#include <algorithm>

namespace tupa::scheduler {

absl::Duration HeartbeatRate::IntervalFor(int connected) const {
  absl::Duration interval = base;
  if (max_per_second > 0 && connected > 0)
    interval = std::max(interval, absl::Seconds(connected / max_per_second));
  // A third of the lease, but never below base (a lease shorter than three
  // base intervals is the operator's choice, kept as it was).
  if (lease > absl::ZeroDuration())
    interval = std::min(interval, std::max(base, lease / 3));
  return absl::Milliseconds(absl::ToInt64Milliseconds(interval));
}

}  // namespace tupa::scheduler

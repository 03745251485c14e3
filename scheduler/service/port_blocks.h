// Port blocks: the ports a job's processes listen on, and how the scheduler
// picks them so that two jobs sharing a worker never collide.
//
// A job holds [master_port, master_port + PortSpan(world_size)) on every
// worker it runs on: MASTER_PORT (rank 0's rendezvous store), MASTER_PORT+1
// (Horovod's Gloo rendezvous) and MASTER_PORT+2+g (the TensorFlow worker of
// global rank g), as worker/agent/framework_env.h sets them. A job that
// uses only MASTER_PORT leaves the rest unbound, but another job may not
// take them: which framework a command runs is not known to the scheduler.
// Pure; thread-compatible.
#ifndef TUPA_SCHEDULER_SERVICE_PORT_BLOCKS_H_
#define TUPA_SCHEDULER_SERVICE_PORT_BLOCKS_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace tupa::scheduler {

// A half-open range of ports [first, first + count).
struct PortRange {
  int32_t first = 0;
  int32_t count = 0;
  bool Overlaps(const PortRange& o) const {
    return first < o.first + o.count && o.first < first + count;
  }
};

// Ports a job of `world_size` ranks holds on each of its workers.
int32_t PortSpan(int world_size);

// The first start p, scanning base + start, base + start + 1, ... and
// wrapping inside [base, base + count), such that [p, p + span) lies in
// [base, base + count) and overlaps none of `used`. nullopt when no block
// is free (or span > count).
std::optional<int32_t> PickPortBlock(const std::vector<PortRange>& used,
                                     int32_t span, int32_t base, int32_t count,
                                     int32_t start);

}  // namespace tupa::scheduler

#endif  // TUPA_SCHEDULER_SERVICE_PORT_BLOCKS_H_

#include "scheduler/service/port_blocks.h"

#include <algorithm>

namespace tupa::scheduler {

int32_t PortSpan(int world_size) { return 2 + std::max(1, world_size); }

std::optional<int32_t> PickPortBlock(const std::vector<PortRange>& used,
                                     int32_t span, int32_t base, int32_t count,
                                     int32_t start) {
  if (span <= 0 || count <= 0 || span > count) return std::nullopt;
  const int32_t positions = count - span + 1;  // starts that stay in range
  start = ((start % positions) + positions) % positions;
  for (int32_t i = 0; i < positions; ++i) {
    const PortRange block{base + (start + i) % positions, span};
    const bool free =
        std::none_of(used.begin(), used.end(),
                     [&](const PortRange& u) { return u.Overlaps(block); });
    if (free) return block.first;
  }
  return std::nullopt;
}

}  // namespace tupa::scheduler

#include "scheduler/placement/fit_bounds.h"

#include <algorithm>

namespace tupa::scheduler {
namespace {

// A device counts as whole when what is left of it is a whole device
// (shares are kept in thousandths: rounding must not hide one).
constexpr double kWhole = 1.0 - 1e-6;

}  // namespace

FitBounds FitBounds::Of(const std::vector<NodeView>& nodes) {
  FitBounds b;
  for (const NodeView& n : nodes) {
    if (!n.schedulable) continue;
    b.any_schedulable = true;
    int whole = 0;
    for (const DeviceSlot& d : n.devices) {
      if (d.free_share >= kWhole) ++whole;
      b.largest_free_share = std::max(b.largest_free_share, d.free_share);
    }
    b.whole_free_devices = std::max(b.whole_free_devices, whole);
    b.cpu_free = std::max(b.cpu_free, n.cpu_free);
    b.memory_free = std::max(b.memory_free, n.memory_free);
  }
  return b;
}

bool FitBounds::CouldFit(const JobRequest& r) const {
  if (!any_schedulable) return false;
  if (r.gpus > 0) {
    if (r.gpus < 1) {
      if (largest_free_share + 1e-9 < r.gpus) return false;
    } else if (whole_free_devices + 1e-9 < r.gpus) {
      return false;
    }
  }
  return r.cpu <= cpu_free + 1e-9 && r.memory <= memory_free;
}

bool FitBounds::Within(const FitBounds& other) const {
  return (!any_schedulable || other.any_schedulable) &&
         whole_free_devices <= other.whole_free_devices &&
         largest_free_share <= other.largest_free_share &&
         cpu_free <= other.cpu_free && memory_free <= other.memory_free;
}

}  // namespace tupa::scheduler

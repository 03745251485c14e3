// How workers look in `tupa workers` and `tupa drain`. Pure; thread-safe.
#ifndef TUPA_CLIENT_WORKER_FORMAT_H_
#define TUPA_CLIENT_WORKER_FORMAT_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tupa/v1/cluster.pb.h"

namespace tupa::client {

// "UP" for WORKER_STATE_UP.
std::string WorkerStateName(v1::WorkerState state);

// The `workers` table: ID STATE REGION GPUS(alloc/total) TYPE OFFERING
// PRICE/GPU-H(now, with currency; "-" without a price catalog)
// UTIL(mean device utilisation, device memory used) CPU MEM ADDRESS
// LAST-SEEN JOBS.
std::string RenderWorkersTable(const std::vector<v1::Worker>& workers,
                               absl::Time now);

}  // namespace tupa::client

#endif  // TUPA_CLIENT_WORKER_FORMAT_H_

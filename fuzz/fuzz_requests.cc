// libFuzzer target: request validation of every RPC. The first byte picks
// the request type; the rest is parsed as that protobuf message and, when
// it parses, run through the validation its handler runs
// (scheduler/service/request_validation.h).
#include <cstddef>
#include <cstdint>

#include "scheduler/service/request_validation.h"

namespace {

template <typename Message, typename Validate>
void Check(const uint8_t* data, size_t size, Validate validate) {
  Message message;
  if (!message.ParseFromArray(data, static_cast<int>(size))) return;
  (void)validate(message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tupa::scheduler;  // NOLINT(build/namespaces): fuzz glue
  namespace v1 = tupa::v1;
  if (size == 0) return 0;
  const uint8_t which = data[0];
  ++data;
  --size;
  switch (which % 15) {
    case 0:
      Check<v1::SubmitJobRequest>(data, size, ValidateSubmitJobRequest);
      break;
    case 1:
      Check<v1::GetJobRequest>(data, size, ValidateGetJobRequest);
      break;
    case 2:
      Check<v1::ListJobsRequest>(data, size, ValidateListJobsRequest);
      break;
    case 3:
      Check<v1::CancelJobRequest>(data, size, ValidateCancelJobRequest);
      break;
    case 4:
      Check<v1::StreamLogsRequest>(data, size, ValidateStreamLogsRequest);
      break;
    case 5:
      Check<v1::CostReportRequest>(data, size, ValidateCostReportRequest);
      break;
    case 6:
      Check<v1::EstimateJobRequest>(data, size, ValidateEstimateJobRequest);
      break;
    case 7:
      Check<v1::ListWorkersRequest>(data, size, ValidateListWorkersRequest);
      break;
    case 8:
      Check<v1::DrainWorkerRequest>(data, size, ValidateDrainWorkerRequest);
      break;
    case 9:
      Check<v1::Hello>(data, size, ValidateHello);
      break;
    case 10:
      Check<v1::CreateTokenRequest>(data, size, ValidateCreateTokenRequest);
      break;
    case 11:
      Check<v1::ListTokensRequest>(data, size, ValidateListTokensRequest);
      break;
    case 12:
      Check<v1::RevokeTokenRequest>(data, size, ValidateRevokeTokenRequest);
      break;
    case 13:
      Check<v1::GetJobRequest>(data, size, ValidateGetJobRequest);
      break;  // WatchJob
    default: {
      // A worker's later messages are only routed, but must parse safely.
      v1::WorkerMessage m;
      (void)m.ParseFromArray(data, static_cast<int>(size));
      break;
    }
  }
  return 0;
}

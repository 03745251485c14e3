// tupa workers, tupa drain: cluster administration.
#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/worker_format.h"
#include "common/job_spec.h"
#include "common/status_macros.h"

namespace tupa::client {

void AddWorkersFlags(FlagSet& flags) {
  flags.AddBool("all", "include lost and offline workers");
}

void AddDrainFlags(FlagSet& flags) {
  flags.AddBool("undo",
                "take a drained worker back into service (a drain otherwise "
                "lasts across worker restarts and losses)");
}

absl::Status RunWorkers(CommandContext& context, const ParsedArgs& args) {
  if (!args.positional().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", args.positional()[0], "\""));
  }
  v1::ListWorkersRequest request;
  request.set_include_offline(args.Bool("all"));
  Connection connection(context.connection);
  v1::ListWorkersResponse response;
  RETURN_IF_ERROR(connection.Call([&](grpc::ClientContext* call) {
    response.Clear();
    return connection.cluster().ListWorkers(call, request, &response);
  }));
  if (context.output == OutputFormat::kJson) {
    *context.out << ToJson(response);
  } else {
    *context.out << RenderWorkersTable(
        {response.workers().begin(), response.workers().end()}, context.now);
  }
  return absl::OkStatus();
}

absl::Status RunDrain(CommandContext& context, const ParsedArgs& args) {
  v1::DrainWorkerRequest request;
  ASSIGN_OR_RETURN(*request.mutable_worker_id(), OnePositional(args, "WORKER"));
  RETURN_IF_ERROR(ValidateText(request.worker_id(), "WORKER"));
  request.set_undo(args.Bool("undo"));
  Connection connection(context.connection);
  v1::Worker worker;
  RETURN_IF_ERROR(connection.Call([&](grpc::ClientContext* call) {
    worker.Clear();
    return connection.cluster().DrainWorker(call, request, &worker);
  }));
  if (context.output == OutputFormat::kJson) {
    *context.out << ToJson(worker);
  } else {
    *context.out << "worker "
                 << (worker.id().empty() ? request.worker_id() : worker.id())
                 << " " << WorkerStateName(worker.state()) << "\n";
  }
  return absl::OkStatus();
}

}  // namespace tupa::client

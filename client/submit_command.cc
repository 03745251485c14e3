// tupa submit: build and validate the spec locally, then SubmitJob with an
// idempotency key, retrying UNAVAILABLE with the same key.
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/commands.h"
#include "client/spec_overrides.h"
#include "common/job_spec.h"
#include "common/status_macros.h"

namespace tupa::client {

std::string NewIdempotencyKey() {
  std::random_device random;  // /dev/urandom on Linux
  std::string key;
  for (int i = 0; i < 4; ++i) absl::StrAppendFormat(&key, "%08x", random());
  return key;
}

void AddSubmitFlags(FlagSet& flags) {
  AddSpecFlags(flags);
  flags
      .AddValue("idempotency-key", "K",
                "reuse to make a retried submit return the same job "
                "(default: a fresh random key)")
      .AddValue("array", "INDEXES",
                "a job array: one task per index, in Slurm's syntax "
                "(0-99%10: 100 tasks, at most 10 running); {{index}} in the "
                "spec is replaced by each task's index")
      .AddBool("dry-run", "validate and print the spec; send nothing");
}

absl::Status RunSubmit(CommandContext& context, const ParsedArgs& args) {
  if (!args.positional().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument \"", args.positional()[0],
        "\" (put the command after --, e.g. tupa submit --gpus 1 -- python "
        "train.py)"));
  }
  v1::SubmitJobRequest request;
  if (args.Has("array")) {
    ASSIGN_OR_RETURN(ArrayIndexes array,
                     ParseArrayIndexes(args.Value("array"), "--array"));
    ASSIGN_OR_RETURN(std::vector<v1::JobSpec> tasks,
                     BuildArrayTasks(args, array));
    request.set_array(args.Value("array"));
    for (v1::JobSpec& task : tasks)
      *request.add_array_tasks() = std::move(task);
    if (args.Bool("dry-run")) {
      *context.out << ToJson(request);
      return absl::OkStatus();
    }
  } else {
    ASSIGN_OR_RETURN(v1::JobSpec spec, BuildJobSpec(args));
    if (args.Bool("dry-run")) {
      *context.out << ToJson(spec);
      return absl::OkStatus();
    }
    *request.mutable_spec() = std::move(spec);
  }
  if (args.Has("idempotency-key")) {
    RETURN_IF_ERROR(tupa::ValidateIdempotencyKey(args.Value("idempotency-key"),
                                                 "--idempotency-key"));
    request.set_idempotency_key(args.Value("idempotency-key"));
  } else {
    request.set_idempotency_key(NewIdempotencyKey());
  }

  Connection connection(context.connection);
  v1::SubmitJobResponse response;
  RETURN_IF_ERROR(connection.Call([&](grpc::ClientContext* call) {
    response.Clear();
    return connection.jobs().SubmitJob(call, request, &response);
  }));
  if (context.output == OutputFormat::kJson) {
    *context.out << (response.array_id() > 0 ? ToJson(response)
                                             : ToJson(response.job()));
  } else if (response.array_id() > 0) {
    const int32_t limit = response.job().spec().array().max_running();
    *context.out << "array " << response.array_id()
                 << (response.created() ? " submitted: "
                                        : " (existing, same idempotency key): ")
                 << response.array_size() << " tasks"
                 << (limit > 0 ? absl::StrCat(", at most ", limit, " running")
                               : std::string())
                 << " (tupa list --array " << response.array_id() << ")\n";
  } else if (response.created()) {
    *context.out << "job " << response.job().id() << " submitted\n";
  } else {
    *context.out << "job " << response.job().id()
                 << " (existing, same idempotency key)\n";
  }
  return absl::OkStatus();
}

}  // namespace tupa::client

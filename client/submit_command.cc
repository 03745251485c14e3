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
      .AddBool("dry-run", "validate and print the spec; send nothing");
}

absl::Status RunSubmit(CommandContext& context, const ParsedArgs& args) {
  if (!args.positional().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument \"", args.positional()[0],
        "\" (put the command after --, e.g. tupa submit --gpus 1 -- python "
        "train.py)"));
  }
  ASSIGN_OR_RETURN(v1::JobSpec spec, BuildJobSpec(args));
  if (args.Bool("dry-run")) {
    *context.out << ToJson(spec);
    return absl::OkStatus();
  }
  v1::SubmitJobRequest request;
  *request.mutable_spec() = std::move(spec);
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
    *context.out << ToJson(response.job());
  } else if (response.created()) {
    *context.out << "job " << response.job().id() << " submitted\n";
  } else {
    *context.out << "job " << response.job().id()
                 << " (existing, same idempotency key)\n";
  }
  return absl::OkStatus();
}

}  // namespace tupa::client

// tupa-train: trains the `train:` section of a job spec on this rank.
//
//   tupa-train -f job.yaml [--steps N] [--epochs E] [--log-every K] [--json]
//              [--checkpoint-dir D] [--backend auto|cpu|cuda]
//              [--param-checksum] [--log-all-ranks] [--tensor-parallel T]
//              [--dump-params PREFIX]
//
// Multi-rank exactly like torchrun: RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT (defaults: one rank); LOCAL_WORLD_SIZE (ranks on
// this machine) splits the cores between CPU ranks unless
// OPENBLAS_NUM_THREADS is set. TUPA_CHECKPOINT_DIR is the default
// checkpoint directory. TUPA_RENDEZVOUS_TIMEOUT_S (default 300) bounds the
// wait for the other ranks at rendezvous and in each collective. See
// docs/trainer.md.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/job_spec.h"
#include "google/protobuf/util/json_util.h"
#include "worker/trainer/trainer.h"

namespace {

constexpr char kUsage[] =
    "usage: tupa-train -f job.yaml [--steps N] [--epochs E] [--log-every K]\n"
    "                  [--json] [--checkpoint-dir D] [--backend "
    "auto|cpu|cuda]\n"
    "                  [--param-checksum] [--log-all-ranks]\n"
    "                  [--tensor-parallel T] [--dump-params PREFIX]\n";

struct Flags {
  std::string file;
  int64_t steps = -1;
  int epochs = -1;
  int64_t log_every = -1;
  bool json = false;
  bool param_checksum = false;
  bool log_all_ranks = false;
  std::string checkpoint_dir;
  bool checkpoint_dir_set = false;
  std::string backend = "auto";
  int tensor_parallel = 0;  // 0: the spec's train.parallel.tensor
  std::string dump_params;
};

bool ParseFlags(int argc, char** argv, Flags& f, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline = false;
    if (size_t eq = arg.find('='); eq != std::string::npos && arg[0] == '-') {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline = true;
    }
    auto next = [&](std::string& out) {
      if (has_inline) {
        out = value;
        return true;
      }
      if (i + 1 >= argc) {
        error = arg + " needs a value";
        return false;
      }
      out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "-f" || arg == "--file") {
      if (!next(f.file)) return false;
    } else if (arg == "--steps") {
      if (!next(v) || !absl::SimpleAtoi(v, &f.steps) || f.steps <= 0) {
        error = "--steps wants a positive integer";
        return false;
      }
    } else if (arg == "--epochs") {
      if (!next(v) || !absl::SimpleAtoi(v, &f.epochs) || f.epochs <= 0) {
        error = "--epochs wants a positive integer";
        return false;
      }
    } else if (arg == "--log-every") {
      if (!next(v) || !absl::SimpleAtoi(v, &f.log_every) || f.log_every <= 0) {
        error = "--log-every wants a positive integer";
        return false;
      }
    } else if (arg == "--checkpoint-dir") {
      if (!next(f.checkpoint_dir)) return false;
      f.checkpoint_dir_set = true;
    } else if (arg == "--tensor-parallel") {
      if (!next(v) || !absl::SimpleAtoi(v, &f.tensor_parallel) ||
          f.tensor_parallel <= 0) {
        error = "--tensor-parallel wants a positive integer";
        return false;
      }
    } else if (arg == "--dump-params") {
      if (!next(f.dump_params)) return false;
    } else if (arg == "--backend") {
      if (!next(f.backend)) return false;
      if (f.backend != "auto" && f.backend != "cpu" && f.backend != "cuda") {
        error = "--backend wants auto, cpu or cuda";
        return false;
      }
    } else if (arg == "--json" || arg == "--param-checksum" ||
               arg == "--log-all-ranks") {
      bool on = true;
      if (has_inline && !absl::SimpleAtob(value, &on)) {
        error = arg + " wants true or false";
        return false;
      }
      (arg == "--json"             ? f.json
       : arg == "--param-checksum" ? f.param_checksum
                                   : f.log_all_ranks) = on;
    } else if (arg == "-h" || arg == "--help") {
      error = "";
      return false;
    } else {
      error = "unknown flag " + arg;
      return false;
    }
  }
  if (f.file.empty()) {
    error = "-f job.yaml is required";
    return false;
  }
  return true;
}

// An integer from the environment in [min, max], `fallback` when unset or
// empty; anything else is an error naming the variable (a typo in RANK
// must not quietly make every rank rank 0).
absl::StatusOr<int> EnvInt(const char* name, int fallback, int min, int max) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  int out;
  if (!absl::SimpleAtoi(v, &out) || out < min || out > max)
    return absl::InvalidArgumentError(absl::StrCat(
        name, "=", v, ": wants an integer from ", min, " to ", max));
  return out;
}

std::string EnvString(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : std::string(v);
}

absl::StatusOr<tupa::v1::JobSpec> LoadSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  absl::StatusOr<tupa::v1::JobSpec> spec = tupa::ParseJobSpecYaml(text);
  if (spec.ok()) return spec;
  // The worker hands over protobuf JSON (camelCase names); accept it too.
  tupa::v1::JobSpec from_json;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  if (absl::StripLeadingAsciiWhitespace(text).substr(0, 1) == "{" &&
      google::protobuf::util::JsonStringToMessage(text, &from_json, opts)
          .ok()) {
    return from_json;
  }
  return spec.status();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  std::string error;
  if (!ParseFlags(argc, argv, flags, error)) {
    if (!error.empty()) std::cerr << "tupa-train: " << error << "\n";
    std::cerr << kUsage;
    return error.empty() ? 0 : 2;
  }
  absl::StatusOr<tupa::v1::JobSpec> spec = LoadSpec(flags.file);
  if (!spec.ok()) {
    std::cerr << "tupa-train: " << spec.status() << "\n";
    return 2;
  }
  if (!spec->has_train()) {
    std::cerr << "tupa-train: " << flags.file << " has no train: section\n";
    return 2;
  }
  if (flags.tensor_parallel > 0) {
    spec->mutable_train()->mutable_parallel()->set_tensor(
        flags.tensor_parallel);
  }
  // Run by hand (no resources in the spec), the ranks per node are those
  // started on this machine, as torchrun says (LOCAL_WORLD_SIZE).
  if (spec->resources().gpus() == 0) {
    const absl::StatusOr<int> local = EnvInt("LOCAL_WORLD_SIZE", 0, 1, 1 << 20);
    const absl::StatusOr<int> world = EnvInt("WORLD_SIZE", 1, 1, 1 << 20);
    if (local.ok() && world.ok()) {
      spec->mutable_resources()->set_gpus(*local > 0 ? *local : *world);
    }
  }
  // The scheduler's own checks, so a spec run by hand is judged as it would
  // be when submitted (a bad lr is an error, not silently replaced).
  tupa::ApplyJobSpecDefaults(*spec);
  if (absl::Status valid = tupa::ValidateJobSpec(*spec); !valid.ok()) {
    std::cerr
        << "tupa-train: " << flags.file << ": "
        << (flags.tensor_parallel > 0 &&
                    absl::StartsWith(valid.message(), "train.parallel.tensor")
                ? absl::StrCat("--tensor-parallel (", valid.message(), ")")
                : std::string(valid.message()))
        << "\n";
    return 2;
  }
  absl::StatusOr<tupa::trainer::TrainConfig> config =
      tupa::trainer::TrainConfigFromSpec(spec->train());
  if (!config.ok()) {
    std::cerr << "tupa-train: " << config.status() << "\n";
    return 2;
  }
  if (flags.steps >= 0) config->steps = flags.steps;
  if (flags.epochs > 0) {
    config->epochs = flags.epochs;
    if (flags.steps < 0) config->steps = 0;
  }
  if (flags.log_every > 0) config->log_every = flags.log_every;

  tupa::trainer::RunOptions options;
  constexpr int kMaxRanks = 1 << 20;
  const absl::StatusOr<int> env[] = {
      EnvInt("WORLD_SIZE", 1, 1, kMaxRanks),
      EnvInt("RANK", 0, 0, kMaxRanks - 1),
      EnvInt("LOCAL_RANK", 0, 0, kMaxRanks - 1),
      EnvInt("MASTER_PORT", 29500, 1, 65535),
      EnvInt("LOCAL_WORLD_SIZE", 1, 1, kMaxRanks),
      EnvInt("TUPA_RENDEZVOUS_TIMEOUT_S", 300, 1, 7 * 24 * 3600),
      EnvInt("TUPA_ATTEMPT", 0, 0, 1 << 30)};
  for (const absl::StatusOr<int>& e : env) {
    if (!e.ok()) {
      std::cerr << "tupa-train: " << e.status().message() << "\n";
      return 2;
    }
  }
  options.world_size = *env[0];
  options.rank = *env[1];
  options.local_rank = *env[2];
  options.master_port = *env[3];
  options.timeout = absl::Seconds(*env[5]);
  options.attempt = *env[6];
  if (options.rank >= options.world_size) {
    std::cerr << "tupa-train: RANK=" << options.rank
              << " is not below WORLD_SIZE=" << options.world_size << "\n";
    return 2;
  }
  options.master_addr = EnvString("MASTER_ADDR", "127.0.0.1");
  options.checkpoint_dir = flags.checkpoint_dir_set
                               ? flags.checkpoint_dir
                               : EnvString("TUPA_CHECKPOINT_DIR", "");
  options.backend = flags.backend;
  // Several ranks sharing a machine would oversubscribe the cores with
  // OpenBLAS's default of one thread per core each: split them.
  const int local_world = *env[4];
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr && local_world > 1) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    options.cpu_threads = std::max(1, cores / local_world);
  }
  options.json = flags.json;
  options.param_checksum = flags.param_checksum;
  options.dump_params = flags.dump_params;
  options.log_all_ranks = flags.log_all_ranks;

  absl::StatusOr<tupa::trainer::RunSummary> summary =
      tupa::trainer::RunTraining(*config, options, std::cout);
  if (!summary.ok()) {
    std::cerr << "tupa-train: rank " << options.rank << ": " << summary.status()
              << "\n";
    return 1;
  }
  if (options.rank == 0 || options.log_all_ranks) {
    const auto& s = *summary;
    std::string acc = s.test_accuracy.has_value()
                          ? absl::StrFormat("%.4f", *s.test_accuracy)
                          : "null";
    if (options.json) {
      std::cout << absl::StrFormat(
          "{\"summary\": true, \"world_size\": %d, \"steps\": %d, "
          "\"step_ms_median\": %.3f, \"samples_per_s\": %.1f, "
          "\"final_loss\": %.9g, \"test_accuracy\": %s, "
          "\"resumed_from_step\": %d, \"train_seconds\": %.3f, "
          "\"rank\": %d, \"layout\": \"%dx%d\", \"param_bytes\": %d, "
          "\"steps_run\": %d, \"tp_allreduces\": %d, "
          "\"tp_allreduces_forward\": %d, \"tp_allreduces_backward\": %d, "
          "\"dp_allreduces\": %d, \"dp_buckets\": %d}\n",
          s.world_size, s.steps, s.step_ms_median, s.samples_per_s,
          s.final_loss, acc, s.resumed_from_step, s.train_seconds, options.rank,
          s.tensor_parallel, s.data_parallel, s.param_bytes, s.steps_run,
          s.tp_allreduces, s.tp_allreduces_forward, s.tp_allreduces_backward,
          s.dp_allreduces, s.dp_buckets);
    } else {
      std::cout << absl::StrFormat(
          "done: %d steps on %d rank(s) (layout %dx%d TPxDP, %.1f MiB of "
          "parameters + optimizer per rank), median step %.3f ms, %.0f "
          "samples/s, final loss %.6f, test accuracy %s, %.1f s "
          "(resumed from step %d)\n",
          s.steps, s.world_size, s.tensor_parallel, s.data_parallel,
          s.param_bytes / 1048576.0, s.step_ms_median, s.samples_per_s,
          s.final_loss, acc, s.train_seconds, s.resumed_from_step);
    }
  }
  return 0;
}

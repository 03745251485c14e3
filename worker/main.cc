// tupa-worker: flags -> WorkerOptions -> WorkerDaemon::BuildAndStart() ->
// wait for SIGTERM/SIGINT or a shutdown ordered by the scheduler.
#include <glog/logging.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>
#include <tuple>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/daemon.h"
#include "common/files.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "worker/agent/advertise_addr.h"
#include "worker/agent/node_runner.h"
#include "worker/agent/worker_daemon.h"

ABSL_FLAG(std::string, scheduler, "localhost:50051", "scheduler address");
ABSL_FLAG(std::string, id, "", "worker id (default: the host name)");
ABSL_FLAG(std::string, join_token, "",
          "the join token itself (visible to every local user in the process "
          "list: prefer --join-token-file or env TUPA_JOIN_TOKEN)");
ABSL_FLAG(std::string, join_token_file, "",
          "file holding the join token (or env TUPA_JOIN_TOKEN)");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA that signed the scheduler's certificate: enables TLS");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM client certificate, for a scheduler that requires mTLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert");
ABSL_FLAG(std::string, region, "", "region, e.g. sa-east-1");
ABSL_FLAG(std::string, instance_id, "", "cloud instance id");
ABSL_FLAG(std::string, offering, "on-demand",
          "how this instance is rented (on-demand, spot): picks its price");
ABSL_FLAG(std::string, labels, "", "k=v,k=v labels jobs can select");
ABSL_FLAG(int, emulated_gpus, 0,
          "advertise N emulated devices backed by the CPU trainer backend");
ABSL_FLAG(std::string, emulated_gpu_type, "EMU", "type of emulated devices");
ABSL_FLAG(std::string, gpu_type, "", "override the detected GPU type");
ABSL_FLAG(std::string, advertise_addr, "",
          "IP (or name, resolved at start) other hosts reach this one at: the "
          "MASTER_ADDR of the jobs it leads (default: the local address of "
          "the connection to the scheduler; loopback is refused with a "
          "scheduler on another host)");
ABSL_FLAG(std::string, work_dir, ".tupa-worker", "job directories and logs");
ABSL_FLAG(
    std::string, checkpoint_root, "",
    "checkpoint root shared by workers (default: <work_dir>/checkpoints)");
ABSL_FLAG(std::string, metrics_listen, ":9465",
          "Prometheus /metrics address (empty: none)");
ABSL_FLAG(std::string, trainer, "",
          "tupa-train path (default: beside this binary)");
ABSL_FLAG(std::string, rank_shim, "",
          "tupa-rank-shim path, the program each rank starts through "
          "(default: beside this binary; where it is missing there, ranks "
          "start from a fork of the worker)");
ABSL_FLAG(int, kill_grace_s, 5, "seconds between SIGTERM and SIGKILL");
ABSL_FLAG(std::string, on_shutdown, "",
          "command (sh -c) run when the scheduler's idle policy stops this "
          "worker, before it exits 0; gets TUPA_WORKER_ID TUPA_INSTANCE_ID "
          "TUPA_REGION TUPA_GPU_TYPE TUPA_REASON");

namespace {

std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// The contents of `path`, given as `flag`.
absl::StatusOr<std::string> ReadFile(absl::string_view flag,
                                     const std::string& path) {
  std::optional<std::string> text = tupa::ReadWholeFile(path);
  if (!text)
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot read ", path));
  return *std::move(text);
}

int64_t HostMemory() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
}

}  // namespace

// The worker's options from the flags (and env TUPA_JOIN_TOKEN); an
// InvalidArgument naming the flag otherwise.
absl::Status OptionsFromFlags(tupa::worker::WorkerOptions& options) {
  tupa::worker::DeviceOptions& devices = options.devices;
  devices.emulated_gpus = absl::GetFlag(FLAGS_emulated_gpus);
  devices.emulated_gpu_type = absl::GetFlag(FLAGS_emulated_gpu_type);
  devices.gpu_type_override = absl::GetFlag(FLAGS_gpu_type);
  if (devices.emulated_gpus < 0 || devices.emulated_gpus > 1024)
    return absl::InvalidArgumentError(
        "--emulated-gpus must be between 0 and 1024");
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);

  tupa::worker::AgentOptions& agent = options.agent;
  agent.scheduler = absl::GetFlag(FLAGS_scheduler);
  agent.worker_id =
      absl::GetFlag(FLAGS_id).empty() ? HostName() : absl::GetFlag(FLAGS_id);
  if (const char* env = std::getenv("TUPA_JOIN_TOKEN")) agent.join_token = env;
  if (!absl::GetFlag(FLAGS_join_token).empty() &&
      !absl::GetFlag(FLAGS_join_token_file).empty())
    return absl::InvalidArgumentError(
        "give --join-token or --join-token-file, not both");
  if (!absl::GetFlag(FLAGS_join_token).empty())
    agent.join_token = std::string(
        absl::StripAsciiWhitespace(absl::GetFlag(FLAGS_join_token)));
  if (!absl::GetFlag(FLAGS_join_token_file).empty()) {
    ASSIGN_OR_RETURN(
        const std::string token,
        ReadFile("--join-token-file", absl::GetFlag(FLAGS_join_token_file)));
    agent.join_token = std::string(absl::StripAsciiWhitespace(token));
  }
  for (auto [name, path, pem] :
       {std::make_tuple("--tls-ca", absl::GetFlag(FLAGS_tls_ca),
                        &agent.tls_ca_pem),
        std::make_tuple("--tls-cert", absl::GetFlag(FLAGS_tls_cert),
                        &agent.tls_cert_pem),
        std::make_tuple("--tls-key", absl::GetFlag(FLAGS_tls_key),
                        &agent.tls_key_pem)}) {
    if (path.empty()) continue;
    ASSIGN_OR_RETURN(*pem, ReadFile(name, path));
  }
  if (agent.tls_cert_pem.empty() != agent.tls_key_pem.empty())
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key: give both or neither");
  agent.region = absl::GetFlag(FLAGS_region);
  agent.instance_id = absl::GetFlag(FLAGS_instance_id);
  agent.offering = absl::GetFlag(FLAGS_offering);
  for (absl::string_view kv :
       absl::StrSplit(absl::GetFlag(FLAGS_labels), ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> p =
        absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.first.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("--labels: bad entry \"", kv, "\""));
    agent.labels[p.first] = p.second;
  }
  ASSIGN_OR_RETURN(agent.advertise_addr,
                   tupa::worker::CheckAdvertiseAddr(
                       absl::GetFlag(FLAGS_advertise_addr), agent.scheduler));
  agent.work_dir = std::filesystem::absolute(absl::GetFlag(FLAGS_work_dir));
  if (!absl::GetFlag(FLAGS_checkpoint_root).empty())
    agent.checkpoint_root =
        std::filesystem::absolute(absl::GetFlag(FLAGS_checkpoint_root));
  agent.trainer_path = absl::GetFlag(FLAGS_trainer);
  if (agent.trainer_path.empty())
    agent.trainer_path =
        (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
         "tupa-train")
            .string();
  agent.rank_shim_path = absl::GetFlag(FLAGS_rank_shim);
  if (agent.rank_shim_path.empty()) {
    agent.rank_shim_path = tupa::worker::RankShimBesideThisProgram();
  } else if (access(agent.rank_shim_path.c_str(), X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank-shim: ", agent.rank_shim_path,
                     " is not an executable file: ", std::strerror(errno)));
  }
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      visible != nullptr && devices.emulated_gpus == 0)
    agent.visible_devices = absl::StrSplit(visible, ',', absl::SkipEmpty());
  agent.cpu = std::thread::hardware_concurrency();
  agent.memory_bytes = HostMemory();
  agent.kill_grace = absl::Seconds(absl::GetFlag(FLAGS_kill_grace_s));
  agent.on_shutdown = absl::GetFlag(FLAGS_on_shutdown);
  return absl::OkStatus();
}

int main(int argc, char** argv) {
  sigset_t signals = tupa::StartDaemon(
      argc, argv, "tupa-worker: runs ranks of jobs on this host");

  tupa::worker::WorkerOptions options;
  if (absl::Status s = OptionsFromFlags(options); !s.ok()) {
    std::cerr << "tupa-worker: " << s.message() << "\n";
    return 2;
  }
  auto worker = tupa::worker::WorkerDaemon::BuildAndStart(std::move(options));
  if (!worker.ok()) {
    std::cerr << "tupa-worker: " << worker.status() << "\n";
    return 1;
  }
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    (*worker)->Stop();
  });
  // Returns after Stop() (a signal) or a Shutdown from the scheduler.
  (*worker)->Wait();
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  if (const std::string reason = (*worker)->shutdown_reason(); !reason.empty())
    LOG(INFO) << "stopped by the scheduler (" << reason << "); exiting 0";
  return 0;
}

#include "worker/agent/framework_env.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tupa::worker {
namespace {

// A JSON string literal; host names never need more than this, but a
// quote or backslash in one must not break the document.
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, "\\u00", c < 0x10 ? "0" : "",
                      absl::Hex(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// "host:port" with an IPv6 host in brackets, as gRPC target names take it.
std::string HostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && host.front() != '[')
    return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

// The address of `node_rank`, or "" when the Assign does not say.
std::string NodeAddr(const v1::Assign& assign, int node_rank) {
  if (node_rank >= 0 && node_rank < assign.node_addrs_size())
    return assign.node_addrs(node_rank);
  if (node_rank == 0 || assign.nnodes() <= 1) return assign.master_addr();
  return "";
}

}  // namespace

int TfWorkerPort(const v1::Assign& assign, int global_rank) {
  return assign.master_port() + 2 + global_rank;
}

std::string TfConfig(const v1::Assign& assign, const RankSlot& slot) {
  const int nnodes = std::max(1, assign.nnodes());
  const int world = std::max(1, assign.world_size());
  // Every node runs the same number of processes (RanksPerNode).
  const int per_node = std::max(1, world / nnodes);
  std::vector<std::string> workers;
  for (int rank = 0; rank < world; ++rank) {
    const std::string host = NodeAddr(assign, rank / per_node);
    if (host.empty()) return "";
    workers.push_back(JsonString(HostPort(host, TfWorkerPort(assign, rank))));
  }
  return absl::StrCat(
      R"({"cluster": {"worker": [)", absl::StrJoin(workers, ", "),
      R"(]}, "task": {"type": "worker", "index": )", slot.global_rank, "}}");
}

void AddFrameworkEnv(const v1::Assign& assign, const RankSlot& slot,
                     std::map<std::string, std::string>& env) {
  if (std::string tf = TfConfig(assign, slot); !tf.empty())
    env["TF_CONFIG"] = std::move(tf);
  env["HOROVOD_RANK"] = absl::StrCat(slot.global_rank);
  env["HOROVOD_SIZE"] = absl::StrCat(assign.world_size());
  env["HOROVOD_LOCAL_RANK"] = absl::StrCat(slot.local_rank);
  env["HOROVOD_LOCAL_SIZE"] = absl::StrCat(slot.local_world);
  // Cross: the processes holding the same local rank, one per node.
  env["HOROVOD_CROSS_RANK"] = absl::StrCat(assign.node_rank());
  env["HOROVOD_CROSS_SIZE"] = absl::StrCat(std::max(1, assign.nnodes()));
  env["HOROVOD_GLOO_RENDEZVOUS_ADDR"] = assign.master_addr();
  env["HOROVOD_GLOO_RENDEZVOUS_PORT"] = absl::StrCat(assign.master_port() + 1);
  env["HOROVOD_CONTROLLER"] = "gloo";
  env["HOROVOD_CPU_OPERATIONS"] = "gloo";
  const std::string host = NodeAddr(assign, assign.node_rank());
  env["HOROVOD_HOSTNAME"] = host.empty() ? assign.master_addr() : host;
}

}  // namespace tupa::worker

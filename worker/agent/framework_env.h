// The launch variables of frameworks other than PyTorch (DESIGN §4), for
// one rank of one node of an assigned job: TensorFlow's TF_CONFIG
// (MultiWorkerMirroredStrategy) and Horovod's Gloo variables, as
// horovodrun would set them. Pure; thread-safe.
//
// Ports: a job holds MASTER_PORT on its first node (rank 0's rendezvous
// store). Horovod's Gloo rendezvous is MASTER_ADDR:MASTER_PORT+1 (served
// by the job: horovodrun's driver is not run), and the TensorFlow worker of
// global rank g listens on MASTER_PORT+2+g of its node, so the ports of a
// job are distinct even when several of its nodes share a host. The
// scheduler keeps these blocks of different jobs apart on every worker
// (scheduler/service/port_blocks.h).
#ifndef TUPA_WORKER_AGENT_FRAMEWORK_ENV_H_
#define TUPA_WORKER_AGENT_FRAMEWORK_ENV_H_

#include <map>
#include <string>

#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::worker {

// Where one process sits in the job.
struct RankSlot {
  int global_rank = 0;
  int local_rank = 0;
  int local_world = 1;  // processes on this node
};

// The TCP port of the TensorFlow worker of `global_rank`.
int TfWorkerPort(const v1::Assign& assign, int global_rank);

// TF_CONFIG for `slot`: {"cluster": {"worker": ["host:port", ...]},
// "task": {"type": "worker", "index": RANK}} with one entry per process of
// the job (WORLD_SIZE), in rank order; hosts from assign.node_addrs.
// Empty when the Assign does not carry every node's address (an older
// scheduler) and the job spans several nodes.
std::string TfConfig(const v1::Assign& assign, const RankSlot& slot);

// Adds TF_CONFIG (when known) and HOROVOD_RANK, _SIZE, _LOCAL_RANK,
// _LOCAL_SIZE, _CROSS_RANK, _CROSS_SIZE, _GLOO_RENDEZVOUS_ADDR,
// _GLOO_RENDEZVOUS_PORT, _CONTROLLER=gloo, _CPU_OPERATIONS=gloo and
// _HOSTNAME to `env`.
void AddFrameworkEnv(const v1::Assign& assign, const RankSlot& slot,
                     std::map<std::string, std::string>& env);

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_FRAMEWORK_ENV_H_

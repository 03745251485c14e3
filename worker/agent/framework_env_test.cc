// TF_CONFIG and Horovod's variables on every rank of a 2-node x 2-GPU job,
// planned by the real PlanRanks, in both launch modes. TF_CONFIG is checked
// against the format of TensorFlow's TFConfigClusterResolver documentation
// ({"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker",
// "index": i}}) by parsing it as JSON.
#include "worker/agent/framework_env.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/agent/rank_plan.h"

namespace tupa::worker {
namespace {

constexpr int kPort = 29600;
const char* const kHosts[] = {"10.0.0.5", "10.0.0.9"};

v1::Assign NodeAssign(int node_rank, bool per_node) {
  v1::Assign a;
  a.set_job_id(7);
  a.mutable_spec()->add_command("python");
  a.mutable_spec()->add_command("train.py");
  if (per_node) a.mutable_spec()->set_launch(v1::LAUNCH_MODE_PER_NODE);
  a.set_node_rank(node_rank);
  a.set_nnodes(2);
  a.add_device_indexes(0);
  a.add_device_indexes(1);
  a.set_master_addr(kHosts[0]);
  a.set_master_port(kPort);
  const int ranks_per_node = per_node ? 1 : 2;
  a.set_world_size(2 * ranks_per_node);
  a.set_first_rank(node_rank * ranks_per_node);
  for (const char* h : kHosts) a.add_node_addrs(h);
  return a;
}

// Every rank's environment of the whole job, in rank order.
std::vector<std::map<std::string, std::string>> JobEnvs(bool per_node) {
  std::vector<std::map<std::string, std::string>> envs;
  for (int node = 0; node < 2; ++node)
    for (RankProcess& r : PlanRanks(NodeAssign(node, per_node), {}))
      envs.push_back(std::move(r.env));
  return envs;
}

google::protobuf::Struct ParseJson(const std::string& text) {
  google::protobuf::Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(text, &s);
  EXPECT_TRUE(status.ok()) << status << " in " << text;
  return s;
}

void ExpectTfConfig(bool per_node, int want_workers) {
  const auto envs = JobEnvs(per_node);
  ASSERT_EQ(envs.size(), static_cast<size_t>(want_workers));
  std::vector<std::string> first_list;
  for (const auto& env : envs) {
    const int rank = std::stoi(env.at("RANK"));
    const google::protobuf::Struct tf = ParseJson(env.at("TF_CONFIG"));
    ASSERT_EQ(tf.fields().size(), 2u);
    const auto& cluster = tf.fields().at("cluster").struct_value();
    ASSERT_EQ(cluster.fields().size(), 1u);  // workers only, no chief or ps
    const auto& workers = cluster.fields().at("worker").list_value();
    ASSERT_EQ(workers.values_size(), want_workers);
    std::vector<std::string> list;
    std::set<std::string> unique;
    for (const auto& w : workers.values()) {
      list.push_back(w.string_value());
      unique.insert(w.string_value());
    }
    EXPECT_EQ(unique.size(), list.size()) << "two workers share an address";
    // Each worker's entry is on the host of the node that runs it.
    const int per = want_workers / 2;
    for (int i = 0; i < want_workers; ++i)
      EXPECT_EQ(list[i], absl::StrCat(kHosts[i / per], ":", kPort + 2 + i));
    if (first_list.empty()) first_list = list;
    EXPECT_EQ(list, first_list) << "ranks disagree on the cluster";
    const auto& task = tf.fields().at("task").struct_value();
    EXPECT_EQ(task.fields().at("type").string_value(), "worker");
    EXPECT_EQ(task.fields().at("index").number_value(), rank);
  }
}

TEST(FrameworkEnv, TfConfigPerGpuListsFourWorkersWithEachRanksIndex) {
  ExpectTfConfig(/*per_node=*/false, 4);
}

TEST(FrameworkEnv, TfConfigPerNodeListsTwoWorkersWithEachNodesIndex) {
  ExpectTfConfig(/*per_node=*/true, 2);
}

void ExpectHorovodMatchesRanks(bool per_node) {
  std::set<std::string> ranks;
  for (const auto& env : JobEnvs(per_node)) {
    EXPECT_EQ(env.at("HOROVOD_RANK"), env.at("RANK"));
    EXPECT_EQ(env.at("HOROVOD_SIZE"), env.at("WORLD_SIZE"));
    EXPECT_EQ(env.at("HOROVOD_LOCAL_RANK"), env.at("LOCAL_RANK"));
    EXPECT_EQ(env.at("HOROVOD_LOCAL_SIZE"), env.at("LOCAL_WORLD_SIZE"));
    EXPECT_EQ(env.at("HOROVOD_CROSS_RANK"), env.at("NODE_RANK"));
    EXPECT_EQ(env.at("HOROVOD_CROSS_SIZE"), "2");
    // Horovod's layout on homogeneous hosts: rank = cross x local_size +
    // local_rank.
    EXPECT_EQ(std::stoi(env.at("HOROVOD_RANK")),
              std::stoi(env.at("HOROVOD_CROSS_RANK")) *
                      std::stoi(env.at("HOROVOD_LOCAL_SIZE")) +
                  std::stoi(env.at("HOROVOD_LOCAL_RANK")));
    EXPECT_EQ(env.at("HOROVOD_GLOO_RENDEZVOUS_ADDR"), kHosts[0]);
    EXPECT_EQ(env.at("HOROVOD_GLOO_RENDEZVOUS_PORT"), absl::StrCat(kPort + 1));
    EXPECT_EQ(env.at("HOROVOD_CONTROLLER"), "gloo");
    EXPECT_EQ(env.at("HOROVOD_CPU_OPERATIONS"), "gloo");
    EXPECT_EQ(env.at("HOROVOD_HOSTNAME"),
              kHosts[std::stoi(env.at("NODE_RANK"))]);
    ranks.insert(env.at("HOROVOD_RANK"));
  }
  EXPECT_EQ(ranks.size(), per_node ? 2u : 4u);
}

TEST(FrameworkEnv, HorovodVariablesMatchTheRanksPerGpu) {
  ExpectHorovodMatchesRanks(false);
}

TEST(FrameworkEnv, HorovodVariablesMatchTheRanksPerNode) {
  ExpectHorovodMatchesRanks(true);
}

TEST(FrameworkEnv, WithoutNodeAddressesOnlyASingleNodeJobGetsTfConfig) {
  v1::Assign a = NodeAssign(1, false);
  a.clear_node_addrs();
  EXPECT_EQ(TfConfig(a, {2, 0, 2}), "");
  a.set_nnodes(1);
  a.set_node_rank(0);
  a.set_world_size(2);
  const auto tf = ParseJson(TfConfig(a, {1, 1, 2}));
  const auto& workers =
      tf.fields().at("cluster").struct_value().fields().at("worker");
  ASSERT_EQ(workers.list_value().values_size(), 2);
  EXPECT_EQ(workers.list_value().values(1).string_value(),
            absl::StrCat(kHosts[0], ":", kPort + 3));
}

TEST(FrameworkEnv, Ipv6HostsAreBracketedAndQuotesEscaped) {
  v1::Assign a = NodeAssign(0, true);
  a.set_node_addrs(0, "fd00::1");
  a.set_node_addrs(1, "odd\"host");
  const auto tf = ParseJson(TfConfig(a, {0, 0, 1}));
  const auto& list = tf.fields()
                         .at("cluster")
                         .struct_value()
                         .fields()
                         .at("worker")
                         .list_value();
  EXPECT_EQ(list.values(0).string_value(), "[fd00::1]:29602");
  EXPECT_EQ(list.values(1).string_value(), "odd\"host:29603");
}

}  // namespace
}  // namespace tupa::worker

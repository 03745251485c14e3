// MergeConfigFile and the flag parsers: bad settings are errors naming the
// setting, never a crash or a silent default.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "scheduler/service/server.h"

namespace tupa::scheduler {
namespace {

class ConfigFileTest : public testing::Test {
 protected:
  // Writes `yaml` to a fresh file and merges it over default options.
  absl::Status Merge(const std::string& yaml) {
    const std::string path =
        (std::filesystem::temp_directory_path() /
         ("tupa_config_test_" + std::to_string(::getpid()) + ".yaml"))
            .string();
    std::ofstream(path) << yaml;
    absl::Status s = MergeConfigFile(path, options_);
    std::filesystem::remove(path);
    return s;
  }
  SchedulerServerOptions options_;
};

TEST_F(ConfigFileTest, ReadsPolicyAndWorkerTimeout) {
  ASSERT_TRUE(Merge("policy: firstfit\nworker_timeout: 20s\n").ok());
  EXPECT_EQ(options_.core.policy, PlacementOptions::Policy::kFirstFit);
  EXPECT_EQ(options_.core.worker_timeout, absl::Seconds(20));
}

TEST_F(ConfigFileTest, ReadsMaxHeartbeatsAndNamesItWhenBad) {
  ASSERT_TRUE(Merge("max_heartbeats_per_s: 50\n").ok());
  EXPECT_EQ(options_.core.max_heartbeats_per_second, 50);
  ASSERT_TRUE(Merge("max_heartbeats_per_s: 0\n").ok());
  EXPECT_EQ(options_.core.max_heartbeats_per_second, 0);
  for (const char* bad :
       {"max_heartbeats_per_s: -1\n", "max_heartbeats_per_s: lots\n",
        "max_heartbeats_per_s: nan\n"}) {
    absl::Status s = Merge(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("max_heartbeats_per_s: must be a number >= 0"),
              std::string::npos)
        << s;
  }
}

TEST_F(ConfigFileTest, ReadsJobPortsAndNamesItWhenBad) {
  ASSERT_TRUE(Merge("job_ports: 40000-40099\n").ok());
  EXPECT_EQ(options_.core.master_port_base, 40000);
  EXPECT_EQ(options_.core.master_port_count, 100);
  for (const char* bad :
       {"job_ports: 40000\n", "job_ports: 40010-40000\n", "job_ports: 80-90\n",
        "job_ports: 40000-40001\n", "job_ports: a-b\n"}) {
    absl::Status s = Merge(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("job_ports: must"), std::string::npos) << s;
  }
}

TEST_F(ConfigFileTest, NonNameKeysAreErrorsNotCrashes) {
  for (const char* yaml : {"? [a, b]\n: 1\n", "auth:\n  ? {x: 1}\n  : true\n",
                           "tls:\n  ? [cert]\n  : /x\n"}) {
    absl::Status s = Merge(yaml);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << yaml;
    EXPECT_NE(s.message().find("keys must be strings"), std::string::npos) << s;
  }
}

TEST_F(ConfigFileTest, BadPolicyAndTimeoutNameTheSetting) {
  absl::Status s = Merge("policy: fastest\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("policy: must be firstfit, bestfit or tupa"),
            std::string::npos)
      << s;
  s = Merge("worker_timeout: 0s\n");
  EXPECT_NE(s.message().find("worker_timeout: must be positive"),
            std::string::npos)
      << s;
}

TEST(SchedulerFlags, PolicyAndTimeoutParsersRefuseTypos) {
  EXPECT_EQ(*ParseSchedulerPolicy("bestfit", "--policy"),
            PlacementOptions::Policy::kBestFit);
  auto bad = ParseSchedulerPolicy("tupaa", "--policy");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("--policy:", 0), 0u);
  EXPECT_FALSE(ParseWorkerTimeout("-5s", "--worker-timeout").ok());
  EXPECT_EQ(*ParseWorkerTimeout("2m", "--worker-timeout"), absl::Minutes(2));
}

TEST(SchedulerServerStart, AuthWithoutJoinTokenIsRefusedBeforeAnythingStarts) {
  SchedulerServerOptions options;
  options.database_url = "postgresql://nobody@127.0.0.1:1/none";
  options.auth.enabled = true;
  auto server = SchedulerServer::BuildAndStart(options, absl::ZeroDuration());
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server.status().message().rfind("join_token_file:", 0), 0u)
      << server.status();
}

}  // namespace
}  // namespace tupa::scheduler

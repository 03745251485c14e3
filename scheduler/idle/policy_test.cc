#include "scheduler/idle/policy.h"

#include <ostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tupa::scheduler::idle {
namespace {

using ::testing::HasSubstr;

TEST(ParseIdlePolicyTest, IssueExampleParses) {
  auto p = ParseIdlePolicyYaml(R"(
listen: 0.0.0.0:50051
idle_shutdown:
  idle_after: 10m
  activity_threshold: 0.05
  keep_warm: 1
  min_uptime: 5m
  hook: "cloud stop --instance"
scale_up:
  pending_after: 2m
  hook: "cloud start"
zombie_jobs:
  after: 30m
  action: cancel
)");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->idle_shutdown.enabled);
  EXPECT_EQ(p->idle_shutdown.idle_after, absl::Minutes(10));
  EXPECT_DOUBLE_EQ(p->idle_shutdown.activity_threshold, 0.05);
  EXPECT_EQ(p->idle_shutdown.KeepWarm("sa-east-1/A100-80GB"), 1);
  EXPECT_EQ(p->idle_shutdown.min_uptime, absl::Minutes(5));
  EXPECT_EQ(p->idle_shutdown.grace, absl::ZeroDuration());
  EXPECT_EQ(p->idle_shutdown.hook, "cloud stop --instance");
  EXPECT_TRUE(p->scale_up.enabled);
  EXPECT_EQ(p->scale_up.pending_after, absl::Minutes(2));
  EXPECT_EQ(p->scale_up.hook, "cloud start");
  EXPECT_TRUE(p->zombie_jobs.enabled);
  EXPECT_EQ(p->zombie_jobs.after, absl::Minutes(30));
  EXPECT_EQ(p->zombie_jobs.action, ZombieJobPolicy::Action::kCancel);
}

TEST(ParseIdlePolicyTest, AbsentSectionsDisable) {
  auto p = ParseIdlePolicyYaml("listen: 0.0.0.0:1\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->idle_shutdown.enabled);
  EXPECT_FALSE(p->scale_up.enabled);
  EXPECT_FALSE(p->zombie_jobs.enabled);
}

TEST(ParseIdlePolicyTest, EmptySectionsEnableWithDefaults) {
  auto p = ParseIdlePolicyYaml("idle_shutdown: {}\nscale_up:\nzombie_jobs:\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->idle_shutdown.enabled);
  EXPECT_EQ(p->idle_shutdown.kind, IdleShutdownPolicy::Kind::kCost);
  EXPECT_EQ(p->idle_shutdown.MaxIdle(), absl::Hours(1));
  EXPECT_EQ(p->idle_shutdown.KeepWarm("x/y"), 0);
  EXPECT_EQ(p->idle_shutdown.boot_time, absl::Minutes(3));
  EXPECT_TRUE(p->scale_up.enabled);
  EXPECT_TRUE(p->zombie_jobs.enabled);
  EXPECT_EQ(p->zombie_jobs.action, ZombieJobPolicy::Action::kFlag);
}

TEST(ParseIdlePolicyTest, TimerKeepsTheOldDefaults) {
  auto p = ParseIdlePolicyYaml("idle_shutdown: {policy: timer}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->idle_shutdown.kind, IdleShutdownPolicy::Kind::kTimer);
  EXPECT_EQ(p->idle_shutdown.MaxIdle(), absl::Minutes(10));
  EXPECT_EQ(p->idle_shutdown.KeepWarm("x/y"), 1);
}

TEST(ParseIdlePolicyTest, CostRuleTakesOldKnobsAsBounds) {
  auto p = ParseIdlePolicyYaml(
      "idle_shutdown: {idle_after: 30m, keep_warm: 2, boot_time: 90s, "
      "billing_minimum: 1m}\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->idle_shutdown.kind, IdleShutdownPolicy::Kind::kCost);
  EXPECT_EQ(p->idle_shutdown.MaxIdle(), absl::Minutes(30));
  EXPECT_EQ(p->idle_shutdown.KeepWarm("x/y"), 2);
  EXPECT_EQ(p->idle_shutdown.boot_time, absl::Seconds(90));
  EXPECT_EQ(p->idle_shutdown.billing_minimum, absl::Minutes(1));
}

TEST(ParseIdlePolicyTest, MinUptimeUnderTheCostRuleIsZeroUnlessGiven) {
  auto cost = ParseIdlePolicyYaml("idle_shutdown: {policy: cost}\n");
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->idle_shutdown.MinUptime(), absl::ZeroDuration());
  auto given = ParseIdlePolicyYaml("idle_shutdown: {min_uptime: 7m}\n");
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->idle_shutdown.MinUptime(), absl::Minutes(7));
  auto timer = ParseIdlePolicyYaml("idle_shutdown: {policy: timer}\n");
  ASSERT_TRUE(timer.ok()) << timer.status();
  EXPECT_EQ(timer->idle_shutdown.MinUptime(), absl::Minutes(5));
}

TEST(ParseIdlePolicyTest, UnknownPolicyKindIsInvalid) {
  auto p = ParseIdlePolicyYaml("idle_shutdown: {policy: magic}\n");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("idle_shutdown.policy"));
}

TEST(NamedIdlePolicyTest, TimerIsAPlainTimer) {
  auto p = NamedIdlePolicy("timer:5m", absl::Minutes(3));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->idle_shutdown.kind, IdleShutdownPolicy::Kind::kTimer);
  EXPECT_EQ(p->idle_shutdown.idle_after, absl::Minutes(5));
  EXPECT_EQ(p->idle_shutdown.KeepWarm("x/y"), 0);
  EXPECT_EQ(p->idle_shutdown.min_uptime, absl::ZeroDuration());
  EXPECT_TRUE(p->scale_up.enabled);
  EXPECT_EQ(p->scale_up.pending_after, absl::Minutes(2));
}

TEST(NamedIdlePolicyTest, CostAndErrors) {
  auto p = NamedIdlePolicy("cost", absl::Minutes(4));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->idle_shutdown.kind, IdleShutdownPolicy::Kind::kCost);
  EXPECT_EQ(p->idle_shutdown.boot_time, absl::Minutes(4));
  EXPECT_EQ(p->scale_up.pending_after, absl::ZeroDuration());
  EXPECT_FALSE(NamedIdlePolicy("timer:soon", absl::Minutes(3)).ok());
  EXPECT_FALSE(NamedIdlePolicy("lru", absl::Minutes(3)).ok());
  EXPECT_FALSE(NamedIdlePolicy("cost:2m", absl::Minutes(3)).ok());
  EXPECT_FALSE(NamedIdlePolicy("timer:5m:up=soon", absl::Minutes(3)).ok());
  EXPECT_FALSE(NamedIdlePolicy("timer:5m:up=-1s", absl::Minutes(3)).ok());
}

TEST(NamedIdlePolicyTest, ScaleUpDelayIsAnOption) {
  auto timer = NamedIdlePolicy("timer:20m:up=0s", absl::Minutes(3));
  ASSERT_TRUE(timer.ok()) << timer.status();
  EXPECT_EQ(timer->idle_shutdown.idle_after, absl::Minutes(20));
  EXPECT_EQ(timer->scale_up.pending_after, absl::ZeroDuration());
  auto cost = NamedIdlePolicy("cost:up=2m", absl::Minutes(3));
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->scale_up.pending_after, absl::Minutes(2));
}

TEST(ParseIdlePolicyTest, CostRuleScalesUpAtOnceUnlessGiven) {
  auto cost = ParseIdlePolicyYaml("idle_shutdown: {}\nscale_up: {}\n");
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->scale_up.pending_after, absl::ZeroDuration());
  auto given = ParseIdlePolicyYaml(
      "idle_shutdown: {}\nscale_up: {pending_after: 90s}\n");
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->scale_up.pending_after, absl::Seconds(90));
  auto timer =
      ParseIdlePolicyYaml("idle_shutdown: {policy: timer}\nscale_up: {}\n");
  ASSERT_TRUE(timer.ok()) << timer.status();
  EXPECT_EQ(timer->scale_up.pending_after, absl::Minutes(2));
  auto scale_only = ParseIdlePolicyYaml("scale_up: {}\n");
  ASSERT_TRUE(scale_only.ok()) << scale_only.status();
  EXPECT_EQ(scale_only->scale_up.pending_after, absl::Minutes(2));
}

TEST(ParseIdlePolicyTest, KeepWarmPerPool) {
  auto p = ParseIdlePolicyYaml(R"(
idle_shutdown:
  keep_warm: {default: 0, sa-east-1/A100-80GB: 2}
  grace: 30s
)");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->idle_shutdown.KeepWarm("sa-east-1/A100-80GB"), 2);
  EXPECT_EQ(p->idle_shutdown.KeepWarm("us-east-1/A100-80GB"), 0);
  EXPECT_EQ(p->idle_shutdown.grace, absl::Seconds(30));
}

struct BadCase {
  std::string name;
  std::string yaml;
  std::string want;  // substring of the error, starting with the field
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadPolicyTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadPolicyTest, IsInvalidArgumentNamingTheField) {
  auto p = ParseIdlePolicyYaml(GetParam().yaml);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr(GetParam().want));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadPolicyTest,
    ::testing::Values(
        BadCase{"UnknownField", "idle_shutdown: {idel_after: 1m}",
                "idle_shutdown.idel_after: unknown field"},
        BadCase{"BadDuration", "idle_shutdown: {idle_after: soon}",
                "idle_shutdown.idle_after"},
        BadCase{"ThresholdAboveOne", "idle_shutdown: {activity_threshold: 1.5}",
                "idle_shutdown.activity_threshold: must be a number between 0 "
                "and 1"},
        BadCase{"ThresholdNotANumber",
                "idle_shutdown: {activity_threshold: low}",
                "idle_shutdown.activity_threshold"},
        BadCase{"NegativeKeepWarm", "idle_shutdown: {keep_warm: -1}",
                "idle_shutdown.keep_warm: must be an integer >= 0"},
        BadCase{"KeepWarmPoolWithoutRegion",
                "idle_shutdown: {keep_warm: {A100: 1}}",
                "idle_shutdown.keep_warm.A100: pool must be"},
        BadCase{"KeepWarmList", "idle_shutdown: {keep_warm: [1]}",
                "idle_shutdown.keep_warm: must be a count or a mapping"},
        BadCase{"HookList", "idle_shutdown: {hook: [a, b]}",
                "idle_shutdown.hook: must be a scalar"},
        BadCase{"MinUptimeBad", "idle_shutdown: {min_uptime: 5x}",
                "idle_shutdown.min_uptime"},
        BadCase{"SectionNotMapping", "scale_up: 5",
                "scale_up: must be a mapping"},
        BadCase{"ScaleUpUnknown", "scale_up: {after: 1m}",
                "scale_up.after: unknown field"},
        BadCase{"ZombieAction", "zombie_jobs: {action: kill}",
                "zombie_jobs.action: must be flag or cancel"},
        BadCase{"ZombieAfter", "zombie_jobs: {after: -}", "zombie_jobs.after"},
        BadCase{"NotAMapping", "- a\n- b\n", "config: must be a mapping"},
        BadCase{"MalformedYaml", "idle_shutdown: {", "config:"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace tupa::scheduler::idle

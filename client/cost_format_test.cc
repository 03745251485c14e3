#include "client/cost_format.h"

#include <gtest/gtest.h>

namespace tupa::client {
namespace {

// 2026-12-02T12:00:00Z.
const absl::Time kNow = absl::FromUnixSeconds(1'796'212'800);

void SetTime(google::protobuf::Timestamp* ts, absl::Time t) {
  ts->set_seconds(absl::ToUnixSeconds(t));
}

TEST(CostGroupTest, AcceptsTheSixGroupsInAnyCase) {
  for (const char* group : {"team", "user", "gpu-type", "region", "day", "job"})
    EXPECT_EQ(*ParseCostGroup(group), group);
  EXPECT_EQ(*ParseCostGroup("TEAM"), "team");
  EXPECT_EQ(*ParseCostGroup("gpu_type"), "gpu-type");
}

TEST(CostGroupTest, UnknownGroupNamesTheFlag) {
  for (const char* bad : {"", "teams", "worker", "month"}) {
    absl::StatusOr<std::string> group = ParseCostGroup(bad);
    ASSERT_FALSE(group.ok()) << bad;
    EXPECT_EQ(group.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(group.status().message().find("--by"), std::string::npos);
  }
}

TEST(TimeBoundTest, ADurationMeansThatLongAgo) {
  EXPECT_EQ(*ParseTimeBound("7d", "--since", kNow), kNow - absl::Hours(168));
  EXPECT_EQ(*ParseTimeBound("1h30m", "--since", kNow),
            kNow - absl::Minutes(90));
  EXPECT_EQ(*ParseTimeBound("0s", "--until", kNow), kNow);
}

TEST(TimeBoundTest, ADateIsMidnightUtc) {
  EXPECT_EQ(*ParseTimeBound("2026-11-01", "--since", kNow),
            absl::FromCivil(absl::CivilDay(2026, 11, 1), absl::UTCTimeZone()));
}

TEST(TimeBoundTest, AnRfc3339TimeIsThatInstant) {
  const absl::Time eight_utc = absl::FromCivil(
      absl::CivilSecond(2026, 11, 1, 8, 0, 0), absl::UTCTimeZone());
  EXPECT_EQ(*ParseTimeBound("2026-11-01T08:00:00Z", "--since", kNow),
            eight_utc);
  EXPECT_EQ(*ParseTimeBound("2026-11-01T05:00:00-03:00", "--since", kNow),
            eight_utc);
}

TEST(TimeBoundTest, BadValuesNameTheFlag) {
  for (const char* bad :
       {"", "-7d", "7", "7days", "yesterday", "2026-13-01", "2026-11-1",
        "2026-11-01 08:00", "2026-11-01T08:00:00"}) {
    absl::StatusOr<absl::Time> t = ParseTimeBound(bad, "--until", kNow);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(t.status().message().rfind("--until: ", 0), 0u)
        << t.status().message();
  }
}

v1::CostReport SampleReport() {
  v1::CostReport report;
  report.set_currency("USD");
  report.set_group_by("team");
  SetTime(report.mutable_since(), kNow - absl::Hours(168));
  SetTime(report.mutable_until(), kNow);
  v1::CostRow* vision = report.add_rows();
  vision->set_key("vision");
  vision->set_gpu_seconds(36000);
  vision->set_cost("29.005");
  v1::CostRow* nlp = report.add_rows();
  nlp->set_key("nlp");
  nlp->set_gpu_seconds(7200);
  nlp->set_cost("0.995");
  report.set_total("30.000");
  report.set_total_gpu_seconds(43200);
  report.set_idle_cost("5.8");
  report.set_idle_gpu_seconds(7200);
  return report;
}

TEST(CostReportTest, TableHasHeaderGroupsTotalAndIdle) {
  EXPECT_EQ(RenderCostReport(SampleReport()),
            "cost by team, 2026-11-25 .. 2026-12-02 (USD)\n"
            "KEY     GPU-HOURS  COST       SHARE\n"
            "vision  10.00      29.00 USD  96.7%\n"
            "nlp     2.00       1.00 USD   3.3%\n"
            "TOTAL   12.00      30.00 USD  100.0%\n"
            "IDLE    2.00       5.80 USD\n");
}

TEST(CostReportTest, IdleShutdownSavingsShowOnceTheyReachACent) {
  v1::CostReport report = SampleReport();
  report.set_idle_shutdown_saved("0.004");
  EXPECT_EQ(RenderCostReport(report).find("saved by idle shutdown"),
            std::string::npos);
  report.set_idle_shutdown_saved("123.456");
  const std::string out = RenderCostReport(report);
  EXPECT_NE(out.find("IDLE    2.00       5.80 USD\n"
                     "saved by idle shutdown: 123.46 USD\n"),
            std::string::npos)
      << out;
}

TEST(CostReportTest, EmptyReportStillShowsTotalAndIdle) {
  v1::CostReport report;
  report.set_group_by("day");
  report.set_total("0");
  report.set_idle_cost("0");
  SetTime(report.mutable_since(), kNow - absl::Hours(24));
  SetTime(report.mutable_until(), kNow);
  EXPECT_EQ(RenderCostReport(report),
            "cost by day, 2026-12-01 .. 2026-12-02\n"
            "KEY    GPU-HOURS  COST  SHARE\n"
            "TOTAL  0.00       0.00\n"
            "IDLE   0.00       0.00\n");
}

TEST(CostReportTest, ATeamsOwnReportHasNoIdleRow) {
  v1::CostReport report;  // as the scheduler answers a non-admin
  report.set_group_by("team");
  report.set_total("1.5");
  SetTime(report.mutable_since(), kNow - absl::Hours(24));
  SetTime(report.mutable_until(), kNow);
  EXPECT_EQ(RenderCostReport(report).find("IDLE"), std::string::npos);
}

TEST(EstimateTest, TableKeepsTheServersOrderAndHumanisesTimes) {
  v1::EstimateJobResponse response;
  response.set_currency("USD");
  v1::Estimate* sp = response.add_estimates();
  sp->set_region("sa-east-1");
  sp->set_gpu_type("A100-80GB");
  sp->set_offering("on-demand");
  sp->set_price_per_gpu_hour("2.03");
  sp->set_cost("16.925");
  sp->mutable_duration()->set_seconds(7500);
  SetTime(sp->mutable_finish_at(), kNow + absl::Seconds(7500));
  sp->set_basis("max_runtime");
  sp->set_fits_now(true);
  v1::Estimate* us = response.add_estimates();
  us->set_region("us-east-1");
  us->set_gpu_type("H100");
  us->set_price_per_gpu_hour("4.125");
  us->set_cost("20.6");
  us->mutable_duration()->set_seconds(3 * 3600);
  SetTime(us->mutable_start_at(), kNow + absl::Minutes(30));
  SetTime(us->mutable_finish_at(), kNow + absl::Minutes(210));
  us->set_basis("measured (job resnet, 1200 samples/s)");
  EXPECT_EQ(
      RenderEstimates(response, kNow),
      "REGION     GPU-TYPE   OFFERING   PRICE/GPU-H  COST       DURATION  "
      "START      FINISH    BASIS                                  FITS-NOW\n"
      "sa-east-1  A100-80GB  on-demand  2.03 USD     16.92 USD  2h05m     "
      "now        in 2h05m  max_runtime                            yes\n"
      "us-east-1  H100       -          4.125 USD    20.60 USD  3h00m     "
      "in 30m00s  in 3h30m  measured (job resnet, 1200 samples/s)  no\n");
}

}  // namespace
}  // namespace tupa::client

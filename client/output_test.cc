#include "client/output.h"

#include <gtest/gtest.h>

#include "tupa/v1/job.pb.h"

namespace tupa::client {
namespace {

TEST(TableTest, ColumnsAlignToTheWidestCell) {
  Table table({"ID", "NAME", "STATE"});
  table.AddRow({"1", "a-long-name", "RUNNING"});
  table.AddRow({"42", "x", "PENDING"});
  EXPECT_EQ(table.Render(),
            "ID  NAME         STATE\n"
            "1   a-long-name  RUNNING\n"
            "42  x            PENDING\n");
}

TEST(TableTest, ShortRowsArePaddedAndNoTrailingSpaces) {
  Table table({"A", "B", "C"});
  table.AddRow({"1"});
  EXPECT_EQ(table.Render(), "A  B  C\n1\n");
}

TEST(TableTest, HeaderOnlyWhenEmpty) {
  EXPECT_EQ(Table({"ID", "NAME"}).Render(), "ID  NAME\n");
}

TEST(JsonTest, UsesProtoFieldNamesAndPrintsDefaults) {
  v1::Job job;
  job.set_id(42);
  job.set_exit_code(0);
  job.mutable_spec()->mutable_resources()->set_memory_bytes(1024);
  job.set_state(v1::JOB_STATE_RUNNING);
  const std::string json = ToJson(job);
  EXPECT_NE(json.find("\"id\": \"42\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"exit_code\": 0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"memory_bytes\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"JOB_STATE_RUNNING\""), std::string::npos) << json;
  EXPECT_EQ(json.find("exitCode"), std::string::npos) << json;
  EXPECT_EQ(json.back(), '\n');
}

TEST(HumanTest, AgoIsShortAndHuman) {
  const absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  EXPECT_EQ(HumanAgo(now - absl::Minutes(3), now), "3m ago");
  EXPECT_EQ(HumanAgo(now - absl::Seconds(5), now), "5s ago");
  EXPECT_EQ(HumanAgo(now - absl::Hours(26), now), "1d ago");
  EXPECT_EQ(HumanAgo(now, now), "just now");
  EXPECT_EQ(HumanAgo(absl::InfinitePast(), now), "-");
  EXPECT_EQ(HumanAgo(now + absl::Seconds(5), now), "in 5s");
}

TEST(HumanTest, ZeroTimestampIsUnset) {
  EXPECT_EQ(ToTime(google::protobuf::Timestamp()), absl::InfinitePast());
  google::protobuf::Timestamp ts;
  ts.set_seconds(10);
  EXPECT_EQ(ToTime(ts), absl::FromUnixSeconds(10));
  EXPECT_EQ(FormatUtc(absl::FromUnixSeconds(0) + absl::Hours(25)),
            "1970-01-02T01:00:00Z");
}

TEST(HumanTest, CountsDropTrailingZeros) {
  EXPECT_EQ(FormatCount(2), "2");
  EXPECT_EQ(FormatCount(0.5), "0.5");
  EXPECT_EQ(FormatCount(1.25), "1.25");
  EXPECT_EQ(FormatCount(0), "0");
}

TEST(HumanTest, TruncateCutsWithEllipsisAndFlattensNewlines) {
  EXPECT_EQ(Truncate("short", 10), "short");
  EXPECT_EQ(Truncate("0123456789abc", 10), "0123456...");
  EXPECT_EQ(Truncate("a\nb", 10), "a b");
}

TEST(EscapeTest, ControlCharactersBecomeVisibleTextAndUtf8IsKept) {
  EXPECT_EQ(EscapeControl("l1\nl2\t\x1b[31mRED\r\x7f\x01"),
            "l1\\nl2\\t\\x1b[31mRED\\r\\x7f\\x01");
  EXPECT_EQ(EscapeControl("caf\xc3\xa9 \xe2\x82\xac"),
            "caf\xc3\xa9 \xe2\x82\xac");
}

TEST(EscapeTest, TruncateAndTableCellsCarryNoControlCharacters) {
  EXPECT_EQ(Truncate("l1\nl2\t\x1b[31mRED", 40), "l1 l2\\t\\x1b[31mRED");
  Table table({"A", "B"});
  table.AddRow({"x\x1b[2J", "y\nSUCCEEDED"});
  EXPECT_EQ(table.Render(),
            "A         B\n"
            "x\\x1b[2J  y\\nSUCCEEDED\n");
}

TEST(OutputFormatTest, AcceptsTableAndJsonOnly) {
  EXPECT_EQ(*ParseOutputFormat("json"), OutputFormat::kJson);
  EXPECT_EQ(*ParseOutputFormat("table"), OutputFormat::kTable);
  auto bad = ParseOutputFormat("yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("-o"), std::string::npos);
}

}  // namespace
}  // namespace tupa::client

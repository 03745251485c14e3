#include "client/args.h"

#include <gtest/gtest.h>

namespace tupa::client {
namespace {

FlagSet TestFlags() {
  FlagSet flags("test");
  flags.AddValue("gpus", "N", "gpus")
      .AddValue("file", "FILE", "file", "f")
      .AddRepeated("env", "K=V", "env")
      .AddBool("follow", "follow", "F");
  return flags;
}

TEST(ArgsTest, ValueFlagTakesSeparateOrInlineValue) {
  auto a = TestFlags().Parse({"--gpus", "2"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->Value("gpus"), "2");
  auto b = TestFlags().Parse({"--gpus=3"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->Value("gpus"), "3");
}

TEST(ArgsTest, LastValueWinsForSingleFlag) {
  auto a = TestFlags().Parse({"--gpus", "2", "--gpus", "4"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->Value("gpus"), "4");
  EXPECT_EQ(a->Values("gpus").size(), 1u);
}

TEST(ArgsTest, RepeatableFlagKeepsEveryValueInOrder) {
  auto a = TestFlags().Parse({"--env", "A=1", "--env=B=2"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->Values("env"), (std::vector<std::string>{"A=1", "B=2"}));
}

TEST(ArgsTest, ShortFormsAndBooleans) {
  auto a = TestFlags().Parse({"-f", "job.yaml", "-F"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->Value("file"), "job.yaml");
  EXPECT_TRUE(a->Bool("follow"));
  auto b = TestFlags().Parse({"--follow=false"});
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->Has("follow"));
  EXPECT_FALSE(b->Bool("follow"));
  EXPECT_FALSE(TestFlags().Parse({})->Bool("follow"));
}

TEST(ArgsTest, ValueStartingWithDashIsTakenAsValue) {
  auto a = TestFlags().Parse({"--gpus", "-1"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->Value("gpus"), "-1");
}

TEST(ArgsTest, SeparatorKeepsTheRestVerbatim) {
  auto a = TestFlags().Parse(
      {"42", "--gpus", "1", "--", "python", "--gpus", "x", "--"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->positional(), std::vector<std::string>{"42"});
  EXPECT_TRUE(a->has_separator());
  EXPECT_EQ(a->after_separator(),
            (std::vector<std::string>{"python", "--gpus", "x", "--"}));
}

TEST(ArgsTest, SeparatorWithNothingAfterIsRecorded) {
  auto a = TestFlags().Parse({"--"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->has_separator());
  EXPECT_TRUE(a->after_separator().empty());
}

TEST(ArgsTest, UnknownFlagIsAnErrorNamingIt) {
  auto a = TestFlags().Parse({"--gpuss=2"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("--gpuss"), std::string::npos);
  EXPECT_FALSE(TestFlags().Parse({"-x"}).ok());
}

TEST(ArgsTest, MissingValueIsAnErrorNamingTheFlag) {
  auto a = TestFlags().Parse({"--gpus"});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("--gpus"), std::string::npos);
}

TEST(ArgsTest, BadBooleanValueIsAnError) {
  EXPECT_FALSE(TestFlags().Parse({"--follow=maybe"}).ok());
}

TEST(ArgsTest, TakesSeparateValue) {
  const FlagSet flags = TestFlags();
  EXPECT_TRUE(flags.TakesSeparateValue("--gpus"));
  EXPECT_TRUE(flags.TakesSeparateValue("-f"));
  EXPECT_FALSE(flags.TakesSeparateValue("--gpus=2"));
  EXPECT_FALSE(flags.TakesSeparateValue("--follow"));
  EXPECT_FALSE(flags.TakesSeparateValue("gpus"));
}

TEST(ArgsTest, UsageListsEveryFlag) {
  const std::string usage = TestFlags().Usage();
  EXPECT_NE(usage.find("usage: test"), std::string::npos);
  EXPECT_NE(usage.find("-f, --file FILE"), std::string::npos);
  EXPECT_NE(usage.find("--env K=V"), std::string::npos);
  EXPECT_NE(usage.find("(repeatable)"), std::string::npos);
}

}  // namespace
}  // namespace tupa::client

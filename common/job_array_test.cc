#include "common/job_array.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tupa {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseArrayIndexes, RangeWithLimit) {
  auto a = ParseArrayIndexes("0-99%10", "--array");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->indexes.size(), 100u);
  EXPECT_EQ(a->indexes.front(), 0);
  EXPECT_EQ(a->indexes.back(), 99);
  EXPECT_EQ(a->max_running, 10);
}

TEST(ParseArrayIndexes, ListsStepsAndSingles) {
  auto a = ParseArrayIndexes("1,3,8-16:4", "--array");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->indexes, ElementsAre(1, 3, 8, 12, 16));
  EXPECT_EQ(a->max_running, 0);
  auto one = ParseArrayIndexes("7%1", "array");
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(one->indexes, ElementsAre(7));
  EXPECT_EQ(one->max_running, 1);
}

TEST(ParseArrayIndexes, ErrorsNameTheFieldAndTheItem) {
  for (const char* bad :
       {"", "%3", "5-2", "1,,2", "a-b", "0-9%0", "0-9%x", "1:2", "0-3,2", "-1",
        "0-1000000", "0-9:0", "0-10000%5", " 1"}) {
    auto a = ParseArrayIndexes(bad, "--array");
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(a.status().message(), HasSubstr("--array: ")) << bad;
  }
  EXPECT_THAT(ParseArrayIndexes("0-3,2", "--array").status().message(),
              HasSubstr("index 2 is listed twice"));
  EXPECT_THAT(ParseArrayIndexes("5-2", "--array").status().message(),
              HasSubstr("\"5-2\": the range is reversed"));
}

TEST(ParseArrayIndexes, TenThousandTasksIsTheCeiling) {
  EXPECT_TRUE(ParseArrayIndexes("0-9999", "array").ok());
  EXPECT_FALSE(ParseArrayIndexes("0-10000", "array").ok());
}

TEST(SubstituteArrayIndex, ReplacesEveryPlaceholderAndNothingElse) {
  EXPECT_EQ(SubstituteArrayIndex("lr-{{index}}/{{ index }}", 7), "lr-7/7");
  EXPECT_EQ(SubstituteArrayIndex("{{indexes}} {{x}} {{ index", 3),
            "{{indexes}} {{x}} {{ index");
  EXPECT_EQ(SubstituteArrayIndex("{{{index}}}", 2), "{2}");
  EXPECT_EQ(SubstituteArrayIndex("", 2), "");
  EXPECT_TRUE(HasArrayPlaceholder("a{{index}}"));
  EXPECT_FALSE(HasArrayPlaceholder("a{{ind}}"));
}

TEST(SubstituteArrayIndex, SpecNameCommandEnvAndDataPath) {
  v1::JobSpec spec;
  spec.set_name("sweep-{{index}}");
  spec.add_command("python");
  spec.add_command("--seed={{index}}");
  (*spec.mutable_env())["LR_INDEX"] = "{{index}}";
  spec.mutable_train()->mutable_data()->set_path("/data/shard-{{index}}");
  v1::JobSpec task = SubstituteArrayIndex(spec, 12);
  EXPECT_EQ(task.name(), "sweep-12");
  EXPECT_THAT(task.command(), ElementsAre("python", "--seed=12"));
  EXPECT_EQ(task.env().at("LR_INDEX"), "12");
  EXPECT_EQ(task.train().data().path(), "/data/shard-12");
}

TEST(MarkArrayTask, SetsArrayFieldAndEnvironment) {
  v1::JobSpec spec;
  auto array = ParseArrayIndexes("0-4%2", "array");
  ASSERT_TRUE(array.ok());
  MarkArrayTask(spec, 900, 3, *array, "0-4%2");
  EXPECT_EQ(spec.array().array_id(), 900);
  EXPECT_EQ(spec.array().index(), 3);
  EXPECT_EQ(spec.array().max_running(), 2);
  EXPECT_EQ(spec.array().size(), 5);
  EXPECT_EQ(spec.array().indexes(), "0-4%2");
  EXPECT_EQ(spec.env().at("TUPA_ARRAY_JOB_ID"), "900");
  EXPECT_EQ(spec.env().at("TUPA_ARRAY_INDEX"), "3");
}

}  // namespace
}  // namespace tupa

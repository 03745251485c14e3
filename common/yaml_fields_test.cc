// The shared YAML field helpers: each error names the field's path.
#include "common/yaml_fields.h"

#include <gtest/gtest.h>

namespace tupa::yaml {
namespace {

TEST(YamlFields, UnknownAndRepeatedKeysNameTheirPath) {
  YAML::Node n = YAML::Load("{a: 1, b: 2}");
  EXPECT_TRUE(CheckKeys(n, "top", {"a", "b"}).ok());
  absl::Status s = CheckKeys(n, "top", {"a"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("top.b: unknown field (known: a)", 0), 0u) << s;
  s = CheckKeys(YAML::Load("a: 1\na: 2\n"), "", {"a"});
  EXPECT_EQ(s.message(), "a: given twice");
  s = CheckKeys(YAML::Load("? [x]\n: 1\n"), "", {"a"}, "config");
  EXPECT_EQ(s.message(), "config: keys must be strings");
  s = CheckKeys(YAML::Load("[1]"), "p", {"a"});
  EXPECT_EQ(s.message(), "p: must be a mapping");
}

TEST(YamlFields, NumbersRefuseTextOverflowAndNonFinite) {
  EXPECT_EQ(*Int32(YAML::Load("-7"), "n"), -7);
  EXPECT_EQ(Int32(YAML::Load("3000000000"), "n").status().message(),
            "n: out of range");
  EXPECT_EQ(Int(YAML::Load("1.5"), "n").status().message(),
            "n: bad integer \"1.5\"");
  EXPECT_DOUBLE_EQ(*Number(YAML::Load("0.25"), "x"), 0.25);
  EXPECT_FALSE(Number(YAML::Load("inf"), "x").ok());
  EXPECT_EQ(Scalar(YAML::Load("[1]"), "x").status().message(),
            "x: must be a scalar value");
  EXPECT_EQ(NonEmpty(YAML::Load("''"), "x").status().message(),
            "x: must not be empty");
}

TEST(YamlFields, ListsTakeOneScalarAndMapsRefuseRepeats) {
  auto one = StringList(YAML::Load("H100"), "t");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<std::string>{"H100"});
  EXPECT_EQ(StringList(YAML::Load("[a, [b]]"), "t").status().message(),
            "t[1]: must be a scalar value");
  google::protobuf::Map<std::string, std::string> out;
  ASSERT_TRUE(StringMap(YAML::Load("{A: '1', B: x}"), "env", &out).ok());
  EXPECT_EQ(out["B"], "x");
  out.clear();
  EXPECT_EQ(StringMap(YAML::Load("A: 1\nA: 2\n"), "env", &out).message(),
            "env.A: given twice");
}

TEST(YamlFields, CountsOnlyDocumentsThatHoldSomething) {
  EXPECT_EQ(CountDocuments("a: 1\n"), 1);
  EXPECT_EQ(CountDocuments("a: 1\n---\n"), 1);
  EXPECT_EQ(CountDocuments("a: 1\n---\nb: 2\n"), 2);
  EXPECT_EQ(CountDocuments(""), 0);
}

}  // namespace
}  // namespace tupa::yaml

#include "scheduler/pricing/price_catalog.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace tupa::pricing {
namespace {

// The example from issue 4.
constexpr char kIssueExample[] = R"(
currency: USD
prices:
  - {region: sa-east-1, gpu_type: A100-80GB, offering: on-demand, per_gpu_hour: 2.90,
     off_peak: [{days: [mon,tue,wed,thu,fri], hours: "22:00-06:00",
                 timezone: America/Sao_Paulo, discount: 0.30},
                {days: [sat,sun], hours: "00:00-24:00",
                 timezone: America/Sao_Paulo, discount: 0.30}]}
  - {region: "*", gpu_type: "*", per_gpu_hour: 1.00}
budgets: [{team: vision, monthly: 500.00}]
budget_action: hold
)";

TEST(PriceCatalogTest, ParsesTheIssueExample) {
  absl::StatusOr<PriceCatalog> c = PriceCatalog::Parse(kIssueExample);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->currency(), "USD");
  ASSERT_EQ(c->entries().size(), 2u);
  const PriceEntry& a100 = c->entries()[0];
  EXPECT_EQ(a100.per_gpu_hour.ToString(), "2.90");
  ASSERT_EQ(a100.off_peak.size(), 2u);
  const OffPeakWindow& night = a100.off_peak[0];
  EXPECT_EQ(night.start_minute, 22 * 60);
  EXPECT_EQ(night.end_minute, 6 * 60);
  EXPECT_EQ(night.discount_ppm, 300000);
  EXPECT_EQ(night.timezone_name, "America/Sao_Paulo");
  EXPECT_TRUE(night.days[0]);   // mon
  EXPECT_FALSE(night.days[5]);  // sat
  EXPECT_EQ(a100.off_peak[1].end_minute, 24 * 60);
  EXPECT_EQ(c->entries()[1].offering, "*");
  EXPECT_EQ(c->MonthlyBudget("vision"), Money::FromUnits(500));
  EXPECT_FALSE(c->MonthlyBudget("nlp").has_value());
  EXPECT_EQ(c->budget_action(), BudgetAction::kHold);
}

struct BadCase {
  const char* name;
  std::string yaml;
  const char* field;  // the path the error must name
};

std::string WithEntry(const std::string& entry) {
  return absl::StrCat("currency: USD\nprices:\n  - {per_gpu_hour: 1.00}\n  - ",
                      entry, "\n");
}

std::string WithWindow(const std::string& window) {
  return WithEntry(absl::StrCat("{region: r, per_gpu_hour: 2.00, off_peak: [",
                                window, "]}"));
}

constexpr char kGoodWindow[] =
    "{days: [mon], hours: \"22:00-06:00\", timezone: UTC, discount: 0.3}";

std::string Tweak(const std::string& from, const std::string& to) {
  return WithWindow(absl::StrReplaceAll(kGoodWindow, {{from, to}}));
}

TEST(PriceCatalogTest, EachBadInputNamesItsField) {
  const BadCase cases[] = {
      {"not a map", "- 1", "pricing"},
      {"unknown top key", "currency: USD\nprices: [{per_gpu_hour: 1}]\nx: 1",
       "pricing.x"},
      {"missing currency", "prices: [{per_gpu_hour: 1}]", "pricing.currency"},
      {"bad currency", "currency: dollars\nprices: [{per_gpu_hour: 1}]",
       "pricing.currency"},
      {"missing prices", "currency: USD", "pricing.prices"},
      {"empty prices", "currency: USD\nprices: []", "pricing.prices"},
      {"prices not a list", "currency: USD\nprices: {a: 1}", "pricing.prices"},
      {"unknown entry key", WithEntry("{per_gpu_hour: 1, gpu: A100}"),
       "pricing.prices[1].gpu"},
      {"missing price", WithEntry("{region: r}"),
       "pricing.prices[1].per_gpu_hour"},
      {"negative price", WithEntry("{region: r, per_gpu_hour: -2.90}"),
       "pricing.prices[1].per_gpu_hour"},
      {"float exponent price", WithEntry("{region: r, per_gpu_hour: 2.9e0}"),
       "pricing.prices[1].per_gpu_hour"},
      {"huge price", WithEntry("{region: r, per_gpu_hour: 2000000}"),
       "pricing.prices[1].per_gpu_hour"},
      {"empty region", WithEntry("{region: \"\", per_gpu_hour: 1}"),
       "pricing.prices[1].region"},
      {"duplicate entry", WithEntry("{region: \"*\", per_gpu_hour: 2}"),
       "pricing.prices[1]"},
      {"off_peak not a list",
       WithEntry("{region: r, per_gpu_hour: 1, "
                 "off_peak: {hours: x}}"),
       "pricing.prices[1].off_peak"},
      {"unknown window key", Tweak("discount: 0.3", "discount: 0.3, tz: UTC"),
       "pricing.prices[1].off_peak[0].tz"},
      {"bad day", Tweak("[mon]", "[mon, funday]"),
       "pricing.prices[1].off_peak[0].days[1]"},
      {"repeated day", Tweak("[mon]", "[mon, MON]"),
       "pricing.prices[1].off_peak[0].days[1]"},
      {"empty days", Tweak("[mon]", "[]"),
       "pricing.prices[1].off_peak[0].days"},
      {"hours without dash", Tweak("22:00-06:00", "22:00"),
       "pricing.prices[1].off_peak[0].hours"},
      {"hours 25", Tweak("22:00-06:00", "25:00-06:00"),
       "pricing.prices[1].off_peak[0].hours"},
      {"minutes 60", Tweak("22:00-06:00", "22:60-06:00"),
       "pricing.prices[1].off_peak[0].hours"},
      {"24:00 as start", Tweak("22:00-06:00", "24:00-06:00"),
       "pricing.prices[1].off_peak[0].hours"},
      {"one-digit hour", Tweak("22:00-06:00", "22:00-6:00"),
       "pricing.prices[1].off_peak[0].hours"},
      {"empty window", Tweak("22:00-06:00", "06:00-06:00"),
       "pricing.prices[1].off_peak[0].hours"},
      {"missing hours", Tweak("hours: \"22:00-06:00\", ", ""),
       "pricing.prices[1].off_peak[0].hours"},
      {"unknown time zone", Tweak("UTC", "Mars/Olympus_Mons"),
       "pricing.prices[1].off_peak[0].timezone"},
      {"missing time zone", Tweak("timezone: UTC, ", ""),
       "pricing.prices[1].off_peak[0].timezone"},
      {"discount 1", Tweak("0.3", "1"),
       "pricing.prices[1].off_peak[0].discount"},
      {"discount 1.5", Tweak("0.3", "1.5"),
       "pricing.prices[1].off_peak[0].discount"},
      {"negative discount", Tweak("0.3", "-0.1"),
       "pricing.prices[1].off_peak[0].discount"},
      {"percent discount", Tweak("0.3", "30%"),
       "pricing.prices[1].off_peak[0].discount"},
      {"missing discount", Tweak(", discount: 0.3", ""),
       "pricing.prices[1].off_peak[0].discount"},
      {"budget unknown key",
       "currency: USD\nprices: [{per_gpu_hour: 1}]\n"
       "budgets: [{team: a, monthly: 1, weekly: 2}]",
       "pricing.budgets[0].weekly"},
      {"budget missing team",
       "currency: USD\nprices: [{per_gpu_hour: 1}]\nbudgets: [{monthly: 1}]",
       "pricing.budgets[0].team"},
      {"negative budget",
       "currency: USD\nprices: [{per_gpu_hour: 1}]\n"
       "budgets: [{team: a, monthly: -5}]",
       "pricing.budgets[0].monthly"},
      {"repeated team",
       "currency: USD\nprices: [{per_gpu_hour: 1}]\n"
       "budgets: [{team: a, monthly: 1}, {team: a, monthly: 2}]",
       "pricing.budgets[1].team"},
      {"bad budget_action",
       "currency: USD\nprices: [{per_gpu_hour: 1}]\nbudget_action: warn",
       "pricing.budget_action"},
      {"yaml syntax", "currency: [USD", "pricing"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<PriceCatalog> got = PriceCatalog::Parse(c.yaml);
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument)
        << c.name;
    EXPECT_TRUE(
        absl::StartsWith(got.status().message(), absl::StrCat(c.field, ":")))
        << c.name << ": " << got.status().message();
  }
}

TEST(PriceCatalogTest, AcceptsWindowVariants) {
  for (const char* w :
       {"{hours: \"00:00-24:00\", timezone: UTC, discount: 0}",
        "{hours: \"06:00-00:00\", timezone: UTC, discount: 0.999999}",
        "{days: [Sat, sun], hours: \"22:00-24:00\", timezone: "
        "America/New_York, discount: 0.5}"}) {
    absl::StatusOr<PriceCatalog> c = PriceCatalog::Parse(WithWindow(w));
    EXPECT_TRUE(c.ok()) << w << ": " << c.status();
  }
}

TEST(PriceCatalogTest, FromNodeUsesTheGivenPath) {
  YAML::Node config = YAML::Load("pricing: {currency: USD, prices: [{}]}");
  absl::StatusOr<PriceCatalog> c =
      PriceCatalog::FromNode(config["pricing"], "config.pricing");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StartsWith(c.status().message(),
                               "config.pricing.prices[0].per_gpu_hour:"))
      << c.status();
}

constexpr char kMatchCatalog[] = R"(
currency: USD
prices:
  - {per_gpu_hour: 1.00}
  - {offering: spot, per_gpu_hour: 0.50}
  - {gpu_type: H100, per_gpu_hour: 4.00}
  - {gpu_type: H100, offering: spot, per_gpu_hour: 1.50}
  - {region: sa-east-1, per_gpu_hour: 3.00}
  - {region: sa-east-1, gpu_type: H100, offering: on-demand, per_gpu_hour: 5.00}
)";

std::string PriceOf(const PriceCatalog& c, const char* region,
                    const char* gpu_type, const char* offering) {
  absl::StatusOr<PriceEntry> e = c.Lookup(region, gpu_type, offering);
  return e.ok() ? e->per_gpu_hour.ToString() : e.status().ToString();
}

TEST(PriceCatalogTest, LookupPicksMostSpecificRegionThenGpuTypeThenOffering) {
  absl::StatusOr<PriceCatalog> c = PriceCatalog::Parse(kMatchCatalog);
  ASSERT_TRUE(c.ok()) << c.status();
  // All three exact.
  EXPECT_EQ(PriceOf(*c, "sa-east-1", "H100", "on-demand"), "5.00");
  // Exact region beats exact gpu_type + offering elsewhere.
  EXPECT_EQ(PriceOf(*c, "sa-east-1", "H100", "spot"), "3.00");
  EXPECT_EQ(PriceOf(*c, "sa-east-1", "T4", "on-demand"), "3.00");
  // Exact gpu_type beats exact offering.
  EXPECT_EQ(PriceOf(*c, "us-east-1", "H100", "on-demand"), "4.00");
  EXPECT_EQ(PriceOf(*c, "us-east-1", "H100", "spot"), "1.50");
  EXPECT_EQ(PriceOf(*c, "us-east-1", "T4", "spot"), "0.50");
  // Only the catch-all.
  EXPECT_EQ(PriceOf(*c, "us-east-1", "T4", "on-demand"), "1.00");
  // An empty value matches only "*".
  EXPECT_EQ(PriceOf(*c, "", "", ""), "1.00");
  // Case-sensitive.
  EXPECT_EQ(PriceOf(*c, "us-east-1", "h100", "on-demand"), "1.00");
}

TEST(PriceCatalogTest, LookupWithoutMatchIsNotFound) {
  absl::StatusOr<PriceCatalog> c = PriceCatalog::Parse(
      "currency: BRL\nprices: [{region: sa-east-1, per_gpu_hour: 9.00}]");
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<PriceEntry> e = c->Lookup("us-east-1", "T4", "spot");
  ASSERT_EQ(e.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(e.status().message().find("us-east-1"), std::string::npos);
  EXPECT_TRUE(c->Lookup("sa-east-1", "T4", "spot").ok());
}

TEST(PriceCatalogTest, ShippedExampleParsesAndMatches) {
  std::ifstream in(TUPA_SOURCE_DIR "/deploy/pricing.example.yaml");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<PriceCatalog> c = PriceCatalog::Parse(text.str());
  ASSERT_TRUE(c.ok()) << c.status();
  for (const char* region : {"sa-east-1", "us-east-1"}) {
    for (const char* gpu : {"A100-80GB", "H100", "L4", "T4"}) {
      for (const char* offering : {"on-demand", "spot"}) {
        absl::StatusOr<PriceEntry> e = c->Lookup(region, gpu, offering);
        ASSERT_TRUE(e.ok()) << e.status();
        EXPECT_EQ(e->region, region);
        EXPECT_EQ(e->gpu_type, gpu);
        EXPECT_EQ(e->offering, offering);
      }
    }
  }
  EXPECT_EQ(PriceOf(*c, "on-prem", "V100", "owned"), "1.00");
  EXPECT_TRUE(c->MonthlyBudget("vision").has_value());
}

}  // namespace
}  // namespace tupa::pricing

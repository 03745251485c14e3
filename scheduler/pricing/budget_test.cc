#include "scheduler/pricing/budget.h"

#include <string>

#include "gtest/gtest.h"

namespace tupa::pricing {
namespace {

Money M(const char* text) { return Money::FromString(text).value(); }

BudgetRequest Request(const char* estimate) {
  BudgetRequest r;
  r.team = "vision";
  r.currency = "USD";
  r.estimated_cost = M(estimate);
  return r;
}

bool Mentions(const BudgetDecision& d, const std::string& what) {
  return d.message.find(what) != std::string::npos;
}

TEST(BudgetTest, AdmitsWithoutLimits) {
  BudgetDecision d = DecideBudget(Request("1000000.00"));
  EXPECT_EQ(d.verdict, BudgetDecision::Verdict::kAdmit);
  EXPECT_EQ(d.cause, BudgetDecision::Cause::kNone);
  EXPECT_TRUE(d.reason.empty());
}

TEST(BudgetTest, RejectsOverMaxCostNamingIt) {
  BudgetRequest r = Request("12.40");
  r.max_cost = M("10.00");
  BudgetDecision d = DecideBudget(r);
  EXPECT_EQ(d.verdict, BudgetDecision::Verdict::kReject);
  EXPECT_EQ(d.cause, BudgetDecision::Cause::kMaxCost);
  EXPECT_EQ(d.reason, "BUDGET");
  EXPECT_TRUE(Mentions(d, "max_cost 10.00 USD")) << d.message;
  EXPECT_TRUE(Mentions(d, "12.40 USD")) << d.message;
}

TEST(BudgetTest, EstimateEqualToALimitIsAdmitted) {
  BudgetRequest r = Request("10.00");
  r.max_cost = M("10.00");
  r.monthly_budget = M("500.00");
  r.spent_this_month = M("490.00");
  EXPECT_EQ(DecideBudget(r).verdict, BudgetDecision::Verdict::kAdmit);
}

TEST(BudgetTest, RejectsOverRemainingTeamBudgetNamingIt) {
  BudgetRequest r = Request("10.00");
  r.monthly_budget = M("500.00");
  r.spent_this_month = M("490.000000001");
  BudgetDecision d = DecideBudget(r);
  EXPECT_EQ(d.verdict, BudgetDecision::Verdict::kReject);
  EXPECT_EQ(d.cause, BudgetDecision::Cause::kTeamBudget);
  EXPECT_EQ(d.reason, "BUDGET");
  EXPECT_TRUE(Mentions(d, "budget")) << d.message;
  EXPECT_TRUE(Mentions(d, "\"vision\"")) << d.message;
}

TEST(BudgetTest, OverspentTeamRejectsEvenAFreeJob) {
  BudgetRequest r = Request("0.01");
  r.monthly_budget = M("500.00");
  r.spent_this_month = M("512.00");
  EXPECT_EQ(DecideBudget(r).cause, BudgetDecision::Cause::kTeamBudget);
}

TEST(BudgetTest, HoldActionHoldsWithReasonBudget) {
  BudgetRequest r = Request("12.40");
  r.action = BudgetAction::kHold;
  r.max_cost = M("10.00");
  BudgetDecision d = DecideBudget(r);
  EXPECT_EQ(d.verdict, BudgetDecision::Verdict::kHold);
  EXPECT_EQ(d.reason, "BUDGET");
  r.max_cost.reset();
  r.monthly_budget = M("5.00");
  d = DecideBudget(r);
  EXPECT_EQ(d.verdict, BudgetDecision::Verdict::kHold);
  EXPECT_EQ(d.cause, BudgetDecision::Cause::kTeamBudget);
}

TEST(BudgetTest, MaxCostIsCheckedBeforeTheTeamBudget) {
  BudgetRequest r = Request("12.40");
  r.max_cost = M("10.00");
  r.monthly_budget = M("5.00");
  EXPECT_EQ(DecideBudget(r).cause, BudgetDecision::Cause::kMaxCost);
}

TEST(BudgetTest, MonthIsTheUtcCalendarMonth) {
  absl::TimeZone utc = absl::UTCTimeZone();
  // 2026-03-01 02:00 UTC is still February in São Paulo, but March here.
  BudgetMonth m =
      MonthContaining(absl::FromCivil(absl::CivilHour(2026, 3, 1, 2), utc));
  EXPECT_EQ(m.start, absl::FromCivil(absl::CivilDay(2026, 3, 1), utc));
  EXPECT_EQ(m.end, absl::FromCivil(absl::CivilDay(2026, 4, 1), utc));
  BudgetMonth dec = MonthContaining(
      absl::FromCivil(absl::CivilSecond(2026, 12, 31, 23, 59, 59), utc));
  EXPECT_EQ(dec.end, absl::FromCivil(absl::CivilDay(2027, 1, 1), utc));
  // The end is exclusive.
  EXPECT_EQ(MonthContaining(m.end).start, m.end);
}

}  // namespace
}  // namespace tupa::pricing

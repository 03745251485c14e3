#include "scheduler/pricing/budget.h"

#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"

namespace tupa::pricing {
namespace {

std::string Amount(Money m, const std::string& currency) {
  return currency.empty() ? m.ToString()
                          : absl::StrCat(m.ToString(), " ", currency);
}

BudgetDecision Over(const BudgetRequest& r, BudgetDecision::Cause cause,
                    std::string message) {
  BudgetDecision d;
  d.verdict = r.action == BudgetAction::kHold
                  ? BudgetDecision::Verdict::kHold
                  : BudgetDecision::Verdict::kReject;
  d.cause = cause;
  d.reason = std::string(kBudgetReason);
  d.message = std::move(message);
  return d;
}

}  // namespace

BudgetMonth MonthContaining(absl::Time t) {
  absl::CivilMonth m = absl::ToCivilMonth(t, absl::UTCTimeZone());
  return {absl::FromCivil(m, absl::UTCTimeZone()),
          absl::FromCivil(m + 1, absl::UTCTimeZone())};
}

BudgetDecision DecideBudget(const BudgetRequest& r) {
  if (r.max_cost.has_value() && r.estimated_cost > *r.max_cost) {
    return Over(
        r, BudgetDecision::Cause::kMaxCost,
        absl::StrCat("estimated cost ", Amount(r.estimated_cost, r.currency),
                     " exceeds the job's max_cost ",
                     Amount(*r.max_cost, r.currency)));
  }
  if (r.monthly_budget.has_value()) {
    Money remaining = *r.monthly_budget - r.spent_this_month;
    if (r.estimated_cost > remaining) {
      return Over(
          r, BudgetDecision::Cause::kTeamBudget,
          absl::StrCat("estimated cost ", Amount(r.estimated_cost, r.currency),
                       " exceeds the remaining monthly budget of team \"",
                       r.team, "\": ", Amount(remaining, r.currency), " of ",
                       Amount(*r.monthly_budget, r.currency), " (",
                       Amount(r.spent_this_month, r.currency),
                       " spent this UTC month)"));
    }
  }
  return BudgetDecision{};
}

}  // namespace tupa::pricing

// Budget admission: a pure decision on whether a job may start, given what
// it is estimated to cost, its own max_cost, and its team's monthly budget.
//
// Rules, in order:
//   1. estimated_cost > max_cost (when the job sets one)   -> over, cause
//      kMaxCost;
//   2. estimated_cost > monthly_budget - spent_this_month  -> over, cause
//      kTeamBudget (only when the team has a budget);
//   3. otherwise Admit. Equal amounts are within the limit.
// A job over a limit is Rejected or Held per the catalog's budget_action;
// both carry reason kBudgetReason ("BUDGET") and a message naming max_cost
// or the team budget. A held job is re-decided by the caller later (a new
// month resets spend; a cheaper window lowers the estimate).
//
// Month boundaries are calendar months in UTC: [YYYY-MM-01T00:00:00Z,
// first of the next month), see BudgetMonth. `spent_this_month` is what the
// caller has recorded for the team in that month (finished allocations plus
// the cost so far of running ones); add the estimates of admitted but
// unfinished jobs too if budgets should reserve them.
//
// Pure functions; thread-safe.
#ifndef TUPA_SCHEDULER_PRICING_BUDGET_H_
#define TUPA_SCHEDULER_PRICING_BUDGET_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "scheduler/pricing/money.h"
#include "scheduler/pricing/price_catalog.h"

namespace tupa::pricing {

inline constexpr absl::string_view kBudgetReason = "BUDGET";

// The UTC calendar month holding an instant: [start, end).
struct BudgetMonth {
  absl::Time start;
  absl::Time end;
};
BudgetMonth MonthContaining(absl::Time t);

struct BudgetRequest {
  std::string team;                     // for the message
  std::string currency;                 // for the message, e.g. "USD"
  Money estimated_cost;                 // e.g. Estimate(.., max_runtime)
  std::optional<Money> max_cost;        // the job's own cap; nullopt = none
  std::optional<Money> monthly_budget;  // PriceCatalog::MonthlyBudget(team)
  Money spent_this_month;               // team spend in the current month
  BudgetAction action = BudgetAction::kReject;
};

struct BudgetDecision {
  enum class Verdict { kAdmit, kReject, kHold };
  enum class Cause { kNone, kMaxCost, kTeamBudget };
  Verdict verdict = Verdict::kAdmit;
  Cause cause = Cause::kNone;
  std::string reason;   // kBudgetReason unless admitted, else empty
  std::string message;  // human sentence naming max_cost or the budget
};

BudgetDecision DecideBudget(const BudgetRequest& request);

}  // namespace tupa::pricing

#endif  // TUPA_SCHEDULER_PRICING_BUDGET_H_

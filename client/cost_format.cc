#include "client/cost_format.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/money.h"
#include "client/output.h"
#include "common/quantity.h"

namespace tupa::client {
namespace {

constexpr const char* kCostGroups[] = {"team", "user", "gpu-type", "region",
                                       "day",  "job",  "array"};

std::string OrDash(absl::string_view s) {
  return s.empty() ? "-" : std::string(s);
}

std::string Day(const google::protobuf::Timestamp& ts) {
  const absl::Time t = ToTime(ts);
  if (t == absl::InfinitePast()) return "?";
  return absl::FormatTime("%Y-%m-%d", t, absl::UTCTimeZone());
}

// `part` as a percentage of `whole`, one decimal. Shares are not money: a
// double is precise enough, and nothing is summed from them.
std::string Share(absl::string_view part, absl::string_view whole) {
  double p, w;
  if (!absl::SimpleAtod(part, &p) || !absl::SimpleAtod(whole, &w) || w <= 0)
    return "-";
  return absl::StrFormat("%.1f%%", 100 * p / w);
}

}  // namespace

absl::StatusOr<std::string> ParseCostGroup(absl::string_view text) {
  std::string name = absl::AsciiStrToLower(text);
  if (name == "gpu_type" || name == "gputype") name = "gpu-type";
  for (const char* group : kCostGroups)
    if (name == group) return name;
  return absl::InvalidArgumentError(
      absl::StrCat("--by: bad value \"", text,
                   "\" (team, user, gpu-type, region, day, job or array)"));
}

absl::StatusOr<absl::Time> ParseTimeBound(absl::string_view text,
                                          absl::string_view flag,
                                          absl::Time now) {
  const std::string value(text);
  if (!value.empty() && (absl::ascii_isdigit(value[0]))) {
    // A duration ("7d") and a date ("2026-11-01") both start with a digit;
    // only a date or a time holds a '-' after it.
    if (value.find('-') == std::string::npos) {
      absl::StatusOr<absl::Duration> d = ParseDuration(value, flag);
      if (d.ok()) return now - *d;
    } else {
      absl::Time t;
      std::string error;
      if (value.size() == 10 &&
          absl::ParseTime("%Y-%m-%d", value, absl::UTCTimeZone(), &t, &error))
        return t;
      if (absl::ParseTime(absl::RFC3339_full, value, &t, &error)) return t;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      flag, ": bad value \"", text,
      "\" (a duration ago such as 7d or 12h, a date such as 2026-11-01, or an "
      "RFC 3339 time such as 2026-11-01T08:00:00Z)"));
}

std::string RenderCostReport(const v1::CostReport& report) {
  const std::string& currency = report.currency();
  std::string out = absl::StrCat(
      "cost by ", report.group_by().empty() ? "team" : report.group_by(), ", ",
      Day(report.since()), " .. ", Day(report.until()));
  if (!currency.empty()) absl::StrAppend(&out, " (", currency, ")");
  absl::StrAppend(&out, "\n");
  Table table({"KEY", "GPU-HOURS", "COST", "SHARE"});
  for (const v1::CostRow& row : report.rows()) {
    table.AddRow({OrDash(row.key()), FormatGpuHours(row.gpu_seconds()),
                  FormatMoney(row.cost(), currency),
                  Share(row.cost(), report.total())});
  }
  table.AddRow({"TOTAL", FormatGpuHours(report.total_gpu_seconds()),
                FormatMoney(report.total(), currency),
                report.rows_size() > 0 ? "100.0%" : ""});
  // A team's own report (not an admin's) carries no fleet idle cost.
  if (!report.idle_cost().empty()) {
    table.AddRow({"IDLE", FormatGpuHours(report.idle_gpu_seconds()),
                  FormatMoney(report.idle_cost(), currency), ""});
  }
  absl::StrAppend(&out, table.Render());
  // Shown once it reaches a cent.
  auto saved = RoundDecimal(report.idle_shutdown_saved(), 2);
  if (saved.ok() && *saved != "0.00")
    absl::StrAppend(&out, "saved by idle shutdown: ",
                    FormatMoney(report.idle_shutdown_saved(), currency), "\n");
  return out;
}

std::string RenderEstimates(const v1::EstimateJobResponse& response,
                            absl::Time now) {
  Table table({"REGION", "GPU-TYPE", "OFFERING", "PRICE/GPU-H", "COST",
               "DURATION", "START", "FINISH", "BASIS", "FITS-NOW"});
  // "in 2h05m", or "-" for an unset time.
  auto in = [now](const google::protobuf::Timestamp& at) -> std::string {
    const absl::Time t = ToTime(at);
    if (t == absl::InfinitePast()) return "-";
    return absl::StrCat("in ", HumanDuration(t - now));
  };
  for (const v1::Estimate& e : response.estimates()) {
    const absl::Duration duration = absl::Seconds(e.duration().seconds()) +
                                    absl::Nanoseconds(e.duration().nanos());
    table.AddRow(
        {OrDash(e.region()), OrDash(e.gpu_type()), OrDash(e.offering()),
         OrDash(FormatPrice(e.price_per_gpu_hour(), response.currency())),
         OrDash(FormatMoney(e.cost(), response.currency())),
         e.has_duration() ? HumanDuration(duration) : "-",
         e.fits_now() ? "now" : in(e.start_at()), in(e.finish_at()),
         OrDash(e.basis()), e.fits_now() ? "yes" : "no"});
  }
  return table.Render();
}

}  // namespace tupa::client

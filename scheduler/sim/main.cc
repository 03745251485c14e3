// tupa-sim: trace simulator over the scheduler's own placement library.
// Two modes, inflation (the FGD paper's experiment) and replay (time-driven,
// real durations); the flags are listed once, in Usage() below, which
// `tupa-sim` prints when run without arguments.
//   idle-compare: the same replay once per --idle-policies entry, one JSON
//   line each.
//   --pricing: a price catalog (scheduler/pricing/price_catalog.h); nodes
//   are priced as region x their GPU model x offering. --idle-policy: a
//   scheduler config with idle_shutdown / scale_up sections
//   (scheduler/idle/policy.h). Replay time 0 is --start (default Monday
//   2026-01-05 00:00 in Sao Paulo), so off-peak windows apply.
// Prints one JSON object on stdout. Exit 2 on bad usage, 1 on bad input.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "scheduler/idle/policy.h"
#include "scheduler/pricing/price_catalog.h"
#include "scheduler/sim/inflation.h"
#include "scheduler/sim/replay.h"
#include "scheduler/sim/traces.h"

namespace {

using Policy = tupa::scheduler::PlacementOptions::Policy;

int Usage(const std::string& why) {
  std::fprintf(
      stderr,
      "tupa-sim: %s\n"
      "usage: tupa-sim inflation --nodes N.csv --pods P.csv "
      "[--seeds 10] [--policy firstfit|bestfit|tupa|fgd|bestfit-k8s]\n"
      "         [--stop-ratio 1.3] [--protocol fgd|draw]\n"
      "       tupa-sim replay --jobs J.csv --nodes N.csv "
      "[--arrival-speedup X] [--policy P] [--tupa-mix arrived|pending]\n"
      "         [--arrival-jitter S] [--seed N]\n"
      "         [--node-fraction F] [--pricing F] [--idle-policy F] "
      "[--region R]\n"
      "         [--offering O] [--start RFC3339] [--boot-time 3m]\n"
      "         [--long-job 24h] (0: price breaks ties only) [--lone-job 1h]\n"
      "       tupa-sim idle-compare (the replay flags) "
      "--idle-policies timer:5m,timer:20m,cost[,FILE]\n"
      "  --idle-policy: cost | timer:DURATION | none | a scheduler config "
      "file;\n"
      "    cost and timer take :up=DURATION, the scale-up delay (cost: 0s, "
      "timer: 2m)\n",
      why.c_str());
  return 2;
}

bool ParsePolicy(const std::string& s, Policy* p) {
  if (s == "firstfit")
    *p = Policy::kFirstFit;
  else if (s == "bestfit")
    *p = Policy::kBestFit;
  else if (s == "tupa")
    *p = Policy::kTupa;
  else if (s == "fgd")
    *p = Policy::kFgd;
  else if (s == "bestfit-k8s")
    *p = Policy::kBestFitK8s;
  else
    return false;
  return true;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "tupa-sim: %s\n", s.ToString().c_str());
  return 1;
}

int Inflation(std::map<std::string, std::string>& flags, Policy policy) {
  int seeds = 10;
  double stop = 1.3;
  if (flags.count("seeds") &&
      (!absl::SimpleAtoi(flags["seeds"], &seeds) || seeds < 1)) {
    return Usage("--seeds must be a positive integer");
  }
  if (flags.count("stop-ratio") &&
      (!absl::SimpleAtod(flags["stop-ratio"], &stop) || !(stop > 0) ||
       stop > 100)) {  // also refuses NaN and inf
    return Usage("--stop-ratio must be a number in (0, 100]");
  }
  auto protocol = tupa::sim::InflationProtocol::kFgdSimulator;
  if (flags.count("protocol")) {
    if (flags["protocol"] == "draw") {
      protocol = tupa::sim::InflationProtocol::kDraw;
    } else if (flags["protocol"] != "fgd") {
      return Usage("--protocol must be fgd or draw");
    }
  }
  if (!flags.count("nodes") || !flags.count("pods")) {
    return Usage("inflation needs --nodes and --pods");
  }
  auto nodes = tupa::sim::LoadNodes(flags["nodes"]);
  if (!nodes.ok()) return Fail(nodes.status());
  auto pods = tupa::sim::LoadPods(flags["pods"]);
  if (!pods.ok()) return Fail(pods.status());
  double ratio = 0, unalloc = 0;
  std::string per_seed;
  for (int s = 0; s < seeds; ++s) {
    auto r =
        tupa::sim::RunInflation(*nodes, *pods, policy, 42 + s, stop, protocol);
    ratio += r.alloc_ratio;
    unalloc += r.unallocated_gpus;
    per_seed += absl::StrFormat("%s%.4f", s ? ", " : "", 100 * r.alloc_ratio);
  }
  std::printf(
      "{\"mode\": \"inflation\", \"policy\": \"%s\", \"pods\": \"%s\", "
      "\"seeds\": %d, \"gpu_alloc_pct\": %.2f, \"unallocated_gpus\": %.1f, "
      "\"per_seed_pct\": [%s]}\n",
      flags["policy"].c_str(), flags["pods"].c_str(), seeds,
      100 * ratio / seeds, unalloc / seeds, per_seed.c_str());
  return 0;
}

// When --`flag` is given, reads that file and parses its text with
// `parse` into `*out`. Errors name the flag (unreadable) or the file.
template <typename T, typename Parse>
absl::Status ParseFileFlag(std::map<std::string, std::string>& flags,
                           const std::string& flag, Parse parse,
                           std::optional<T>* out) {
  if (!flags.count(flag)) return absl::OkStatus();
  const std::string& path = flags[flag];
  std::optional<std::string> text = tupa::ReadWholeFile(path);
  if (!text) return absl::NotFoundError("--" + flag + ": cannot read " + path);
  absl::StatusOr<T> value = parse(*text);
  if (!value.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", value.status().message()));
  }
  *out = *std::move(value);
  return absl::OkStatus();
}

// An idle policy named on the command line (tupa::scheduler::idle::
// NamedIdlePolicy: "cost", "timer:5m", "timer:5m:up=0s"), "none", or a
// scheduler config file with idle_shutdown / scale_up sections. Errors as
// ParseFleetFlags'.
absl::Status ParseIdlePolicySpec(const std::string& spec,
                                 tupa::sim::FleetOptions* fleet) {
  namespace idle = tupa::scheduler::idle;
  fleet->idle.reset();
  if (spec == "none") return absl::OkStatus();
  if (spec == "cost" || absl::StartsWith(spec, "cost:") ||
      absl::StartsWith(spec, "timer:")) {
    absl::StatusOr<idle::IdlePolicy> p =
        idle::NamedIdlePolicy(spec, fleet->boot_time);
    if (!p.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("--idle-policy: ", p.status().message()));
    fleet->idle = *std::move(p);
    return absl::OkStatus();
  }
  std::map<std::string, std::string> file = {{"idle-policy", spec}};
  return ParseFileFlag(
      file, "idle-policy",
      [](const std::string& t) { return idle::ParseIdlePolicyYaml(t); },
      &fleet->idle);
}

// The money and idle-policy flags of replay. InvalidArgument starting with
// "--" for bad usage; errors inside a file name the file.
absl::Status ParseFleetFlags(std::map<std::string, std::string>& flags,
                             tupa::sim::FleetOptions* fleet) {
  absl::Status s = ParseFileFlag(
      flags, "pricing",
      [](const std::string& t) {
        return tupa::pricing::PriceCatalog::Parse(t);
      },
      &fleet->pricing);
  if (!s.ok()) return s;
  if (flags.count("region")) fleet->region = flags["region"];
  if (flags.count("offering")) fleet->offering = flags["offering"];
  if (flags.count("start")) {
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, flags["start"], &fleet->epoch,
                         &err)) {
      return absl::InvalidArgumentError("--start: not an RFC 3339 time: " +
                                        flags["start"]);
    }
  }
  if (flags.count("boot-time") &&
      (!absl::ParseDuration(flags["boot-time"], &fleet->boot_time) ||
       fleet->boot_time < absl::ZeroDuration())) {
    return absl::InvalidArgumentError(
        "--boot-time: not a non-negative duration (e.g. 3m): " +
        flags["boot-time"]);
  }
  if (flags.count("idle-policy")) {
    return ParseIdlePolicySpec(flags["idle-policy"], fleet);
  }
  return absl::OkStatus();
}

int ReplayOnce(std::map<std::string, std::string>& flags,
               const std::vector<tupa::scheduler::NodeView>& nodes,
               const std::vector<tupa::sim::PodSpec>& jobs,
               const tupa::sim::ReplayOptions& o, const std::string& spec);

// Reads the non-negative duration flag `name` into `*seconds` when given;
// false after printing the usage when it is not one.
bool DurationFlag(std::map<std::string, std::string>& flags,
                  const std::string& name, const std::string& example,
                  int64_t* seconds) {
  if (!flags.count(name)) return true;
  absl::Duration d;
  if (!absl::ParseDuration(flags[name], &d) || d < absl::ZeroDuration()) {
    Usage("--" + name + ": not a non-negative duration (e.g. " + example +
          "): " + flags[name]);
    return false;
  }
  *seconds = absl::ToInt64Seconds(d);
  return true;
}

// replay, or idle-compare (`policies`: one replay per idle policy spec,
// the same trace, nodes and flags, one JSON line each).
int Replay(std::map<std::string, std::string>& flags, Policy policy,
           const std::vector<std::string>& policies) {
  tupa::sim::ReplayOptions o;
  o.policy = policy;
  if (flags.count("arrival-speedup") &&
      (!absl::SimpleAtod(flags["arrival-speedup"], &o.arrival_speedup) ||
       o.arrival_speedup <= 0)) {
    return Usage("--arrival-speedup must be positive");
  }
  if (flags.count("arrival-jitter") &&
      (!absl::SimpleAtod(flags["arrival-jitter"], &o.arrival_jitter_s) ||
       !(o.arrival_jitter_s >= 0))) {
    return Usage("--arrival-jitter must be a non-negative number of seconds");
  }
  if (flags.count("seed") && !absl::SimpleAtoi(flags["seed"], &o.seed)) {
    return Usage("--seed must be a non-negative integer");
  }
  if (!DurationFlag(flags, "long-job", "24h", &o.long_job_runtime_s) ||
      !DurationFlag(flags, "lone-job", "1h", &o.lone_job_runtime_s)) {
    return 2;
  }
  if (flags.count("tupa-mix")) {
    if (flags["tupa-mix"] == "arrived") {
      o.mix_from_arrivals = true;
    } else if (flags["tupa-mix"] == "pending") {
      o.mix_from_arrivals = false;
    } else {
      return Usage("--tupa-mix must be arrived or pending");
    }
  }
  if (!flags.count("nodes") || !flags.count("jobs")) {
    return Usage("replay needs --jobs and --nodes");
  }
  if (absl::Status s = ParseFleetFlags(flags, &o.fleet); !s.ok()) {
    return s.code() == absl::StatusCode::kInvalidArgument &&
                   !absl::StartsWith(s.message(), "--")
               ? Fail(s)
               : Usage(std::string(s.message()));
  }
  auto nodes = tupa::sim::LoadNodes(flags["nodes"]);
  if (!nodes.ok()) return Fail(nodes.status());
  double node_fraction = 1;
  if (flags.count("node-fraction") &&
      (!absl::SimpleAtod(flags["node-fraction"], &node_fraction) ||
       !(node_fraction > 0 && node_fraction <= 1))) {
    return Usage("--node-fraction must be in (0, 1]");
  }
  if (node_fraction < 1) *nodes = tupa::sim::SampleNodes(*nodes, node_fraction);
  auto jobs = tupa::sim::LoadPods(flags["jobs"]);
  if (!jobs.ok()) return Fail(jobs.status());
  for (const std::string& spec : policies) {
    if (!spec.empty()) {
      absl::Status s = ParseIdlePolicySpec(spec, &o.fleet);
      if (!s.ok()) return Fail(s);
    }
    if (int rc = ReplayOnce(flags, *nodes, *jobs, o, spec); rc != 0) return rc;
  }
  return 0;
}

// One replay, printed as one JSON line (with "idle_policy": `spec` when
// not empty).
int ReplayOnce(std::map<std::string, std::string>& flags,
               const std::vector<tupa::scheduler::NodeView>& nodes,
               const std::vector<tupa::sim::PodSpec>& jobs,
               const tupa::sim::ReplayOptions& o, const std::string& spec) {
  auto replay = tupa::sim::RunReplay(nodes, jobs, o);
  if (!replay.ok()) return Fail(replay.status());
  const tupa::sim::ReplayResult& r = *replay;
  std::string extra = absl::StrFormat(
      ", \"unstarted\": %d, \"shutdowns\": %d, \"boots\": %d, "
      "\"node_hours\": %.1f",
      r.unstarted, r.fleet.shutdowns, r.fleet.boots, r.fleet.node_hours);
  if (!spec.empty())
    absl::StrAppendFormat(&extra, ", \"idle_policy\": \"%s\"", spec);
  if (!r.fleet.currency.empty()) {
    absl::StrAppendFormat(
        &extra,
        ", \"currency\": \"%s\", \"cost\": %s, \"fleet_cost\": %s, "
        "\"idle_cost\": %s",
        r.fleet.currency, r.fleet.job_cost.RoundTo(2).ToString(),
        r.fleet.fleet_cost.RoundTo(2).ToString(),
        r.fleet.idle_cost.RoundTo(2).ToString());
  }
  std::printf(
      "{\"mode\": \"replay\", \"policy\": \"%s\", \"arrival_speedup\": %g, "
      "\"arrival_jitter_s\": %g, \"seed\": %llu, \"nodes\": %zu, "
      "\"jobs\": %d, \"started\": %d, \"never_fit\": %d, "
      "\"avg_jct_s\": %.1f, \"p95_jct_s\": %.1f, \"avg_wait_s\": %.1f, "
      "\"p95_wait_s\": %.1f, \"makespan_s\": %.1f, "
      "\"gpu_utilisation\": %.4f, \"arrival_window_utilisation\": %.4f, "
      "\"passes\": %d%s}\n",
      flags["policy"].c_str(), o.arrival_speedup, o.arrival_jitter_s,
      static_cast<unsigned long long>(o.seed), nodes.size(), r.jobs, r.finished,
      r.never_fit, r.avg_jct_s, r.p95_jct_s, r.avg_wait_s, r.p95_wait_s,
      r.makespan_s, r.gpu_utilisation, r.arrival_window_utilisation, r.passes,
      extra.c_str());
  // idle-compare prints a line per policy as each ends, also into a pipe.
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage("missing mode");
  const std::string mode = argv[1];
  std::map<std::string, std::string> flags = {{"policy", "tupa"}};
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) return Usage("unexpected argument " + a);
    a = a.substr(2);
    const size_t eq = a.find('=');
    if (eq != std::string::npos) {
      flags[a.substr(0, eq)] = a.substr(eq + 1);
    } else if (i + 1 < argc) {
      flags[a] = argv[++i];
    } else {
      return Usage("flag --" + a + " needs a value");
    }
  }
  Policy policy;
  if (!ParsePolicy(flags["policy"], &policy)) {
    return Usage("unknown --policy " + flags["policy"]);
  }
  if (mode == "inflation") return Inflation(flags, policy);
  if (mode == "replay") return Replay(flags, policy, {""});
  if (mode == "idle-compare") {
    if (!flags.count("idle-policies"))
      return Usage("idle-compare needs --idle-policies P1,P2,...");
    std::vector<std::string> specs =
        absl::StrSplit(flags["idle-policies"], ',', absl::SkipEmpty());
    if (specs.empty()) return Usage("--idle-policies is empty");
    return Replay(flags, policy, specs);
  }
  return Usage("unknown mode " + mode);
}

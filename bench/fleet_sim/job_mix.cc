#include "bench/fleet_sim/job_mix.h"

#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tupa::fleet_sim {
namespace {

constexpr char kDefaultMix[] = "1:30,2:15,4:15,8:15,gang:5,0.5:20";
// The GPU requests of the Alibaba openb pods
// (../shared/traces/openb/openb_pod_list_default.csv, 8,152 pods: 3,911
// ask 1 GPU, 3,078 a share of one, 1,088 none, 44 ask 8, 16 ask 2, 15 ask
// 4), plus a few 2x8 gangs (the trace has none): 0.75 GPU per job.
constexpr char kOpenbMix[] = "1:3911,0.5:3078,cpu:1088,8:44,2:16,4:15,gang:10";

bool KnownKind(const std::string& k) {
  return k == "1" || k == "2" || k == "4" || k == "8" || k == "0.5" ||
         k == "gang" || k == "none" || k == "cpu";
}

}  // namespace

absl::StatusOr<JobMix> JobMix::Parse(const JobMixOptions& options) {
  if (options.runtime_min_ms < 0 ||
      options.runtime_max_ms < options.runtime_min_ms)
    return absl::InvalidArgumentError(
        "--runtime-ms: want MIN-MAX with 0 <= MIN <= MAX");
  const std::string text = options.mix == "default" || options.mix.empty()
                               ? kDefaultMix
                           : options.mix == "openb" ? kOpenbMix
                                                    : options.mix;
  std::vector<Kind> kinds;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    std::vector<std::string> parts = absl::StrSplit(entry, ':');
    Kind k{parts[0], 1};
    if (parts.size() > 2 || !KnownKind(k.name) ||
        (parts.size() == 2 &&
         (!absl::SimpleAtod(parts[1], &k.weight) || k.weight <= 0)))
      return absl::InvalidArgumentError(absl::StrCat(
          "--mix: bad entry \"", entry,
          "\" (want KIND[:WEIGHT], KIND one of 1 2 4 8 0.5 gang none cpu)"));
    kinds.push_back(k);
  }
  return JobMix(options, std::move(kinds));
}

JobMix::JobMix(JobMixOptions options, std::vector<Kind> kinds)
    : options_(std::move(options)), kinds_(std::move(kinds)) {
  for (const Kind& k : kinds_) total_weight_ += k.weight;
}

v1::JobSpec JobMix::Spec(long index) const {
  std::mt19937_64 rng(0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(index));
  double pick = std::uniform_real_distribution<double>(0, total_weight_)(rng);
  const Kind* kind = &kinds_.back();
  for (const Kind& k : kinds_) {
    if (pick < k.weight) {
      kind = &k;
      break;
    }
    pick -= k.weight;
  }
  const int runtime = std::uniform_int_distribution<int>(
      options_.runtime_min_ms, options_.runtime_max_ms)(rng);
  v1::JobSpec spec;
  spec.set_name(absl::StrCat("fleet-", index));
  spec.set_team(options_.team);
  spec.set_retries(options_.retries);
  spec.add_command("true");
  (*spec.mutable_env())["TUPA_SIM_RUNTIME_MS"] = absl::StrCat(runtime);
  v1::Resources* r = spec.mutable_resources();
  if (kind->name == "gang") {
    r->set_gpus(8);
    r->set_nodes(2);
  } else if (kind->name == "cpu") {
    r->set_cpu(1);
  } else if (kind->name != "none") {
    double gpus = 0;
    absl::SimpleAtod(kind->name, &gpus);
    r->set_gpus(gpus);
  }
  return spec;
}

}  // namespace tupa::fleet_sim

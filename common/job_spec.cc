#include "common/job_spec.h"

#include <algorithm>
#include <cmath>

#include "common/train_defaults.h"

namespace tupa {

void ApplyJobSpecDefaults(v1::JobSpec& spec) {
  namespace d = train_defaults;
  auto* r = spec.mutable_resources();
  if (r->nodes() == 0) r->set_nodes(1);
  if (spec.launch() == v1::LAUNCH_MODE_UNSPECIFIED)
    spec.set_launch(v1::LAUNCH_MODE_PER_GPU);
  // A job that asks for neither GPUs nor CPU still uses a core per rank:
  // without it, any number of them fit one worker (DESIGN §5).
  if (r->gpus() == 0 && r->cpu() == 0) r->set_cpu(RanksPerNode(spec));
  if (spec.has_train()) {
    auto* t = spec.mutable_train();
    if (t->model().type().empty()) t->mutable_model()->set_type(d::kModelType);
    if (t->batch_size() == 0) t->set_batch_size(d::kBatchSize);
    if (t->epochs() == 0 && t->steps() == 0) t->set_epochs(d::kEpochs);
    if (t->precision().empty()) t->set_precision(d::kPrecision);
    auto* o = t->mutable_optimizer();
    if (o->name().empty()) o->set_name(d::kOptimizer);
    if (o->lr() == 0) o->set_lr(d::kLr);
  }
}

int RanksPerNode(const v1::JobSpec& spec) {
  if (!spec.has_train() && spec.launch() == v1::LAUNCH_MODE_PER_NODE) return 1;
  return std::max(1, static_cast<int>(std::ceil(spec.resources().gpus())));
}

double TotalGpus(const v1::JobSpec& spec) {
  return spec.resources().gpus() * std::max(1, spec.resources().nodes());
}

}  // namespace tupa

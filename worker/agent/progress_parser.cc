#include "worker/agent/progress_parser.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace tupa::worker {

std::vector<v1::Progress> ExtractProgress(std::string& buffer,
                                          const std::string& data) {
  std::vector<v1::Progress> out;
  buffer += data;
  size_t start = 0, nl;
  while ((nl = buffer.find('\n', start)) != std::string::npos) {
    std::string line = buffer.substr(start, nl - start);
    start = nl + 1;
    if (line.empty() || line[0] != '{') continue;
    google::protobuf::Struct obj;
    if (!google::protobuf::util::JsonStringToMessage(line, &obj).ok()) continue;
    const auto& f = obj.fields();
    auto num = [&](const char* key, double* v) {
      auto it = f.find(key);
      if (it == f.end() || !it->second.has_number_value()) return false;
      *v = it->second.number_value();
      return true;
    };
    v1::Progress p;
    double v;
    bool any = false;
    if (num("step", &v) || num("steps", &v)) {
      p.set_step(static_cast<int64_t>(v));
      any = true;
    }
    if (num("epoch", &v)) p.set_epoch(static_cast<int32_t>(v));
    if (num("loss", &v) || num("final_loss", &v)) p.set_loss(v);
    if (num("samples_per_s", &v)) p.set_samples_per_s(v);
    // Tensor-parallel x data-parallel layout and per-rank parameter memory
    // (tupa-train, DESIGN §7).
    if (auto it = f.find("layout");
        it != f.end() && it->second.has_string_value()) {
      p.set_layout(it->second.string_value());
    }
    if (num("param_bytes", &v)) {
      p.set_param_bytes_per_rank(static_cast<int64_t>(v));
    }
    if (num("total_steps", &v)) p.set_total_steps(static_cast<int64_t>(v));
    if (num("total_epochs", &v)) p.set_total_epochs(static_cast<int32_t>(v));
    if (num("test_accuracy", &v)) {
      p.set_test_accuracy(v);
      any = true;
    }
    if (any) out.push_back(std::move(p));
  }
  buffer.erase(0, start);
  if (buffer.size() > (1 << 20)) buffer.clear();  // no newline in 1 MiB
  return out;
}

}  // namespace tupa::worker

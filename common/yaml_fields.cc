#include "common/yaml_fields.h"

#include <yaml-cpp/eventhandler.h>

#include <cmath>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tupa::yaml {
namespace {

// Tells whether each document of a YAML stream holds anything, without
// building it. Not YAML::LoadAll: yaml-cpp 0.7's loops forever on some
// malformed input, returning an empty root each turn (fixed upstream in
// yaml-cpp PR 1319); found by fuzz_job_spec.
class DocumentProbe : public YAML::EventHandler {
 public:
  bool empty() const { return events_ == 0 || (events_ == 1 && null_root_); }

  void OnDocumentStart(const YAML::Mark&) override {
    events_ = 0;
    null_root_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {
    null_root_ = events_++ == 0;
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { ++events_; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    ++events_;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    ++events_;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    ++events_;
  }
  void OnMapEnd() override {}

 private:
  int events_ = 0;
  bool null_root_ = false;
};

}  // namespace

absl::Status FieldError(const Path& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

Path Join(const Path& parent, absl::string_view key) {
  return parent.empty() ? std::string(key) : absl::StrCat(parent, ".", key);
}

Path Index(const Path& parent, size_t i) {
  return absl::StrCat(parent, "[", i, "]");
}

absl::Status ExpectMap(const YAML::Node& node, const Path& path) {
  if (!node.IsMap()) return FieldError(path, "must be a mapping");
  return absl::OkStatus();
}

absl::Status ExpectSequence(const YAML::Node& node, const Path& path) {
  if (!node.IsSequence()) return FieldError(path, "must be a list");
  return absl::OkStatus();
}

absl::StatusOr<std::string> Key(const YAML::Node& key, const Path& path,
                                absl::string_view root_name) {
  if (!key.IsScalar())
    return FieldError(path.empty() ? Path(root_name) : path,
                      "keys must be strings");
  return key.Scalar();
}

absl::Status CheckKeys(const YAML::Node& node, const Path& path,
                       const std::set<std::string>& known,
                       absl::string_view root_name) {
  if (!node.IsMap())
    return FieldError(path.empty() ? Path(root_name) : path,
                      "must be a mapping");
  std::set<std::string> seen;
  for (const auto& kv : node) {
    ASSIGN_OR_RETURN(std::string key, Key(kv.first, path, root_name));
    // yaml-cpp keeps a repeated key; one of the values would win silently.
    if (!seen.insert(key).second)
      return FieldError(Join(path, key), "given twice");
    if (!known.count(key)) {
      return FieldError(Join(path, key),
                        absl::StrCat("unknown field (known: ",
                                     absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Scalar(const YAML::Node& node, const Path& path) {
  if (!node.IsScalar()) return FieldError(path, "must be a scalar value");
  return node.Scalar();
}

absl::StatusOr<std::string> NonEmpty(const YAML::Node& node, const Path& path) {
  ASSIGN_OR_RETURN(std::string s, Scalar(node, path));
  if (s.empty()) return FieldError(path, "must not be empty");
  return s;
}

absl::StatusOr<int64_t> Int(const YAML::Node& node, const Path& path) {
  ASSIGN_OR_RETURN(std::string s, Scalar(node, path));
  int64_t v;
  if (!absl::SimpleAtoi(s, &v))
    return FieldError(path, absl::StrCat("bad integer \"", s, "\""));
  return v;
}

absl::StatusOr<int32_t> Int32(const YAML::Node& node, const Path& path) {
  ASSIGN_OR_RETURN(int64_t v, Int(node, path));
  if (v < INT32_MIN || v > INT32_MAX) return FieldError(path, "out of range");
  return static_cast<int32_t>(v);
}

absl::StatusOr<double> Number(const YAML::Node& node, const Path& path) {
  ASSIGN_OR_RETURN(std::string s, Scalar(node, path));
  double v;
  if (!absl::SimpleAtod(s, &v) || !std::isfinite(v))
    return FieldError(path, absl::StrCat("bad number \"", s, "\""));
  return v;
}

absl::StatusOr<std::vector<std::string>> StringList(const YAML::Node& node,
                                                    const Path& path) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    out.push_back(node.Scalar());
    return out;
  }
  RETURN_IF_ERROR(ExpectSequence(node, path));
  for (size_t i = 0; i < node.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s, Scalar(node[i], Index(path, i)));
    out.push_back(std::move(s));
  }
  return out;
}

absl::Status StringMap(const YAML::Node& node, const Path& path,
                       google::protobuf::Map<std::string, std::string>* out) {
  RETURN_IF_ERROR(ExpectMap(node, path));
  for (const auto& kv : node) {
    ASSIGN_OR_RETURN(std::string key, Key(kv.first, path));
    if (out->count(key)) return FieldError(Join(path, key), "given twice");
    ASSIGN_OR_RETURN(std::string value, Scalar(kv.second, Join(path, key)));
    (*out)[key] = value;
  }
  return absl::OkStatus();
}

// Stops at the first empty document after the full ones, as upstream's fix
// does: a stray trailing "---" carries nothing.
int CountDocuments(const std::string& yaml) {
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  DocumentProbe probe;
  int documents = 0;
  while (documents < 2 && parser.HandleNextDocument(probe)) {
    if (probe.empty()) break;
    ++documents;
  }
  return documents;
}

}  // namespace tupa::yaml

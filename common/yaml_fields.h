// Reading typed fields out of a parsed YAML document, with errors that name
// the field: the one place the job spec, the price catalog, the idle policy
// and the scheduler's config file take their YAML helpers from.
//
// A path is the dotted name of a field ("resources.gpus", "prices[2]");
// the empty path is the document root. Every error is InvalidArgument and
// its message starts with the path, e.g. "resources.gpus: bad number
// \"x\"". Pure functions; thread-safe. yaml-cpp may still throw
// YAML::Exception on malformed nodes: callers catch it where they load.
#ifndef TUPA_COMMON_YAML_FIELDS_H_
#define TUPA_COMMON_YAML_FIELDS_H_

#include <google/protobuf/map.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tupa::yaml {

using Path = std::string;

// InvalidArgument "PATH: WHAT".
absl::Status FieldError(const Path& path, absl::string_view what);

// "parent.key" ("key" under the root) and "parent[i]".
Path Join(const Path& parent, absl::string_view key);
Path Index(const Path& parent, size_t i);

absl::Status ExpectMap(const YAML::Node& node, const Path& path);
absl::Status ExpectSequence(const YAML::Node& node, const Path& path);

// The text of a mapping key; "PATH: keys must be strings" when it is a
// list or a mapping (`root_name` names the root, whose path is empty).
absl::StatusOr<std::string> Key(const YAML::Node& key, const Path& path,
                                absl::string_view root_name = "spec");

// A mapping whose keys are all strings in `known`, none given twice.
absl::Status CheckKeys(const YAML::Node& node, const Path& path,
                       const std::set<std::string>& known,
                       absl::string_view root_name = "spec");

absl::StatusOr<std::string> Scalar(const YAML::Node& node, const Path& path);
absl::StatusOr<std::string> NonEmpty(const YAML::Node& node, const Path& path);
absl::StatusOr<int64_t> Int(const YAML::Node& node, const Path& path);
absl::StatusOr<int32_t> Int32(const YAML::Node& node, const Path& path);
// A finite number.
absl::StatusOr<double> Number(const YAML::Node& node, const Path& path);

// A list of scalars; a single scalar is a list of one.
absl::StatusOr<std::vector<std::string>> StringList(const YAML::Node& node,
                                                    const Path& path);

// A mapping of string to string into `out`; a key given twice is an error.
absl::Status StringMap(const YAML::Node& node, const Path& path,
                       google::protobuf::Map<std::string, std::string>* out);

// The documents of a YAML stream that hold something, counting up to 2
// (all a one-document format needs to know). Does not build them.
// Throws YAML::Exception on malformed text.
int CountDocuments(const std::string& yaml);

}  // namespace tupa::yaml

#endif  // TUPA_COMMON_YAML_FIELDS_H_

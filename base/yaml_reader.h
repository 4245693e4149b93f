// YamlReader: typed, located access to YAML files (the simulator's specs, the scheduler's config).
//
// What it is: a thin layer over yaml-cpp that turns every problem into an InvalidArgument
// status of the form "FILE:LINE:COLUMN: FIELD: what is wrong", where FIELD is the dotted path
// of the value in the document (e.g. "nodeGroups[2].topology.preset"). Unknown keys in a map
// are errors, so a typo never passes silently.
//
// Thread-safety: immutable after construction; yaml-cpp nodes passed in must not be shared
// across threads.
#ifndef HUYGENS_BASE_YAML_READER_H_
#define HUYGENS_BASE_YAML_READER_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/status.h"
#include "yaml-cpp/yaml.h"

namespace huygens {

class YamlReader {
 public:
  explicit YamlReader(std::string file_name) : file_(std::move(file_name)) {}

  const std::string& FileName() const { return file_; }

  // Parses a whole document. A syntax error names the file, line and column.
  absl::StatusOr<YAML::Node> Load(std::string_view text) const;

  // InvalidArgument "FILE:LINE:COL: FIELD: message", located at `at` (or at the file when `at`
  // has no position).
  absl::Status Error(const YAML::Node& at, std::string_view field, std::string_view message) const;

  // `node` must be a map whose keys are all in `allowed`.
  absl::Status CheckMap(const YAML::Node& node, std::string_view field,
                        std::initializer_list<std::string_view> allowed) const;
  // `node` must be a sequence.
  absl::Status CheckSequence(const YAML::Node& node, std::string_view field) const;

  // Scalars. REQUIRES: node is defined (callers test `if (auto v = map["k"])`).
  absl::StatusOr<std::string> String(const YAML::Node& node, std::string_view field) const;
  absl::StatusOr<bool> Bool(const YAML::Node& node, std::string_view field) const;
  // An integer in [min, max].
  absl::StatusOr<int64_t> Int(const YAML::Node& node, std::string_view field, int64_t min,
                              int64_t max) const;
  // A finite number >= min.
  absl::StatusOr<double> Number(const YAML::Node& node, std::string_view field, double min) const;
  absl::StatusOr<int64_t> Cpu(const YAML::Node& node, std::string_view field) const;       // millicores
  absl::StatusOr<int64_t> Memory(const YAML::Node& node, std::string_view field) const;    // bytes
  absl::StatusOr<int64_t> Duration(const YAML::Node& node, std::string_view field) const;  // micros
  // A map of string to string (labels, node selectors).
  absl::StatusOr<std::map<std::string, std::string>> StringMap(const YAML::Node& node,
                                                               std::string_view field) const;

 private:
  std::string file_;
};

}  // namespace huygens

#endif  // HUYGENS_BASE_YAML_READER_H_

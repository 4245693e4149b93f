#include "base/yaml_reader.h"

#include <cmath>
#include <string>

#include "base/duration.h"
#include "base/quantity.h"
#include "fmt/format.h"

namespace huygens {
namespace {

const char* KindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "empty";
    case YAML::NodeType::Undefined: break;
  }
  return "missing";
}

}  // namespace

absl::StatusOr<YAML::Node> YamlReader::Load(std::string_view text) const {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(fmt::format("{}:{}:{}: YAML syntax error: {}", file_,
                                                  e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

absl::Status YamlReader::Error(const YAML::Node& at, std::string_view field,
                               std::string_view message) const {
  const YAML::Mark mark = at.IsDefined() ? at.Mark() : YAML::Mark::null_mark();
  if (mark.is_null()) {
    return absl::InvalidArgumentError(fmt::format("{}: {}: {}", file_, field, message));
  }
  return absl::InvalidArgumentError(
      fmt::format("{}:{}:{}: {}: {}", file_, mark.line + 1, mark.column + 1, field, message));
}

absl::Status YamlReader::CheckMap(const YAML::Node& node, std::string_view field,
                                  std::initializer_list<std::string_view> allowed) const {
  if (!node.IsMap()) {
    return Error(node, field, fmt::format("expected a map, found {}", KindName(node)));
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (!known) {
      std::string list;
      for (std::string_view a : allowed) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
      return Error(kv.first, fmt::format("{}.{}", field, key),
                   fmt::format("unknown field (known fields: {})", list));
    }
  }
  return absl::OkStatus();
}

absl::Status YamlReader::CheckSequence(const YAML::Node& node, std::string_view field) const {
  if (!node.IsSequence()) {
    return Error(node, field, fmt::format("expected a list, found {}", KindName(node)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> YamlReader::String(const YAML::Node& node,
                                               std::string_view field) const {
  if (!node.IsScalar()) {
    return Error(node, field, fmt::format("expected a scalar, found {}", KindName(node)));
  }
  return node.Scalar();
}

absl::StatusOr<bool> YamlReader::Bool(const YAML::Node& node, std::string_view field) const {
  if (!node.IsScalar()) return Error(node, field, "expected true or false");
  const std::string& s = node.Scalar();
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return Error(node, field, fmt::format("expected true or false, found {:?}", s));
}

absl::StatusOr<int64_t> YamlReader::Int(const YAML::Node& node, std::string_view field,
                                        int64_t min, int64_t max) const {
  if (!node.IsScalar()) {
    return Error(node, field, fmt::format("expected an integer, found {}", KindName(node)));
  }
  const std::string& s = node.Scalar();
  int64_t value = 0;
  size_t used = 0;
  try {
    value = std::stoll(s, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size()) {
    return Error(node, field, fmt::format("expected an integer, found {:?}", s));
  }
  if (value < min || value > max) {
    return Error(node, field, fmt::format("{} is out of range [{}, {}]", value, min, max));
  }
  return value;
}

absl::StatusOr<double> YamlReader::Number(const YAML::Node& node, std::string_view field,
                                          double min) const {
  if (!node.IsScalar()) {
    return Error(node, field, fmt::format("expected a number, found {}", KindName(node)));
  }
  const std::string& s = node.Scalar();
  double value = 0;
  size_t used = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size() || !std::isfinite(value)) {
    return Error(node, field, fmt::format("expected a number, found {:?}", s));
  }
  if (value < min) return Error(node, field, fmt::format("{} is below the minimum {}", s, min));
  return value;
}

absl::StatusOr<int64_t> YamlReader::Cpu(const YAML::Node& node, std::string_view field) const {
  if (!node.IsScalar()) return Error(node, field, "expected a CPU quantity such as 4 or 500m");
  auto v = ParseCpuMilli(node.Scalar());
  if (!v.ok()) return Error(node, field, Msg(v.status()));
  return *v;
}

absl::StatusOr<int64_t> YamlReader::Memory(const YAML::Node& node, std::string_view field) const {
  if (!node.IsScalar()) return Error(node, field, "expected a memory quantity such as 16Gi");
  auto v = ParseMemoryBytes(node.Scalar());
  if (!v.ok()) return Error(node, field, Msg(v.status()));
  return *v;
}

absl::StatusOr<int64_t> YamlReader::Duration(const YAML::Node& node,
                                             std::string_view field) const {
  if (!node.IsScalar()) return Error(node, field, "expected a duration such as 90s or 10m");
  auto v = ParseDuration(node.Scalar());
  if (!v.ok()) return Error(node, field, Msg(v.status()));
  return *v;
}

absl::StatusOr<std::map<std::string, std::string>> YamlReader::StringMap(
    const YAML::Node& node, std::string_view field) const {
  if (!node.IsMap()) {
    return Error(node, field, fmt::format("expected a map, found {}", KindName(node)));
  }
  std::map<std::string, std::string> out;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    auto value = String(kv.second, fmt::format("{}.{}", field, key));
    if (!value.ok()) return value.status();
    out[key] = *value;
  }
  return out;
}

}  // namespace huygens

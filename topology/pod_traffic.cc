#include "topology/pod_traffic.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "base/json_fields.h"
#include "base/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace huygens {
namespace {

using json_fields::Child;
using json_fields::Element;
using json_fields::FieldError;
using json_fields::Find;
using nlohmann::json;

// A required member of object `obj` at `path`.
absl::StatusOr<const json*> Required(const json& obj, std::string_view path, std::string_view key) {
  const json* value = Find(obj, key);
  if (value == nullptr) return FieldError(Child(path, key), "missing");
  return value;
}

// A pod name "<namespace>/<name>": one '/', both parts non-empty.
absl::StatusOr<std::string> ReadPodName(const json& obj, std::string_view path,
                                        std::string_view key) {
  HUYGENS_ASSIGN_OR_RETURN(const json* value, Required(obj, path, key));
  HUYGENS_ASSIGN_OR_RETURN(std::string name, json_fields::ReadString(*value, Child(path, key)));
  const size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size() ||
      name.find('/', slash + 1) != std::string::npos) {
    return FieldError(Child(path, key),
                      fmt::format("{:?} is not a pod name of the form namespace/name", name));
  }
  return name;
}

absl::StatusOr<PodTrafficPair> ReadPair(const json& j, std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(j, path, {"a", "b", "bytesPerSecond"}));
  PodTrafficPair pair;
  HUYGENS_ASSIGN_OR_RETURN(pair.a, ReadPodName(j, path, "a"));
  HUYGENS_ASSIGN_OR_RETURN(pair.b, ReadPodName(j, path, "b"));
  if (pair.a == pair.b) {
    return FieldError(Child(path, "b"), fmt::format("the same pod as a ({:?})", pair.a));
  }
  HUYGENS_ASSIGN_OR_RETURN(const json* rate, Required(j, path, "bytesPerSecond"));
  HUYGENS_ASSIGN_OR_RETURN(pair.bytes_per_second,
                           json_fields::ReadUint64(*rate, Child(path, "bytesPerSecond")));
  return pair;
}

}  // namespace

PodTraffic CanonicalPodTraffic(PodTraffic traffic) {
  for (PodTrafficPair& p : traffic.pairs) {
    if (p.b < p.a) std::swap(p.a, p.b);
  }
  std::sort(traffic.pairs.begin(), traffic.pairs.end(),
            [](const PodTrafficPair& x, const PodTrafficPair& y) {
              return std::tie(y.bytes_per_second, x.a, x.b) <
                     std::tie(x.bytes_per_second, y.a, y.b);
            });
  return traffic;
}

std::string EncodePodTraffic(const PodTraffic& traffic) {
  const PodTraffic canonical = CanonicalPodTraffic(traffic);
  json pairs = json::array();
  for (const PodTrafficPair& p : canonical.pairs) {
    pairs.push_back({{"a", p.a}, {"b", p.b}, {"bytesPerSecond", p.bytes_per_second}});
  }
  // Written in this key order (nlohmann::json sorts keys, so build the text by hand).
  return fmt::format(R"({{"version":1,"windowSeconds":{},"pairs":{}}})", canonical.window_seconds,
                     pairs.dump());
}

absl::StatusOr<PodTraffic> ParsePodTraffic(std::string_view text, std::string_view field) {
  HUYGENS_ASSIGN_OR_RETURN(const json doc, json_fields::ParseJson(text, field));
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(doc, field));
  HUYGENS_RETURN_IF_ERROR(
      json_fields::CheckKnownKeys(doc, field, {"version", "windowSeconds", "pairs"}));
  HUYGENS_ASSIGN_OR_RETURN(const json* version, Required(doc, field, "version"));
  HUYGENS_ASSIGN_OR_RETURN(const int v, json_fields::ReadInt(*version, Child(field, "version")));
  if (v != 1) return FieldError(Child(field, "version"), fmt::format("unsupported version {}", v));
  PodTraffic traffic;
  HUYGENS_ASSIGN_OR_RETURN(const json* window, Required(doc, field, "windowSeconds"));
  HUYGENS_ASSIGN_OR_RETURN(traffic.window_seconds,
                           json_fields::ReadInt(*window, Child(field, "windowSeconds")));
  if (traffic.window_seconds <= 0) {
    return FieldError(Child(field, "windowSeconds"),
                      fmt::format("{} is not a positive number of seconds", traffic.window_seconds));
  }
  HUYGENS_ASSIGN_OR_RETURN(const json* pairs, Required(doc, field, "pairs"));
  const std::string pairs_path = Child(field, "pairs");
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*pairs, pairs_path));
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < pairs->size(); ++i) {
    const std::string path = Element(pairs_path, i);
    HUYGENS_ASSIGN_OR_RETURN(PodTrafficPair pair, ReadPair((*pairs)[i], path));
    if (!seen.insert(std::minmax(pair.a, pair.b)).second) {
      return FieldError(path, fmt::format("the pair {:?} and {:?} is given twice", pair.a, pair.b));
    }
    traffic.pairs.push_back(std::move(pair));
  }
  return CanonicalPodTraffic(std::move(traffic));
}

}  // namespace huygens

#include "cri/verbose_info.h"

#include <limits>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace huygens::cri {
namespace {

using nlohmann::json;

// The member `key` of `object` when `object` is an object holding it; else nullptr.
const json* Member(const json* object, const char* key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

// An integer member that fits in int64 (unsigned values above INT64_MAX count as absent).
std::optional<int64_t> Int(const json* object, const char* key) {
  const json* v = Member(object, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  return std::nullopt;
}

std::string String(const json* object, const char* key) {
  const json* v = Member(object, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

absl::StatusOr<VerboseInfo> ParseVerboseInfo(std::string_view json_text) {
  json doc = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return absl::InvalidArgumentError(
        fmt::format("ContainerStatus verbose info: not JSON ({} bytes)", json_text.size()));
  }
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(
        fmt::format("ContainerStatus verbose info: a JSON {}, not an object", doc.type_name()));
  }
  VerboseInfo info;
  if (std::optional<int64_t> pid = Int(&doc, "pid"); pid && *pid > 0) info.pid = pid;
  const json* linux = Member(Member(&doc, "runtimeSpec"), "linux");
  info.cgroups_path = String(linux, "cgroupsPath");
  const json* resources = Member(linux, "resources");
  const json* cpu = Member(resources, "cpu");
  info.resources.cpu_shares = Int(cpu, "shares");
  info.resources.cpu_quota = Int(cpu, "quota");
  info.resources.cpu_period = Int(cpu, "period");
  info.resources.cpuset_cpus = String(cpu, "cpus");
  info.resources.cpuset_mems = String(cpu, "mems");
  const json* memory = Member(resources, "memory");
  info.resources.memory_limit = Int(memory, "limit");
  info.resources.memory_swap = Int(memory, "swap");
  return info;
}

}  // namespace huygens::cri

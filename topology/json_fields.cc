#include "topology/json_fields.h"

#include <string>

namespace huygens::json_fields {

absl::StatusOr<CpuSet> ReadCpuList(const nlohmann::json& j, std::string_view path) {
  if (!j.is_string()) return TypeError(j, path, "a cpu-list string");
  absl::StatusOr<CpuSet> cpus = CpuSet::Parse(j.get_ref<const std::string&>());
  if (!cpus.ok()) return FieldError(path, std::string(cpus.status().message()));
  return cpus;
}

}  // namespace huygens::json_fields

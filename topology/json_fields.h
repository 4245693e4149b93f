// The cpu-list field reader, on top of base/json_fields.h (which this header includes, so the
// topology readers and the `huygens allocate` protocol get every field reader from here).
//
// Thread-safety: a free function without shared state.
#ifndef HUYGENS_TOPOLOGY_JSON_FIELDS_H_
#define HUYGENS_TOPOLOGY_JSON_FIELDS_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "base/json_fields.h"
#include "cpuset/cpuset.h"
#include "nlohmann/json.hpp"

namespace huygens::json_fields {

// A string holding a Linux cpu-list ("0-3,8"). Errors: InvalidArgument "<path>: expected a
// cpu-list string, got <type>", or the cpu-list parse error prefixed by the path.
absl::StatusOr<CpuSet> ReadCpuList(const nlohmann::json& j, std::string_view path);

}  // namespace huygens::json_fields

#endif  // HUYGENS_TOPOLOGY_JSON_FIELDS_H_

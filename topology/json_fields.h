// Reading fields of an nlohmann::json document with errors that name the field path.
//
// Internal to the topology library (used by the topology JSON and NodeResourceTopology readers).
// A path is written the way a person would point at the field: `cpus[3].numa`,
// `numaNodes[0].distances.1`. Every reader returns InvalidArgument "<path>: <problem>", e.g.
// `cpus[3].numa: expected an integer, got string`.
//
// Thread-safety: free functions without shared state.
#ifndef HUYGENS_TOPOLOGY_JSON_FIELDS_H_
#define HUYGENS_TOPOLOGY_JSON_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "nlohmann/json.hpp"

// Evaluates `expr` (an absl::StatusOr<T>); returns its status from the enclosing function when
// it is not OK, else moves the value into `lhs` (which may be a declaration).
#define HUYGENS_ASSIGN_OR_RETURN(lhs, expr) \
  HUYGENS_ASSIGN_OR_RETURN_IMPL(HUYGENS_CONCAT(huygens_or_, __LINE__), lhs, expr)
#define HUYGENS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = *std::move(tmp)
#define HUYGENS_CONCAT(a, b) HUYGENS_CONCAT_IMPL(a, b)
#define HUYGENS_CONCAT_IMPL(a, b) a##b

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define HUYGENS_RETURN_IF_ERROR(expr)             \
  do {                                            \
    if (absl::Status huygens_status = (expr);     \
        !huygens_status.ok()) {                   \
      return huygens_status;                      \
    }                                             \
  } while (false)

namespace huygens::json_fields {

// `path.key` (or `key` at the top level).
std::string Child(std::string_view path, std::string_view key);
// `path[index]`.
std::string Element(std::string_view path, size_t index);

// InvalidArgument "<path>: <what>" (just "<what>" when path is empty).
absl::Status FieldError(std::string_view path, std::string_view what);

// The JSON type name used in messages ("object", "array", "string", "integer", ...).
std::string_view TypeName(const nlohmann::json& j);

absl::Status ExpectObject(const nlohmann::json& j, std::string_view path);
absl::Status ExpectArray(const nlohmann::json& j, std::string_view path);

// Fails on the first key of `obj` not in `known` ("<path>.<key>: unknown field").
// REQUIRES: obj is an object.
absl::Status CheckKnownKeys(const nlohmann::json& obj, std::string_view path,
                            std::initializer_list<std::string_view> known);

// The member `key` of `obj`, or nullptr when absent. REQUIRES: obj is an object.
const nlohmann::json* Find(const nlohmann::json& obj, std::string_view key);

// Integers must be JSON integers (1, not 1.0 or "1") within the target type's range.
absl::StatusOr<int> ReadInt(const nlohmann::json& j, std::string_view path);
absl::StatusOr<uint64_t> ReadUint64(const nlohmann::json& j, std::string_view path);
absl::StatusOr<bool> ReadBool(const nlohmann::json& j, std::string_view path);
absl::StatusOr<std::string> ReadString(const nlohmann::json& j, std::string_view path);
// A string holding a Linux cpu-list ("0-3,8"); a parse error is prefixed by the path.
absl::StatusOr<CpuSet> ReadCpuList(const nlohmann::json& j, std::string_view path);

// A non-negative decimal number written as text (an object key such as "2097152"), without
// sign, spaces or leading zeros, that fits `max`.
absl::StatusOr<uint64_t> ReadDecimalKey(std::string_view key, std::string_view path,
                                        uint64_t max);

// Parses JSON text; a syntax error becomes InvalidArgument "<what>: <parser message>".
absl::StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what);

}  // namespace huygens::json_fields

#endif  // HUYGENS_TOPOLOGY_JSON_FIELDS_H_

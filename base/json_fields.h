// Reading fields of an nlohmann::json document with errors that name the field path.
//
// Used by every JSON reader of the house (topology JSON, NodeResourceTopology, the pod codec,
// the `huygens allocate` protocol, the scheduler's objects, the huygens.io/allocation annotation,
// the agent's checkpoint); topology/json_fields.h adds the cpu-list field on top. A path is written the way a person would point at the field: `cpus[3].numa`,
// `numaNodes[0].distances.1`. Every reader returns InvalidArgument "<path>: <problem>", e.g.
// `cpus[3].numa: expected an integer, got string`.
//
// Thread-safety: free functions without shared state.
#ifndef HUYGENS_BASE_JSON_FIELDS_H_
#define HUYGENS_BASE_JSON_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/status.h"
#include "nlohmann/json.hpp"

namespace huygens::json_fields {

// `path.key` (or `key` at the top level).
std::string Child(std::string_view path, std::string_view key);
// `path[index]`.
std::string Element(std::string_view path, size_t index);

// InvalidArgument "<path>: <what>" (just "<what>" when path is empty).
absl::Status FieldError(std::string_view path, std::string_view what);

// The JSON type name used in messages ("object", "array", "string", "integer", ...).
std::string_view TypeName(const nlohmann::json& j);

// InvalidArgument "<path>: expected <want>, got <type of j>" (want: "an object", "a string"...).
absl::Status TypeError(const nlohmann::json& j, std::string_view path, std::string_view want);

absl::Status ExpectObject(const nlohmann::json& j, std::string_view path);
absl::Status ExpectArray(const nlohmann::json& j, std::string_view path);

// Fails on the first key of `obj` not in `known` ("<path>.<key>: unknown field").
// REQUIRES: obj is an object.
absl::Status CheckKnownKeys(const nlohmann::json& obj, std::string_view path,
                            std::initializer_list<std::string_view> known);

// The member `key` of `obj`, or nullptr when absent. REQUIRES: obj is an object.
const nlohmann::json* Find(const nlohmann::json& obj, std::string_view key);
// The member `key` of `obj` (the object at `path`); "<path>.<key>: missing" when absent.
// REQUIRES: obj is an object.
absl::StatusOr<const nlohmann::json*> Required(const nlohmann::json& obj, std::string_view path,
                                               std::string_view key);

// The member `key` of `obj` (the object at `path`) read by `read`, one of the Read* below or
// any function of (value, path) returning an absl::StatusOr: "<path>.<key>: missing" when
// absent, else `read`'s errors. REQUIRES: obj is an object.
template <typename Read>
auto ReadRequired(const nlohmann::json& obj, std::string_view path, std::string_view key,
                  Read read) -> decltype(read(obj, path)) {
  const nlohmann::json* value = nullptr;
  HUYGENS_ASSIGN_OR_RETURN(value, Required(obj, path, key));
  return read(*value, Child(path, key));
}
// The same for an optional member: `fallback` when absent.
template <typename Read, typename T>
auto ReadOptional(const nlohmann::json& obj, std::string_view path, std::string_view key,
                  Read read, T fallback) -> decltype(read(obj, path)) {
  const nlohmann::json* value = Find(obj, key);
  if (value == nullptr) return fallback;
  return read(*value, Child(path, key));
}

// Lenient access for documents whose optional parts may be absent (Kubernetes objects): the
// member `key` of `j`, or a null value when `j` is not an object or has no such member. The
// reference stays valid as long as `j` does (the null is a static).
const nlohmann::json& MemberOrNull(const nlohmann::json& j, std::string_view key);
// The member `key` of `j` when it is a string, else "".
std::string StringOrEmpty(const nlohmann::json& j, std::string_view key);

// Integers must be JSON integers (1, not 1.0 or "1") within the target type's range.
absl::StatusOr<int> ReadInt(const nlohmann::json& j, std::string_view path);
absl::StatusOr<int64_t> ReadInt64(const nlohmann::json& j, std::string_view path);
absl::StatusOr<uint64_t> ReadUint64(const nlohmann::json& j, std::string_view path);
absl::StatusOr<bool> ReadBool(const nlohmann::json& j, std::string_view path);
absl::StatusOr<std::string> ReadString(const nlohmann::json& j, std::string_view path);

// A non-negative decimal number written as text (an object key such as "2097152"), without
// sign, spaces or leading zeros, that fits `max`.
absl::StatusOr<uint64_t> ReadDecimalKey(std::string_view key, std::string_view path,
                                        uint64_t max);

// Parses JSON text; a syntax error becomes InvalidArgument "<what>: <parser message>".
absl::StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what);

}  // namespace huygens::json_fields

#endif  // HUYGENS_BASE_JSON_FIELDS_H_

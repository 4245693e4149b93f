#include "base/json_fields.h"

#include <limits>

#include "fmt/format.h"

namespace huygens::json_fields {

std::string Child(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

std::string Element(std::string_view path, size_t index) {
  return fmt::format("{}[{}]", path, index);
}

absl::Status FieldError(std::string_view path, std::string_view what) {
  if (path.empty()) return absl::InvalidArgumentError(std::string(what));
  return absl::InvalidArgumentError(fmt::format("{}: {}", path, what));
}

std::string_view TypeName(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "integer";
    case nlohmann::json::value_t::number_float:
      return "number with a fraction or exponent";
    case nlohmann::json::value_t::binary:
      return "binary";
    case nlohmann::json::value_t::discarded:
      break;
  }
  return "discarded value";
}

absl::Status TypeError(const nlohmann::json& j, std::string_view path, std::string_view want) {
  return FieldError(path, fmt::format("expected {}, got {}", want, TypeName(j)));
}

const nlohmann::json& MemberOrNull(const nlohmann::json& j, std::string_view key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(std::string(key));
  return it == j.end() ? kNull : *it;
}

std::string StringOrEmpty(const nlohmann::json& j, std::string_view key) {
  const nlohmann::json& v = MemberOrNull(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

absl::Status ExpectObject(const nlohmann::json& j, std::string_view path) {
  return j.is_object() ? absl::OkStatus() : TypeError(j, path, "an object");
}

absl::Status ExpectArray(const nlohmann::json& j, std::string_view path) {
  return j.is_array() ? absl::OkStatus() : TypeError(j, path, "an array");
}

absl::Status CheckKnownKeys(const nlohmann::json& obj, std::string_view path,
                            std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : obj.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (!found) return FieldError(Child(path, key), "unknown field");
  }
  return absl::OkStatus();
}

const nlohmann::json* Find(const nlohmann::json& obj, std::string_view key) {
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

absl::StatusOr<const nlohmann::json*> Required(const nlohmann::json& obj, std::string_view path,
                                               std::string_view key) {
  const nlohmann::json* value = Find(obj, key);
  if (value == nullptr) return FieldError(Child(path, key), "missing");
  return value;
}

absl::StatusOr<int64_t> ReadInt64(const nlohmann::json& j, std::string_view path) {
  if (j.is_number_unsigned()) {
    const auto v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return FieldError(path, fmt::format("integer {} is too large", v));
    }
    return static_cast<int64_t>(v);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return TypeError(j, path, "an integer");
}

absl::StatusOr<int> ReadInt(const nlohmann::json& j, std::string_view path) {
  int64_t v = 0;
  HUYGENS_ASSIGN_OR_RETURN(v, ReadInt64(j, path));
  if (v > std::numeric_limits<int>::max()) {
    return FieldError(path, fmt::format("integer {} is too large", v));
  }
  if (v < std::numeric_limits<int>::min()) {
    return FieldError(path, fmt::format("integer {} is out of range", v));
  }
  return static_cast<int>(v);
}

absl::StatusOr<uint64_t> ReadUint64(const nlohmann::json& j, std::string_view path) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer()) {
    return FieldError(path, fmt::format("expected a non-negative integer, got {}",
                                        j.get<int64_t>()));
  }
  return TypeError(j, path, "a non-negative integer");
}

absl::StatusOr<bool> ReadBool(const nlohmann::json& j, std::string_view path) {
  if (j.is_boolean()) return j.get<bool>();
  return TypeError(j, path, "true or false");
}

absl::StatusOr<std::string> ReadString(const nlohmann::json& j, std::string_view path) {
  if (j.is_string()) return j.get<std::string>();
  return TypeError(j, path, "a string");
}

absl::StatusOr<uint64_t> ReadDecimalKey(std::string_view key, std::string_view path,
                                        uint64_t max) {
  auto bad = [&] {
    return FieldError(path, fmt::format("key {:?} is not a decimal number up to {}", key, max));
  };
  if (key.empty() || key.size() > 20 || (key.size() > 1 && key[0] == '0')) return bad();
  uint64_t value = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return bad();
    const auto digit = static_cast<uint64_t>(c - '0');
    if (value > (max - digit) / 10) return bad();
    value = value * 10 + digit;
  }
  return value;
}

absl::StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace huygens::json_fields

// The names of an enum's values on the wire, from one table read both ways: a constexpr
// std::array of {name, value} pairs per enum (alloc/pod.cc's policies, base/label_selector.cc's
// operators, kube/numa_affinity_group.cc's group policies), so a name is written once.
//
// Thread-safety: pure functions over constant tables.
#ifndef HUYGENS_BASE_ENUM_NAMES_H_
#define HUYGENS_BASE_ENUM_NAMES_H_

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace huygens {

// The value named `name` (exact, case-sensitive match); nullopt when the table has no such name.
template <typename Enum, std::size_t N>
std::optional<Enum> ParseName(const std::array<std::pair<const char*, Enum>, N>& names, std::string_view name) {
  for (const auto& [n, value] : names) {
    if (name == n) return value;
  }
  return std::nullopt;
}

// The name of `value`; "unknown" when the table lacks it (a value cast from an integer).
template <typename Enum, std::size_t N>
const char* NameOf(const std::array<std::pair<const char*, Enum>, N>& names, Enum value) {
  for (const auto& [n, v] : names) {
    if (v == value) return n;
  }
  return "unknown";
}

}  // namespace huygens

#endif  // HUYGENS_BASE_ENUM_NAMES_H_

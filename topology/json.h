// Huygens' own topology JSON: the serialised form of a CpuTopology.
//
// Two shapes are read (docs/topology-json.md is the reference):
//   - the full, versioned form that ToJson writes: {"version":1, "cpus":[...], "numaNodes":[...],
//     "machine":{...}}; it round-trips exactly (TopologyFromJson(ToJson(t)) == t);
//   - the minimal form `huygens allocate` takes (no "version"): {"cpus":[{"id","core","socket",
//     "numa"[,"l3"]}...] [,"distances":{"0":{"0":10,"1":21}}] [,"numaNodes":[...]]}; missing
//     fields take the defaults below and missing numaNodes are derived from the CPUs.
// Per-CPU defaults (both shapes): l3 -> the socket id (one L3 group per socket), die -> socket,
// cluster -> core, online -> true, isolated -> false; core, socket and numa -> -1 (unknown),
// which CpuTopology::Create accepts only for offline CPUs.
//
// Errors: InvalidArgument naming the field path, e.g. `cpus[3].numa: expected an integer`;
// topology invariants broken by a well-formed document are reported as CpuTopology::Create
// reports them (naming the CPU or NUMA node), prefixed with "topology JSON: ".
//
// Thread-safety: free functions without shared state.
#ifndef HUYGENS_TOPOLOGY_JSON_H_
#define HUYGENS_TOPOLOGY_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "topology/topology.h"

namespace huygens {

// The version ToJson writes and the only "version" the reader accepts.
inline constexpr int kTopologyJsonVersion = 1;

// The full versioned form of `t`. Every field is written (defaults included), so the output is
// a complete description: CPUs ascending by id, NUMA nodes ascending by id.
nlohmann::json ToJson(const CpuTopology& t);

// ToJson(t) as text: compact (one line) by default, or indented by `indent` spaces.
std::string ToJsonString(const CpuTopology& t, int indent = -1);

// Reads either shape (see the file comment) and validates it through CpuTopology::Create.
absl::StatusOr<CpuTopology> TopologyFromJson(const nlohmann::json& doc);

// Parses `text` as JSON, then reads it as above. A syntax error names the byte position.
absl::StatusOr<CpuTopology> TopologyFromJson(std::string_view text);

// Disambiguate text arguments (a string converts to both nlohmann::json and std::string_view).
inline absl::StatusOr<CpuTopology> TopologyFromJson(const char* text) {
  return TopologyFromJson(std::string_view(text));
}
inline absl::StatusOr<CpuTopology> TopologyFromJson(const std::string& text) {
  return TopologyFromJson(std::string_view(text));
}

}  // namespace huygens

#endif  // HUYGENS_TOPOLOGY_JSON_H_

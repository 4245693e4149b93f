#include "topology/discovery/assemble.h"

#include <algorithm>

#include "fmt/format.h"

namespace huygens::discovery_internal {
namespace {

// Raw keys of fallbacks are offset so that they cannot collide with the level's own keys.
constexpr int kFallbackBase = 1 << 29;

// Renumbers `field` densely from 0 in order of each value's smallest CPU; -1 stays -1.
// REQUIRES: cpus ascending by id.
void Densify(std::vector<CpuInfo>& cpus, int CpuInfo::*field) {
  std::map<int, int> dense;  // raw -> dense
  for (const CpuInfo& c : cpus) {
    if (c.*field >= 0) dense.try_emplace(c.*field, static_cast<int>(dense.size()));
  }
  for (CpuInfo& c : cpus) {
    if (c.*field >= 0) c.*field = dense[c.*field];
  }
}

void FallBack(std::vector<CpuInfo>& cpus, int CpuInfo::*field, int CpuInfo::*parent) {
  for (CpuInfo& c : cpus) {
    if (c.online && c.*field < 0 && c.*parent >= 0) c.*field = kFallbackBase + c.*parent;
  }
}

}  // namespace

absl::StatusOr<CpuTopology> Assemble(std::vector<CpuInfo> cpus, std::vector<NumaNode> nodes,
                                     MachineCpus machine, const std::string& what) {
  std::ranges::sort(cpus, {}, &CpuInfo::id);
  Densify(cpus, &CpuInfo::core);
  Densify(cpus, &CpuInfo::socket);
  FallBack(cpus, &CpuInfo::cluster, &CpuInfo::core);
  FallBack(cpus, &CpuInfo::die, &CpuInfo::socket);
  FallBack(cpus, &CpuInfo::l3, &CpuInfo::socket);
  Densify(cpus, &CpuInfo::cluster);
  Densify(cpus, &CpuInfo::die);
  Densify(cpus, &CpuInfo::l3);
  std::map<int, CpuSet::Builder> members;
  for (const CpuInfo& c : cpus) {
    if (c.numa >= 0) members[c.numa].Add(c.id);
  }
  for (NumaNode& n : nodes) n.cpus = members[n.id].Build();
  absl::StatusOr<CpuTopology> topology =
      CpuTopology::Create(std::move(cpus), std::move(nodes), std::move(machine));
  if (!topology.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: inconsistent topology: {}", what, std::string(topology.status().message())));
  }
  return topology;
}

std::map<int, std::map<int, int>> SocketDistances(const std::map<int, int>& socket_of_node) {
  std::map<int, std::map<int, int>> table;
  for (const auto& [a, socket_a] : socket_of_node) {
    for (const auto& [b, socket_b] : socket_of_node) {
      table[a][b] = a == b ? 10 : (socket_a >= 0 && socket_a == socket_b ? 12 : 32);
    }
  }
  return table;
}

}  // namespace huygens::discovery_internal

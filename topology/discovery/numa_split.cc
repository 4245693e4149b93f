// NUMA splits imposed on a discovered topology (discovery.h: NumaSplit, ApplyNumaSplit).
#include <charconv>
#include <map>

#include "fmt/format.h"
#include "topology/discovery/assemble.h"
#include "topology/discovery/discovery.h"

namespace huygens {
namespace {

// Cuts `units` into `parts` consecutive runs whose sizes differ by at most one; returns the
// run index of each unit. REQUIRES: 1 <= parts <= units.size().
std::vector<int> Runs(size_t units, int parts) {
  std::vector<int> run(units);
  const size_t n = static_cast<size_t>(parts);
  const size_t base = units / n, extra = units % n;
  size_t at = 0;
  for (size_t p = 0; p < n; ++p) {
    const size_t len = base + (p < extra ? 1 : 0);
    for (size_t i = 0; i < len; ++i) run[at++] = static_cast<int>(p);
  }
  return run;
}

}  // namespace

absl::StatusOr<NumaSplit> ParseNumaSplit(std::string_view text) {
  if (text == "none") return NumaSplit{};
  if (text == "l3") return NumaSplit{.mode = NumaSplit::Mode::kPerL3};
  constexpr std::string_view kPrefix = "per-socket:";
  if (text.starts_with(kPrefix)) {
    const std::string_view digits = text.substr(kPrefix.size());
    int n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && end == digits.data() + digits.size() && n >= 1 && n <= 64) {
      return NumaSplit{.mode = NumaSplit::Mode::kPerSocket, .per_socket = n};
    }
  }
  return absl::InvalidArgumentError(fmt::format(
      "NUMA split {:?}: want \"none\", \"per-socket:N\" (1 <= N <= 64) or \"l3\"", text));
}

absl::StatusOr<CpuTopology> ApplyNumaSplit(const CpuTopology& topology, const NumaSplit& split) {
  if (split.mode == NumaSplit::Mode::kNone) return topology;
  uint64_t memory = 0;
  std::map<uint64_t, uint64_t> hugepages;
  for (const NumaNode& n : topology.NumaNodes()) {
    if (topology.CpusInNumaNode(n.id).Empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "NUMA split: NUMA node {} has no online CPUs; a split is meant for CPUID-only exports "
          "whose NUMA nodes all hold CPUs",
          n.id));
    }
    memory += n.memory_bytes;
    for (const auto& [size, count] : n.hugepages) hugepages[size] += count;
  }

  // New node key of every core: (socket, run) for per-socket, the L3 group for per-L3.
  std::map<int, int> node_of_core;
  std::map<int, int> socket_of_key;
  for (int socket : topology.SocketIds()) {
    const std::vector<int> l3s = topology.L3GroupsInSocket(socket);
    const std::vector<int> cores = topology.CoresInSocket(socket);
    const int parts = split.per_socket;
    if (split.mode == NumaSplit::Mode::kPerSocket && static_cast<size_t>(parts) > cores.size()) {
      return absl::InvalidArgumentError(
          fmt::format("NUMA split per-socket:{}: socket {} has only {} cores", parts, socket,
                      cores.size()));
    }
    const bool by_l3 = split.mode == NumaSplit::Mode::kPerL3 || l3s.size() % parts == 0;
    const std::vector<int> run =
        split.mode == NumaSplit::Mode::kPerL3
            ? std::vector<int>()
            : Runs(by_l3 ? l3s.size() : cores.size(), parts);
    for (size_t i = 0; i < cores.size(); ++i) {
      const int core = cores[i];
      const int l3 = topology.Cpu(topology.CpusInCore(core).Min()).l3;
      int key = 0;
      if (split.mode == NumaSplit::Mode::kPerL3) {
        key = l3;
      } else if (by_l3) {
        const size_t l3_index =
            static_cast<size_t>(std::ranges::find(l3s, l3) - l3s.begin());
        key = socket * 64 + run[l3_index];
      } else {
        key = socket * 64 + run[i];
      }
      node_of_core[core] = key;
      socket_of_key[key] = socket;
    }
  }

  std::vector<CpuInfo> cpus = topology.Cpus();
  for (CpuInfo& c : cpus) c.numa = c.core >= 0 ? node_of_core.at(c.core) : -1;
  // Dense NUMA ids in order of smallest CPU.
  std::map<int, int> dense;
  for (const CpuInfo& c : cpus) {
    if (c.numa >= 0) dense.try_emplace(c.numa, static_cast<int>(dense.size()));
  }
  std::map<int, int> socket_of_node;
  for (CpuInfo& c : cpus) {
    if (c.numa < 0) continue;
    socket_of_node[dense[c.numa]] = socket_of_key[c.numa];
    c.numa = dense[c.numa];
  }
  const uint64_t count = dense.size();
  std::map<int, std::map<int, int>> distances =
      discovery_internal::SocketDistances(socket_of_node);
  std::vector<NumaNode> nodes;
  for (const auto& [id, socket] : socket_of_node) {
    NumaNode n;
    n.id = id;
    n.memory_bytes = memory / count;
    for (const auto& [size, pages] : hugepages) n.hugepages[size] = pages / count;
    n.distances = distances[id];
    nodes.push_back(std::move(n));
  }
  return discovery_internal::Assemble(std::move(cpus), std::move(nodes), topology.Machine(),
                                      "NUMA split");
}

}  // namespace huygens

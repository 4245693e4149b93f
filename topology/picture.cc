#include "topology/picture.h"

#include <algorithm>
#include <cstdint>

#include "fmt/format.h"

namespace huygens {
namespace {

std::string Bytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string NodeLine(const NumaNode& n) {
  std::string line = fmt::format("NUMA node {}  memory {}", n.id, Bytes(n.memory_bytes));
  for (const auto& [size, count] : n.hugepages) {
    line += fmt::format("  hugepages-{} x{}", Bytes(size), count);
  }
  return line;
}

// CPUs of a set as a comma list, isolated ones marked with '*', each followed by its mark.
std::string CpuList(const CpuTopology& t, const CpuSet& cpus, const CpuMarks& marks) {
  std::string out;
  for (int cpu : cpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (t.Cpu(cpu).isolated) out += '*';
    if (auto it = marks.find(cpu); it != marks.end()) out += fmt::format("({})", it->second);
  }
  return out;
}

}  // namespace

std::string TopologyPicture(const CpuTopology& t, const CpuMarks& marks) {
  std::string out;
  for (int socket : t.SocketIds()) {
    out += fmt::format("socket {}\n", socket);
    const std::vector<int> socket_l3 = t.L3GroupsInSocket(socket);
    for (int numa : t.NumaNodesInSocket(socket)) {
      out += fmt::format("  {}\n", NodeLine(t.Numa(numa)));
      for (int l3 : t.L3GroupsInNumaNode(numa)) {
        if (std::ranges::find(socket_l3, l3) == socket_l3.end()) continue;
        out += fmt::format("    L3 group {}\n", l3);
        for (int core : t.CoresInNumaNode(numa)) {
          const CpuSet cpus = t.CpusInCore(core);
          const CpuInfo& first = t.Cpu(cpus.Min());
          if (first.l3 != l3 || first.socket != socket) continue;
          std::string extra;
          if (first.cluster != core || t.CpusInCluster(first.cluster) != cpus) {
            extra = fmt::format("  (cluster {})", first.cluster);
          }
          out += fmt::format("      core {:<4} cpus {}{}\n", core, CpuList(t, cpus, marks), extra);
        }
      }
    }
  }
  int cpuless = 0;
  for (const NumaNode& n : t.NumaNodes()) {
    if (!t.CpusInNumaNode(n.id).Empty()) continue;
    if (cpuless++ == 0) out += "NUMA nodes without online CPUs\n";
    out += fmt::format("  {}{}\n", NodeLine(n),
                       n.cpus.Empty() ? "" : fmt::format("  (offline cpus {})", n.cpus.ToString()));
  }
  const CpuSet offline = t.OfflineCpus();
  if (!offline.Empty()) out += fmt::format("offline cpus: {}\n", offline.ToString());
  const CpuSet isolated = t.IsolatedCpus();
  if (!isolated.Empty()) out += fmt::format("isolated cpus (marked *): {}\n", isolated.ToString());
  if (!t.Machine().nohz_full.Empty()) {
    out += fmt::format("nohz_full cpus: {}\n", t.Machine().nohz_full.ToString());
  }
  if (t.NumNumaNodes() > 1) {
    out += t.HasDistances() ? "NUMA distances\n" : "NUMA distances (unknown; kernel default)\n";
    out += "      ";
    for (int b : t.NumaNodeIds()) out += fmt::format("{:>5}", b);
    out += '\n';
    for (int a : t.NumaNodeIds()) {
      out += fmt::format("{:>5} ", a);
      for (int b : t.NumaNodeIds()) out += fmt::format("{:>5}", t.Distance(a, b));
      out += '\n';
    }
  }
  out += fmt::format(
      "summary: {} sockets, {} NUMA nodes ({} with CPUs), {} L3 groups, {} cores, {} CPUs online, "
      "{} offline, {} isolated\n",
      t.NumSockets(), t.NumNumaNodes(), t.NumaNodeIdsWithCpus().size(), t.NumL3Groups(),
      t.NumCores(), t.NumCpus(), offline.Size(), isolated.Size());
  return out;
}

}  // namespace huygens

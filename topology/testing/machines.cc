#include "topology/testing/machines.h"

#include <utility>
#include <vector>

#include "absl/base/internal/raw_logging.h"

namespace huygens::testing {
namespace {

CpuTopology MustCreate(std::vector<CpuInfo> cpus, std::vector<NumaNode> nodes,
                       MachineCpus machine = {}) {
  absl::StatusOr<CpuTopology> t =
      CpuTopology::Create(std::move(cpus), std::move(nodes), std::move(machine));
  ABSL_RAW_CHECK(t.ok(), "a named test machine is invalid");
  return *std::move(t);
}

}  // namespace

CpuInfo Online(int id, int core, int socket, int numa, int l3) {
  return CpuInfo{.id = id, .core = core, .cluster = core, .die = socket, .socket = socket,
                 .numa = numa, .l3 = l3};
}

CpuInfo Offline(int id) {
  return CpuInfo{.id = id, .core = -1, .cluster = -1, .die = -1, .socket = -1, .numa = -1,
                 .l3 = -1, .online = false};
}

NumaNode Node(int id, CpuSet cpus, uint64_t memory_bytes, std::map<int, int> distances) {
  return NumaNode{.id = id, .cpus = std::move(cpus), .memory_bytes = memory_bytes,
                  .hugepages = {}, .distances = std::move(distances)};
}

CpuTopology OneSocketNoSmt() {
  std::vector<CpuInfo> cpus;
  for (int i = 0; i < 4; ++i) cpus.push_back(Online(i, i, 0, 0, 0));
  return MustCreate(cpus, {Node(0, CpuSet::Range(0, 3), 8ull << 30)});
}

CpuTopology TwoSocketsSmt() {
  std::vector<CpuInfo> cpus;
  for (int i = 0; i < 16; ++i) {
    const int core = i % 8;
    const int socket = core / 4;
    cpus.push_back(Online(i, core, socket, socket, socket));
  }
  NumaNode n0 = Node(0, *CpuSet::Parse("0-3,8-11"), 16ull << 30, {{0, 10}, {1, 21}});
  NumaNode n1 = Node(1, *CpuSet::Parse("4-7,12-15"), 16ull << 30, {{0, 21}, {1, 10}});
  n0.hugepages = {{2ull << 20, 512}, {1ull << 30, 2}};
  n1.hugepages = {{2ull << 20, 512}};
  return MustCreate(cpus, {n0, n1});
}

CpuTopology SparseNumaWithMemoryOnlyNode() {
  const int numa_of_core[] = {0, 0, 1, 1, 4, 4, 5, 5};
  std::vector<CpuInfo> cpus;
  for (int i = 0; i < 8; ++i) cpus.push_back(Online(i, i, 0, numa_of_core[i], i / 4));
  auto row = [](int self) {
    std::map<int, int> d;
    for (int n : {0, 1, 4, 5}) d[n] = n == self ? 10 : 12;
    d[250] = 30;
    return d;
  };
  const std::map<int, int> cxl = {{0, 30}, {1, 30}, {4, 30}, {5, 30}, {250, 10}};
  std::vector<NumaNode> nodes;
  for (int n : {0, 1, 4, 5}) nodes.push_back(Node(n, CpuSet(), 1ull << 30, row(n)));
  for (const CpuInfo& c : cpus) {
    for (NumaNode& n : nodes) {
      if (n.id == c.numa) n.cpus = n.cpus.Union(CpuSet({c.id}));
    }
  }
  nodes.push_back(Node(250, CpuSet(), 64ull << 30, cxl));  // memory only
  return MustCreate(cpus, std::move(nodes));
}

CpuTopology OfflineCpusAdjacentSiblings() {
  std::vector<CpuInfo> cpus = {Online(0, 0, 0, 0, 0), Online(1, 0, 0, 0, 0),
                               Online(2, 1, 0, 0, 0), Online(3, 1, 0, 0, 0), Offline(4),
                               Offline(5)};
  cpus[2].isolated = true;
  MachineCpus machine{.possible = CpuSet::Range(0, 7), .present = CpuSet::Range(0, 5),
                      .isolated = {2}, .nohz_full = {2, 3}, .isolcpus_flags = {"domain"}};
  return MustCreate(cpus, {Node(0, CpuSet::Range(0, 3))}, machine);
}

std::vector<NamedMachine> AllNamed() {
  return {{"OneSocketNoSmt", OneSocketNoSmt},
          {"TwoSocketsSmt", TwoSocketsSmt},
          {"SparseNumaWithMemoryOnlyNode", SparseNumaWithMemoryOnlyNode},
          {"OfflineCpusAdjacentSiblings", OfflineCpusAdjacentSiblings},
          {"Empty", [] { return CpuTopology(); }}};
}

void PrintTo(const NamedMachine& m, std::ostream* os) { *os << m.name; }

}  // namespace huygens::testing

// `huygens checkpoint inspect FILE`: reads Huygens' agent checkpoint or kubelet's
// cpu_manager_state / memory_manager_state, prints the pools and assignments as a CPU map and
// lists every violation. Exit status: 0 clean, 1 violations found, 2 the file cannot be read.
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cmd/command.h"
#include "node/checkpoint.h"
#include "node/kubelet_checkpoint.h"
#include "node/node_state.h"
#include "topology/discovery/discovery.h"
#include "topology/json.h"

namespace huygens::cmd {
namespace {

struct InspectFlags {
  std::string file, topology, synthetic, reserved;
};

absl::StatusOr<CpuTopology> LoadTopology(const InspectFlags& f) {
  if (!f.synthetic.empty()) return DiscoverSynthetic(f.synthetic);
  return DiscoverFromFile(f.topology);
}

// Without a topology: a flat machine holding CPUs 0..max_cpu, one core each, one NUMA node.
CpuTopology FlatMachine(int max_cpu) {
  std::vector<CpuInfo> cpus;
  for (int i = 0; i <= max_cpu; ++i) {
    cpus.push_back(CpuInfo{.id = i, .core = i, .cluster = i, .die = 0, .socket = 0, .numa = 0, .l3 = 0});
  }
  NumaNode node;
  node.cpus = CpuSet::Range(0, max_cpu);
  return *CpuTopology::Create(std::move(cpus), {node});
}

// One line per NUMA node: each CPU as 'S' (system pool), '.' (free / shared pool), '-' (not in
// the user pool) or the letter of the pod holding it; then the legend.
void PrintCpuMap(const NodeState& s) {
  const CpuTopology& topo = s.Topology();
  std::map<int, char> owner;
  std::vector<std::string> legend;
  char letter = 'a';
  for (const auto& [uid, alloc] : s.Pods()) {
    const char mark = letter;
    letter = letter == 'z' ? 'A' : (letter == 'Z' ? '#' : static_cast<char>(letter + 1));
    std::string line = fmt::format("  {} pod {}{}", mark, uid,
                                   s.OwnerOf(uid) == Owner::kKubelet ? " (kubelet)" : "");
    for (const ContainerAllocation& c : alloc.containers) {
      line += fmt::format("\n      {:<24} {:<10} cpus {} mems {}", c.name,
                          c.exclusive ? (c.init ? (c.restartable ? "sidecar" : "init") : "exclusive")
                                      : "shared",
                          c.exclusive ? c.cpuset.ToString() : "(shared pool)", c.mems.ToString());
      if (c.exclusive) {
        for (int cpu : c.cpuset) owner[cpu] = mark;
      }
    }
    legend.push_back(line);
  }
  std::cout << fmt::format("system pool: {}\nuser pool:   {}\nexclusive:   {}\nshared pool: {}\n",
                           s.SystemPool().ToString(), s.UserPool().ToString(),
                           s.ExclusiveCpus().ToString(), s.SharedPool().ToString());
  for (const NumaNode& n : topo.NumaNodes()) {
    std::string row;
    for (int cpu : n.cpus) {
      char ch = '-';
      if (s.SystemPool().Contains(cpu)) ch = 'S';
      if (s.UserPool().Contains(cpu)) ch = '.';
      if (auto it = owner.find(cpu); it != owner.end()) ch = it->second;
      row += ch;
    }
    std::cout << fmt::format("NUMA node {} [{}]: {}\n", n.id, n.cpus.ToString(), row);
  }
  for (const std::string& l : legend) std::cout << l << '\n';
}

int Inspect(const InspectFlags& f) {
  std::ifstream in(f.file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "huygens checkpoint inspect: %s: cannot open: %s\n", f.file.c_str(),
                 std::strerror(errno));
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    std::fprintf(stderr, "huygens checkpoint inspect: %s: not a JSON object\n", f.file.c_str());
    return 2;
  }
  auto fail = [&](const absl::Status& s) {
    std::fprintf(stderr, "huygens checkpoint inspect: %s: %s\n", f.file.c_str(),
                 std::string(s.message()).c_str());
    return 2;
  };
  CpuSet reserved;
  if (!f.reserved.empty()) {
    auto r = CpuSet::Parse(f.reserved);
    if (!r.ok()) return fail(r.status());
    reserved = *r;
  }
  std::vector<std::string> violations;

  // Memory manager: no CPUs to map; print the tables and check the checksum.
  if (doc.contains("machineState")) {
    auto cp = ParseKubeletMemoryCheckpoint(text);
    if (!cp.ok()) return fail(cp.status());
    std::cout << fmt::format("kubelet memory_manager_state, policy {}\n", cp->policy_name);
    for (const auto& [numa, st] : cp->machine_state) {
      for (const auto& [res, t] : st.memory_map) {
        std::cout << fmt::format("NUMA node {} {}: total {} allocatable {} reserved {} free {}\n",
                                 numa, res, t.total, t.allocatable, t.reserved, t.free);
      }
    }
    for (const auto& [uid, cs] : cp->entries) {
      for (const auto& [name, blocks] : cs) {
        for (const KubeletMemoryBlock& b : blocks) {
          std::cout << fmt::format("  pod {} container {}: {} {} on NUMA {}\n", uid, name, b.size,
                                   b.type, fmt::join(b.numa_affinity, ","));
        }
      }
    }
    if (!cp->checksum_ok) {
      violations.push_back(fmt::format("checksum: file says {}, kubelet's algorithm gives {}",
                                       cp->checksum, cp->computed_checksum));
    }
  } else {
    // CPU checkpoints: build a node and fill it.
    std::optional<KubeletCpuCheckpoint> kubelet;
    std::optional<NodeCheckpoint> ours;
    int max_cpu = 0;
    if (doc.contains("defaultCpuSet")) {
      auto cp = ParseKubeletCpuCheckpoint(text);
      if (!cp.ok()) return fail(cp.status());
      kubelet = *cp;
      if (!cp->default_cpu_set.Empty()) max_cpu = cp->default_cpu_set.Max();
      for (const auto& [uid, cs] : cp->entries) {
        for (const auto& [name, cpus] : cs) {
          if (!cpus.Empty()) max_cpu = std::max(max_cpu, cpus.Max());
        }
      }
      std::cout << fmt::format("kubelet cpu_manager_state (v{}), policy {}\n", cp->format,
                               cp->policy_name);
    } else {
      auto cp = DecodeCheckpoint(text);
      if (cp.status().code() == absl::StatusCode::kDataLoss) {
        std::cout << "huygens node checkpoint\n";
        std::cout << "violations:\n  " << cp.status().message() << '\n';
        return 1;
      }
      if (!cp.ok()) return fail(cp.status());
      ours = *cp;
      for (const auto& [spec, alloc] : cp->pods) {
        for (const ContainerAllocation& c : alloc.containers) {
          if (!c.cpuset.Empty()) max_cpu = std::max(max_cpu, c.cpuset.Max());
        }
      }
      std::cout << fmt::format("huygens node checkpoint, node {}\n", cp->node);
    }
    std::shared_ptr<const CpuTopology> topo;
    if (!f.topology.empty() || !f.synthetic.empty()) {
      auto t = LoadTopology(f);
      if (!t.ok()) return fail(t.status());
      topo = std::make_shared<const CpuTopology>(*std::move(t));
    } else {
      topo = std::make_shared<const CpuTopology>(FlatMachine(max_cpu));
    }
    NodeConfig config;
    config.name = ours ? ours->node : "";
    config.system_cpus = reserved;
    auto node = NodeState::Create(topo, config);
    if (!node.ok()) return fail(node.status());
    if (kubelet) {
      violations = ImportKubeletCpus(*node, *kubelet);
    } else {
      NodeState::RebuildReport r = node->Rebuild(ours->pods);
      for (const auto& [uid, why] : r.rejected) violations.push_back(why);
    }
    for (std::string& v : node->Validate()) violations.push_back(std::move(v));
    PrintCpuMap(*node);
  }
  if (violations.empty()) {
    std::cout << "no violations\n";
    return 0;
  }
  std::cout << "violations:\n";
  for (const std::string& v : violations) std::cout << "  " << v << '\n';
  return 1;
}

void Setup(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("checkpoint", "Inspect CPU checkpoints (Huygens' or kubelet's)");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<InspectFlags>();
  CLI::App* inspect = cmd->add_subcommand(
      "inspect",
      "Print the pools and assignments of a checkpoint as a CPU map and list every violation "
      "(checksum, overlap, reserved or offline CPU handed out). Reads Huygens' node checkpoint, "
      "kubelet's cpu_manager_state (v1 or v2) and memory_manager_state. Exit status: 0 clean, "
      "1 violations, 2 unreadable.");
  inspect->add_option("FILE", flags->file, "The checkpoint file")->required();
  CLI::Option* topo = inspect->add_option(
      "--topology", flags->topology,
      "The machine: Huygens topology JSON (*.json), hwloc 2 XML (*.xml), or a sysfs dump "
      "(directory or .tar.bz2). Default: a flat machine holding the CPUs the file names");
  CLI::Option* syn = inspect->add_option("--synthetic", flags->synthetic,
                                         "The machine as an hwloc synthetic description");
  topo->excludes(syn);
  inspect->add_option("--reserved-cpus", flags->reserved,
                      "The system pool / kubelet's reservedSystemCPUs, as a cpu-list");
  inspect->callback([flags, &exit_code] { exit_code = Inspect(*flags); });
}

}  // namespace

HUYGENS_COMMAND("checkpoint", Setup);

}  // namespace huygens::cmd

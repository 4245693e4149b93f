// `huygens discover`: prints a machine's CPU topology as a picture, as Huygens' topology JSON or
// as a NodeResourceTopology object. See docs/discovery.md.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "cmd/command.h"
#include "fmt/format.h"
#include "topology/discovery/discovery.h"
#include "topology/json.h"
#include "topology/nrt.h"
#include "topology/picture.h"

namespace huygens::cmd {
namespace {

struct DiscoverFlags {
  std::string fsroot, xml, synthetic;
  std::string numbering = "linux";
  std::string numa_split = "none";
  std::string output = "text";
  std::string node_name;
  std::string reserved_cpus;
};

absl::StatusOr<CpuTopology> Discover(const DiscoverFlags& f) {
  absl::StatusOr<CpuTopology> topology;
  if (!f.fsroot.empty()) {
    topology = DiscoverFromFsroot(f.fsroot);
  } else if (!f.xml.empty()) {
    topology = DiscoverFromXml(f.xml);
  } else if (!f.synthetic.empty()) {
    absl::StatusOr<CpuNumbering> numbering = ParseCpuNumbering(f.numbering);
    if (!numbering.ok()) return numbering.status();
    topology = DiscoverSynthetic(f.synthetic, *numbering);
  } else {
    topology = DiscoverLive();
  }
  if (!topology.ok()) return topology;
  absl::StatusOr<NumaSplit> split = ParseNumaSplit(f.numa_split);
  if (!split.ok()) return split.status();
  return ApplyNumaSplit(*topology, *split);
}

int Run(const DiscoverFlags& f) {
  absl::StatusOr<CpuTopology> topology = Discover(f);
  if (!topology.ok()) {
    std::fprintf(stderr, "huygens discover: %s\n", std::string(topology.status().message()).c_str());
    return 2;
  }
  if (f.output == "text") {
    std::cout << TopologyPicture(*topology);
    return 0;
  }
  if (f.output == "json") {
    std::cout << ToJsonString(*topology, 2) << '\n';
    return 0;
  }
  NrtInput in;
  in.node_name = f.node_name.empty() ? "localhost" : f.node_name;
  in.topology = &*topology;
  if (!f.reserved_cpus.empty()) {
    absl::StatusOr<CpuSet> reserved = CpuSet::Parse(f.reserved_cpus);
    if (!reserved.ok()) {
      std::fprintf(stderr, "huygens discover: --reserved-cpus: %s\n",
                   std::string(reserved.status().message()).c_str());
      return 2;
    }
    in.system_cpus = *reserved;
  }
  absl::StatusOr<nlohmann::json> nrt = BuildNrt(in);
  if (!nrt.ok()) {
    std::fprintf(stderr, "huygens discover: %s\n", std::string(nrt.status().message()).c_str());
    return 2;
  }
  std::cout << nrt->dump(2) << '\n';
  return 0;
}

void Setup(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<DiscoverFlags>();
  CLI::App* cmd = app.add_subcommand(
      "discover",
      "Discover a machine's CPU topology (sockets, NUMA nodes, L3 groups, cores, CPUs) and print "
      "it. Default: the live machine, as a picture. The whole machine is shown, not this "
      "process's cgroup; a CPU's NUMA node is the sysfs node that lists it, as kubelet sees it.");
  cmd->footer(
      "Examples:\n"
      "  huygens discover\n"
      "  huygens discover --fsroot memorysidecaches.tar.bz2 --output json\n"
      "  huygens discover --xml AMD-19h-Zen4-2xEpyc-9654.hwloc2.xml --numa-split per-socket:4\n"
      "  huygens discover --synthetic 'package:2 numa:2 l3cache:2 core:8 pu:2' "
      "--numbering adjacent\n"
      "Exit status: 0 success; 2 bad input (one line `huygens discover: <file>: <problem>`).");
  CLI::Option* fsroot = cmd->add_option(
      "--fsroot", flags->fsroot,
      "Read a sysfs/procfs dump instead of the live machine: a directory holding "
      "sys/devices/system/cpu (or <dir>/fsroot), or a .tar.bz2 made by hwloc-gather-topology");
  CLI::Option* xml = cmd->add_option("--xml", flags->xml,
                                     "Read an hwloc 2 XML export (lstopo --of xml)");
  CLI::Option* synthetic = cmd->add_option(
      "--synthetic", flags->synthetic,
      "Model a machine from an hwloc synthetic description, e.g. "
      "'package:2 numa:2 l3cache:2 core:8 pu:2'");
  fsroot->excludes(xml, synthetic);
  xml->excludes(synthetic);
  cmd->add_option("--numbering", flags->numbering,
                  "CPU numbering for --synthetic: linux (siblings n and n + cpus/threads; "
                  "default) or adjacent (a core's threads consecutive)")
      ->check(CLI::IsMember({"linux", "adjacent"}));
  cmd->add_option("--numa-split", flags->numa_split,
                  "Impose NUMA nodes: per-socket:N (N per socket, like NPS2/NPS4 or SNC2/SNC4), "
                  "l3 (one per L3 group) or none (default); meant for CPUID-only XML exports "
                  "with a single NUMA node. Distances: 10 local, 12 same socket, 32 other "
                  "socket");
  cmd->add_option("--output", flags->output,
                  "text (a picture; default), json (Huygens' topology JSON, docs/topology-json.md) "
                  "or nrt (a NodeResourceTopology v1alpha2 object)")
      ->check(CLI::IsMember({"text", "json", "nrt"}));
  cmd->add_option("--node-name", flags->node_name,
                  "Node name for --output nrt (default: localhost)");
  cmd->add_option("--reserved-cpus", flags->reserved_cpus,
                  "CPUs of the system pool for --output nrt, as a cpu-list (default: none)");
  cmd->callback([flags, &exit_code] { exit_code = Run(*flags); });
}

}  // namespace

HUYGENS_COMMAND("discover", Setup);

}  // namespace huygens::cmd

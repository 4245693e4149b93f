// `huygens allocate`: the batch interface to every CPU allocator. JSON lines in (stdin), one
// JSON line out per request, in order. See docs/allocate.md; the decoding lives in
// cmd/allocate/batch.h.
#include <cstdio>
#include <iostream>
#include <string>

#include "cmd/allocate/batch.h"
#include "cmd/command.h"
#include "topology/discovery/discovery.h"

namespace huygens::cmd {
namespace {

absl::StatusOr<CpuTopology> LoadTopology(const TopologySource& source) {
  if (source.file.empty()) {
    absl::StatusOr<CpuNumbering> numbering = ParseCpuNumbering(source.numbering);
    if (!numbering.ok()) return numbering.status();
    return DiscoverSynthetic(source.synthetic, *numbering);
  }
  return DiscoverFromFile(source.file);
}

// Exit status: 0 every request answered with a result, 1 some answered with an error.
int Run() {
  AllocateBatch batch(LoadTopology);
  bool any_error = false;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const AllocateBatch::Response response = batch.Handle(line);
    any_error = any_error || response.error;
    std::fwrite(response.line.data(), 1, response.line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  return any_error ? 1 : 0;
}

void Setup(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "allocate",
      "Answer CPU allocation requests: one JSON object per line on stdin, one JSON line per "
      "request on stdout, in order, each with the request's \"id\". A bad request gets "
      "{\"id\":...,\"error\":\"...\",\"kind\":\"...\"} and the run goes on. Blank lines are "
      "skipped.");
  cmd->footer(
      "Ops (field \"op\"; full reference in docs/allocate.md):\n"
      "  take             kubelet's take-by-topology: topology, available, numCpus, options\n"
      "                   {cpuSortingStrategy, distribute-cpus-across-numa, cpuGroupSize,\n"
      "                   prefer-align-cpus-by-uncorecache, align-by-socket}, affinity\n"
      "                   -> cpuset\n"
      "  static-allocate  kubelet's static policy for one container: topology, reservedCpus,\n"
      "                   numReservedCpus, policyOptions, defaultCpuSet, assignments, pod,\n"
      "                   container, affinity -> cpuset, defaultCpuSet, assignments\n"
      "  hints            kubelet's CPU NUMA hints: topology, available, reusable, numCpus,\n"
      "                   alignBySocket, maxAllowableNumaNodes -> hints\n"
      "  merge            kubelet's topology-manager merge: policy, scope, options, numaNodes,\n"
      "                   distances, providers -> hint, admit\n"
      "  huygens          Huygens' allocator: topology, available, numCpus, bindPolicy,\n"
      "                   topologyPolicy, numaStrategy, nearNumaNodes, capacity,\n"
      "                   withinNumaNodes, allocatableCpus, podCpus -> cpuset, numaNodes\n"
      "  resize           in-place resize of a running container, keeping its CPUs: topology,\n"
      "                   cpuset, available, numCpus and the huygens fields -> cpuset, added,\n"
      "                   removed, numaNodes\n"
      "  memory-allocate  kubelet's memory manager Static policy, containers of one pod in\n"
      "                   order: topology (numaNodes with memoryBytes, hugepages),\n"
      "                   reservedMemory, machineState, assignments, pod, containers\n"
      "                   [{name, affinity}], remove, withHints -> containers, machineState,\n"
      "                   assignments\n"
      "  memory-hints     kubelet's memory hints: the memory-allocate state fields, pod,\n"
      "                   container or scope pod -> hints\n"
      "Topology (field \"topology\"): {\"cpus\":[{\"id\":0,\"core\":0,\"socket\":0,\"numa\":0},...]}\n"
      "  or {\"synthetic\":\"package:2 core:4 pu:2\"} or {\"file\":\"machine.json|.xml|dump\"},\n"
      "  each with optional \"distances\":{\"0\":{\"0\":10,\"1\":21},...}.\n"
      "Example:\n"
      "  echo '{\"id\":\"a\",\"op\":\"take\",\"topology\":{\"synthetic\":\"package:2 core:4 "
      "pu:2\"},\"available\":\"1-15\",\"numCpus\":4}' | huygens allocate\n"
      "Exit status: 0 every request answered with a result; 1 at least one error response.");
  cmd->callback([&exit_code] { exit_code = Run(); });
}

}  // namespace

HUYGENS_COMMAND("allocate", Setup);

}  // namespace huygens::cmd

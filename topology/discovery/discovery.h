// Discovery: builds a CpuTopology from a real machine, a dump of one, or a description.
//
// What it is: free functions that read a machine (the live one, a sysfs/procfs dump directory or
// `.tar.bz2` as made by hwloc-gather-topology, an hwloc 2 XML export, or an hwloc synthetic
// description) and return the validated CpuTopology (topology/topology.h), plus NUMA splits that
// impose NPS/SNC modes on exports that carry a single NUMA node.
//
// What the result means (see docs/discovery.md for every choice and why):
//   - The whole system, not the caller's cgroup: hwloc is loaded with
//     HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED, and a dump's cgroup files are ignored.
//   - For the live machine and dumps, a CPU's NUMA node is the sysfs node directory whose
//     `cpulist` (or `cpumap` on old kernels) lists it, as kubelet reads it; CPU-less and
//     memory-less NUMA nodes are kept; NUMA ids are the kernel's (possibly sparse). Memory,
//     hugepages and distances come from sysfs node directories.
//   - Core, cluster, die, socket and L3-group ids come from hwloc and are renumbered machine-wide,
//     densely from 0, in order of their smallest CPU. Missing levels fall back: cluster = core,
//     die = socket, L3 group = socket (kubelet's fallback for its uncore-cache id). Where sysfs
//     reports physical_package_id -1 for every CPU (IBM POWER), socket = NUMA node.
//   - Known CPUs are the present, online and `cpuN`-listed CPUs; an offline CPU is kept with
//     online = false, its NUMA node when sysfs names one, and -1 for every other id.
//
// Errors: NotFound for a path that does not exist; InvalidArgument for everything else that is
// wrong with the input (empty or truncated dump, corrupt tarball, malformed or too new XML,
// unknown synthetic token). The message is one line that starts with the file (or the synthetic
// description) and names the problem, e.g. `/x.tar.bz2: not a bzip2 tarball (tar: ...)`.
//
// Thread-safety: the functions share no state except that hwloc reads a dump through the
// process environment (HWLOC_FSROOT): DiscoverFromFsroot sets it for the duration of one load,
// under a process-wide mutex. Calls of these functions may run concurrently with each other, but
// DiscoverFromFsroot must not run while another thread of the process reads or writes the
// environment (getenv/setenv) other than through these functions.
#ifndef HUYGENS_TOPOLOGY_DISCOVERY_DISCOVERY_H_
#define HUYGENS_TOPOLOGY_DISCOVERY_DISCOVERY_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "topology/topology.h"

namespace huygens {

// The live machine: /sys/devices/system/{cpu,node}, /proc/cmdline and hwloc on this system.
// Errors: InvalidArgument when sysfs is unreadable or inconsistent with hwloc.
absl::StatusOr<CpuTopology> DiscoverLive();

// A sysfs/procfs dump: `path` is either a directory or a `.tar.bz2` (hwloc-gather-topology's
// layout). The fsroot is the directory that holds `sys/devices/system/cpu`: `path` itself, one of
// its subdirectories, or a `<name>/fsroot` subdirectory. A tarball is unpacked with the `tar`
// program into a private temporary directory, which is removed before returning.
// Errors: NotFound (no such path), InvalidArgument (not a dump, truncated dump, corrupt tarball).
absl::StatusOr<CpuTopology> DiscoverFromFsroot(const std::string& path);

// An hwloc 2 XML export (hwloc 2.9 does not read version 3 files; the error says so).
// NUMA nodes, memory, hugepages and distances come from the XML; all CPUs are online; possible
// CPUs are the XML's complete cpuset and present CPUs are its PUs.
// Errors: NotFound, InvalidArgument (empty, malformed, version 3, no PUs).
absl::StatusOr<CpuTopology> DiscoverFromXml(const std::string& path);

// A machine saved in a file, by the file's name: Huygens topology JSON (`*.json`, either form of
// topology/json.h), an hwloc 2 XML export (`*.xml`, as DiscoverFromXml), or else a sysfs dump
// (a directory or `.tar.bz2`, as DiscoverFromFsroot).
// Errors: NotFound (no such file), InvalidArgument (the reader's error, naming the file).
absl::StatusOr<CpuTopology> DiscoverFromFile(const std::string& path);

// How DiscoverSynthetic numbers logical CPUs.
enum class CpuNumbering {
  // Linux/x86 style: thread k of core c is cpu k * (cpus / threads_per_core) + c, so the
  // siblings of cpu n are n + cpus/2 (SMT2) and so on. hwloc `indexes=` attributes on PUs are
  // overridden.
  kLinux,
  // Siblings adjacent: the core's threads are consecutive (hwloc's own synthetic numbering,
  // which honours `indexes=` attributes).
  kAdjacent,
};

// Parses "linux" or "adjacent". Errors: InvalidArgument naming the word.
absl::StatusOr<CpuNumbering> ParseCpuNumbering(std::string_view text);

// An hwloc synthetic description, e.g. "package:2 numa:2 l3cache:2 core:8 pu:2"
// (hwloc's syntax: levels from the top, `type:count`, optional `(attributes)`).
// Without distances in the description, NUMA distances follow NumaSplit's rule (10 local, 12
// same socket, 32 other socket). Every CPU is online; possible = present = all CPUs.
// Errors: InvalidArgument naming the first token hwloc does not know, or the description when
// hwloc rejects it as a whole (e.g. a zero count); also when kLinux numbering is asked for a
// machine whose cores do not all have the same number of threads.
absl::StatusOr<CpuTopology> DiscoverSynthetic(std::string_view spec,
                                              CpuNumbering numbering = CpuNumbering::kLinux);

// A NUMA split imposed on a topology (e.g. a CPUID-only XML export, which has one NUMA node),
// to model AMD NPS or Intel SNC modes.
struct NumaSplit {
  enum class Mode {
    kNone,       // keep the topology's NUMA nodes (default)
    kPerSocket,  // `per_socket` NUMA nodes in each socket (NPS1/2/4, SNC2/4)
    kPerL3,      // one NUMA node per L3 group (AMD's "L3 as NUMA" BIOS option)
  };
  Mode mode = Mode::kNone;
  // NUMA nodes per socket for kPerSocket; >= 1. Default 1 (one node per socket, NPS1).
  int per_socket = 1;
};

// Parses "none", "per-socket:N" (N >= 1) or "l3". Errors: InvalidArgument naming the text.
absl::StatusOr<NumaSplit> ParseNumaSplit(std::string_view text);

// Replaces the NUMA nodes of `topology` according to `split`:
//   - kPerSocket: within each socket, its L3 groups (in order of smallest CPU) are cut into
//     `per_socket` consecutive runs of equal size when their number divides evenly (NPS follows
//     CCD boundaries), otherwise its cores are cut into `per_socket` consecutive runs whose sizes
//     differ by at most one (SNC on a monolithic L3);
//   - kPerL3: one NUMA node per L3 group.
// New NUMA ids are dense from 0 in order of smallest CPU. Memory and hugepage counts of the old
// nodes are summed and shared evenly (integer division) among the new nodes. Distances: 10 to
// itself, 12 to a node in the same socket, 32 to a node in another socket (the SLIT values AMD
// Genoa reports in NPS4). Offline CPUs get NUMA node -1. kNone returns `topology` unchanged.
// Errors: InvalidArgument when the topology has a NUMA node without CPUs (a split is meant for
// CPUID-only exports), or when a socket has fewer cores than `per_socket`.
absl::StatusOr<CpuTopology> ApplyNumaSplit(const CpuTopology& topology, const NumaSplit& split);

}  // namespace huygens

#endif  // HUYGENS_TOPOLOGY_DISCOVERY_DISCOVERY_H_

#include "topology/discovery/hwloc_view.h"

#include <hwloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "fmt/format.h"

namespace huygens::discovery_internal {
namespace {

// hwloc reads a dump's location from the environment when the topology is loaded; this mutex
// keeps two loads from racing on it.
std::mutex& FsrootMutex() {
  static std::mutex mu;
  return mu;
}

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

int Key(hwloc_obj_t obj) { return obj == nullptr ? -1 : static_cast<int>(obj->gp_index); }

// The nearest ancestor of `pu` that is a Group object of subtype "Cluster" (hwloc's name for
// Linux's cluster_cpus level), or nullptr.
hwloc_obj_t ClusterOf(hwloc_obj_t pu) {
  for (hwloc_obj_t o = pu->parent; o != nullptr; o = o->parent) {
    if (o->type == HWLOC_OBJ_GROUP && o->subtype != nullptr &&
        std::strcmp(o->subtype, "Cluster") == 0) {
      return o;
    }
  }
  return nullptr;
}

CpuSet FromBitmap(hwloc_const_bitmap_t bitmap) {
  CpuSet::Builder b;
  for (int i = hwloc_bitmap_first(bitmap); i >= 0 && i < CpuSet::kMaxCpus;
       i = hwloc_bitmap_next(bitmap, i)) {
    b.Add(i);
  }
  return b.Build();
}

// Loads with the environment prepared for `source`. REQUIRES: t is initialised and configured.
int LoadLocked(hwloc_topology_t t, HwlocSource source, const std::string& arg) {
  if (source != HwlocSource::kFsroot) return hwloc_topology_load(t);
  std::lock_guard<std::mutex> lock(FsrootMutex());
  setenv("HWLOC_FSROOT", arg.c_str(), 1);
  const int rc = hwloc_topology_load(t);
  unsetenv("HWLOC_FSROOT");
  return rc;
}

}  // namespace

absl::StatusOr<HwlocView> LoadHwloc(HwlocSource source, const std::string& arg,
                                    const std::string& what) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return absl::InternalError(fmt::format("{}: hwloc_topology_init failed", what));
  }
  TopologyPtr topo(raw);
  hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_L1CACHE, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_L2CACHE, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  // A dump is another machine: the x86 backend would mix in this host's CPUID (see
  // docs/discovery.md), so only the Linux backend reads it.
  if (source == HwlocSource::kFsroot) {
    hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
  }
  if (source == HwlocSource::kXml && hwloc_topology_set_xml(raw, arg.c_str()) != 0) {
    return absl::InvalidArgumentError(fmt::format("{}: hwloc cannot read this XML file", what));
  }
  if (source == HwlocSource::kSynthetic && hwloc_topology_set_synthetic(raw, arg.c_str()) != 0) {
    return absl::InvalidArgumentError(
        fmt::format("{}: hwloc rejects this synthetic description", what));
  }
  if (LoadLocked(raw, source, arg) != 0) {
    return absl::InvalidArgumentError(
        fmt::format("{}: hwloc cannot load this topology ({})", what, std::strerror(errno)));
  }

  HwlocView view;
  view.complete = FromBitmap(hwloc_topology_get_complete_cpuset(raw));

  // NUMA nodes, ascending by os_index.
  std::vector<hwloc_obj_t> nodes;
  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(raw, HWLOC_OBJ_NUMANODE, nullptr);
       n != nullptr; n = hwloc_get_next_obj_by_type(raw, HWLOC_OBJ_NUMANODE, n)) {
    nodes.push_back(n);
  }
  std::ranges::sort(nodes, {}, [](hwloc_obj_t n) { return n->os_index; });

  std::map<int, CpuSet::Builder> node_cpus;
  for (hwloc_obj_t pu = hwloc_get_next_obj_by_type(raw, HWLOC_OBJ_PU, nullptr); pu != nullptr;
       pu = hwloc_get_next_obj_by_type(raw, HWLOC_OBJ_PU, pu)) {
    const int id = static_cast<int>(pu->os_index);
    if (id >= CpuSet::kMaxCpus) {
      return absl::InvalidArgumentError(
          fmt::format("{}: PU {} is beyond the {} CPUs Huygens supports", what, id,
                      CpuSet::kMaxCpus));
    }
    CpuInfo cpu;
    cpu.id = id;
    cpu.core = Key(hwloc_get_ancestor_obj_by_type(raw, HWLOC_OBJ_CORE, pu));
    if (cpu.core < 0) cpu.core = Key(pu);  // no Core level: every PU is its own core
    cpu.cluster = Key(ClusterOf(pu));
    cpu.die = Key(hwloc_get_ancestor_obj_by_type(raw, HWLOC_OBJ_DIE, pu));
    cpu.socket = Key(hwloc_get_ancestor_obj_by_type(raw, HWLOC_OBJ_PACKAGE, pu));
    cpu.l3 = Key(hwloc_get_ancestor_obj_by_type(raw, HWLOC_OBJ_L3CACHE, pu));
    for (hwloc_obj_t n : nodes) {
      if (n->complete_cpuset != nullptr &&
          hwloc_bitmap_isset(n->complete_cpuset, pu->os_index)) {
        cpu.numa = static_cast<int>(n->os_index);
        node_cpus[cpu.numa].Add(id);
        break;
      }
    }
    view.cpus.push_back(cpu);
  }
  if (view.cpus.empty()) {
    return absl::InvalidArgumentError(fmt::format("{}: hwloc found no CPU (PU)", what));
  }
  // CPUs hwloc knows of (complete cpuset) without a PU: offline, or outside the cgroup an XML
  // was exported under. Kept as offline, in the NUMA node whose complete cpuset holds them.
  CpuSet::Builder pus;
  for (const CpuInfo& c : view.cpus) pus.Add(c.id);
  for (int id : view.complete.Difference(pus.Build())) {
    CpuInfo cpu;
    cpu.id = id;
    cpu.online = false;
    for (hwloc_obj_t n : nodes) {
      if (n->complete_cpuset != nullptr && hwloc_bitmap_isset(n->complete_cpuset, static_cast<unsigned>(id))) {
        cpu.numa = static_cast<int>(n->os_index);
        node_cpus[cpu.numa].Add(id);
        break;
      }
    }
    view.cpus.push_back(cpu);
  }
  std::ranges::sort(view.cpus, {}, &CpuInfo::id);

  std::map<unsigned, size_t> index_of_node;
  for (hwloc_obj_t n : nodes) {
    NumaNode node;
    node.id = static_cast<int>(n->os_index);
    node.cpus = node_cpus[node.id].Build();
    node.memory_bytes = n->attr->numanode.local_memory;
    for (unsigned i = 1; i < n->attr->numanode.page_types_len; ++i) {
      const auto& pt = n->attr->numanode.page_types[i];
      node.hugepages[pt.size] = pt.count;
    }
    index_of_node[n->os_index] = view.numa_nodes.size();
    view.numa_nodes.push_back(std::move(node));
  }

  // The first latency matrix over NUMA nodes (hwloc's "NUMALatency" from the OS or the XML).
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_type(raw, HWLOC_OBJ_NUMANODE, &nr, &dist,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 &&
      nr >= 1 && dist != nullptr) {
    if (dist->nbobjs == nodes.size()) {
      for (unsigned i = 0; i < dist->nbobjs; ++i) {
        NumaNode& from = view.numa_nodes[index_of_node[dist->objs[i]->os_index]];
        for (unsigned j = 0; j < dist->nbobjs; ++j) {
          from.distances[static_cast<int>(dist->objs[j]->os_index)] =
              static_cast<int>(dist->values[i * dist->nbobjs + j]);
        }
      }
    }
    hwloc_distances_release(raw, dist);
  }
  return view;
}

}  // namespace huygens::discovery_internal

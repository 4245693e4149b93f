#include "node/kubelet_checkpoint.h"

#include <limits>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace huygens {
namespace {

using nlohmann::json;

absl::Status Bad(std::string_view file, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(fmt::format("{}: {}: {}", file, field, what));
}

uint32_t Fnv32a(std::string_view data) {
  uint32_t h = 2166136261u;
  for (unsigned char c : data) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

// go-spew `%#v` pieces (see the header comment).
std::string SpewIntSlice(const json* v) {
  if (v == nullptr || v->is_null()) return "<nil>";
  std::string out = "[";
  for (size_t i = 0; i < v->size(); ++i) {
    out += (i ? " " : "") + std::to_string((*v)[i].get<int64_t>());
  }
  return out + "]";
}

absl::StatusOr<uint64_t> Uint(const json& obj, const char* key, std::string_view file,
                              const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return uint64_t{0};
  if (!it->is_number_unsigned()) {
    return Bad(file, where + key, "expected an unsigned integer");
  }
  return it->get<uint64_t>();
}

absl::StatusOr<json> ParseObject(std::string_view text, std::string_view file) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad(file, "file", "not valid JSON");
  if (!doc.is_object()) return Bad(file, "file", "not a JSON object");
  auto policy = doc.find("policyName");
  if (policy == doc.end() || !policy->is_string()) {
    return Bad(file, "policyName", "missing or not a string");
  }
  return doc;
}

absl::StatusOr<std::vector<int>> IntList(const json& v, std::string_view file,
                                         const std::string& field) {
  std::vector<int> out;
  if (v.is_null()) return out;
  if (!v.is_array()) return Bad(file, field, "expected an array of integers");
  for (const json& x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() < std::numeric_limits<int>::min() ||
        x.get<int64_t>() > std::numeric_limits<int>::max()) {
      return Bad(file, field, "expected an array of integers");
    }
    out.push_back(static_cast<int>(x.get<int64_t>()));
  }
  return out;
}

}  // namespace

absl::StatusOr<KubeletCpuCheckpoint> ParseKubeletCpuCheckpoint(std::string_view text) {
  constexpr std::string_view kFile = "cpu_manager_state";
  auto doc = ParseObject(text, kFile);
  if (!doc.ok()) return doc.status();
  KubeletCpuCheckpoint cp;
  cp.policy_name = (*doc)["policyName"].get<std::string>();
  auto def = doc->find("defaultCpuSet");
  if (def == doc->end() || !def->is_string()) {
    return Bad(kFile, "defaultCpuSet", "missing or not a string");
  }
  auto set = CpuSet::Parse(def->get_ref<const std::string&>());
  if (!set.ok()) return Bad(kFile, "defaultCpuSet", std::string(set.status().message()));
  cp.default_cpu_set = *set;
  auto sum = Uint(*doc, "checksum", kFile, "");
  if (!sum.ok()) return sum.status();
  cp.checksum = *sum;

  // Entries, and their spew dump for the checksum.
  const json* entries = nullptr;
  if (auto it = doc->find("entries"); it != doc->end() && !it->is_null()) entries = &*it;
  std::string dump_entries;
  if (entries != nullptr) {
    if (!entries->is_object()) return Bad(kFile, "entries", "expected an object");
    bool v1 = false, v2 = false;
    for (const auto& [k, v] : entries->items()) (v.is_string() ? v1 : v2) = true;
    if (v1 && v2) return Bad(kFile, "entries", "mixes the v1 and v2 layouts");
    cp.format = v1 ? 1 : 2;
    std::string parts;
    for (const auto& [key, value] : entries->items()) {  // std::map order = Go's sorted keys
      if (!parts.empty()) parts += ' ';
      if (v1) {
        auto cpus = CpuSet::Parse(value.get_ref<const std::string&>());
        if (!cpus.ok()) {
          return Bad(kFile, fmt::format("entries[{:?}]", key), std::string(cpus.status().message()));
        }
        cp.entries[""][key] = *cpus;
        parts += key + ":" + value.get<std::string>();
        continue;
      }
      if (!value.is_object()) return Bad(kFile, fmt::format("entries[{:?}]", key), "expected an object");
      std::string inner;
      for (const auto& [name, cpuset] : value.items()) {
        const std::string field = fmt::format("entries[{:?}][{:?}]", key, name);
        if (!cpuset.is_string()) return Bad(kFile, field, "expected a cpuset string");
        auto cpus = CpuSet::Parse(cpuset.get_ref<const std::string&>());
        if (!cpus.ok()) return Bad(kFile, field, std::string(cpus.status().message()));
        cp.entries[key][name] = *cpus;
        inner += (inner.empty() ? "" : " ") + name + ":" + cpuset.get<std::string>();
      }
      parts += key + ":map[" + inner + "]";
    }
    dump_entries = "map[" + parts + "]";
  }
  const std::string type =
      cp.format == 1 ? "map[string]string" : "map[string]map[string]string";
  auto spew = [&](const std::string& e) {
    return fmt::format(
        "(*state.CPUManagerCheckpoint){{PolicyName:(string){} DefaultCPUSet:(string){} "
        "Entries:({}){} Checksum:(checksum.Checksum)0}}",
        cp.policy_name, def->get<std::string>(), type, e);
  };
  if (entries != nullptr) {
    cp.computed_checksum = Fnv32a(spew(dump_entries));
  } else {
    // Omitted: kubelet had either an empty map (its constructor's) or nil.
    cp.computed_checksum = Fnv32a(spew("map[]"));
    if (cp.computed_checksum != cp.checksum) cp.computed_checksum = Fnv32a(spew("<nil>"));
  }
  cp.checksum_ok = cp.checksum == 0 || cp.checksum == cp.computed_checksum;
  return cp;
}

absl::StatusOr<KubeletMemoryCheckpoint> ParseKubeletMemoryCheckpoint(std::string_view text) {
  constexpr std::string_view kFile = "memory_manager_state";
  auto doc = ParseObject(text, kFile);
  if (!doc.ok()) return doc.status();
  KubeletMemoryCheckpoint cp;
  cp.policy_name = (*doc)["policyName"].get<std::string>();
  auto sum = Uint(*doc, "checksum", kFile, "");
  if (!sum.ok()) return sum.status();
  cp.checksum = *sum;

  std::string machine = "<nil>";
  if (auto ms = doc->find("machineState"); ms != doc->end() && !ms->is_null()) {
    if (!ms->is_object()) return Bad(kFile, "machineState", "expected an object");
    std::map<int, std::string> nodes;  // numeric order, as Go sorts int keys
    for (const auto& [key, node] : ms->items()) {
      const std::string where = fmt::format("machineState[{:?}]", key);
      int id = 0;
      try {
        size_t used = 0;
        id = std::stoi(key, &used);
        if (used != key.size() || id < 0) throw std::invalid_argument(key);
      } catch (const std::exception&) {
        return Bad(kFile, where, "key is not a NUMA node id");
      }
      if (!node.is_object()) return Bad(kFile, where, "expected an object");
      KubeletNumaMemory& out = cp.machine_state[id];
      auto n = Uint(node, "numberOfAssignments", kFile, where + ".");
      if (!n.ok()) return n.status();
      out.number_of_assignments = static_cast<int>(*n);
      std::string map_dump = "<nil>";
      if (auto mm = node.find("memoryMap"); mm != node.end() && !mm->is_null()) {
        if (!mm->is_object()) return Bad(kFile, where + ".memoryMap", "expected an object");
        std::string parts;
        for (const auto& [resource, t] : mm->items()) {
          const std::string tw = fmt::format("{}.memoryMap[{:?}].", where, resource);
          if (!t.is_object()) return Bad(kFile, tw, "expected an object");
          KubeletMemoryTable table;
          for (auto [field, dest] : {std::pair{"total", &table.total},
                                     {"systemReserved", &table.system_reserved},
                                     {"allocatable", &table.allocatable},
                                     {"reserved", &table.reserved},
                                     {"free", &table.free}}) {
            auto v = Uint(t, field, kFile, tw);
            if (!v.ok()) return v.status();
            *dest = *v;
          }
          out.memory_map[resource] = table;
          parts += fmt::format(
              "{}{}:<*>{{TotalMemSize:(uint64){} SystemReserved:(uint64){} Allocatable:(uint64){} "
              "Reserved:(uint64){} Free:(uint64){}}}",
              parts.empty() ? "" : " ", resource, table.total, table.system_reserved,
              table.allocatable, table.reserved, table.free);
        }
        map_dump = "map[" + parts + "]";
      }
      const json* cells = node.contains("cells") ? &node["cells"] : nullptr;
      if (cells != nullptr) {
        auto list = IntList(*cells, kFile, where + ".cells");
        if (!list.ok()) return list.status();
        out.cells = *list;
      }
      nodes[id] = fmt::format(
          "<*>{{NumberOfAssignments:(int){} MemoryMap:(map[v1.ResourceName]*state.MemoryTable){} "
          "Cells:([]int){}}}",
          out.number_of_assignments, map_dump, SpewIntSlice(cells));
    }
    std::string parts;
    for (const auto& [id, d] : nodes) parts += fmt::format("{}{}:{}", parts.empty() ? "" : " ", id, d);
    machine = "map[" + parts + "]";
  }

  const json* entries = nullptr;
  if (auto it = doc->find("entries"); it != doc->end() && !it->is_null()) entries = &*it;
  std::string entries_dump;
  if (entries != nullptr) {
    if (!entries->is_object()) return Bad(kFile, "entries", "expected an object");
    std::string pods;
    for (const auto& [uid, containers] : entries->items()) {
      if (!containers.is_object()) return Bad(kFile, fmt::format("entries[{:?}]", uid), "expected an object");
      std::string cs;
      for (const auto& [name, blocks] : containers.items()) {
        const std::string where = fmt::format("entries[{:?}][{:?}]", uid, name);
        if (!blocks.is_array()) return Bad(kFile, where, "expected an array");
        std::string bs;
        auto& out = cp.entries[uid][name];
        for (const json& b : blocks) {
          if (!b.is_object()) return Bad(kFile, where, "expected an array of objects");
          KubeletMemoryBlock block;
          const json* aff = b.contains("numaAffinity") ? &b["numaAffinity"] : nullptr;
          if (aff != nullptr) {
            auto list = IntList(*aff, kFile, where + ".numaAffinity");
            if (!list.ok()) return list.status();
            block.numa_affinity = *list;
          }
          if (auto t = b.find("type"); t != b.end()) {
            if (!t->is_string()) return Bad(kFile, where + ".type", "expected a string");
            block.type = t->get<std::string>();
          }
          auto size = Uint(b, "size", kFile, where + ".");
          if (!size.ok()) return size.status();
          block.size = *size;
          bs += fmt::format("{}{{NUMAAffinity:([]int){} Type:(v1.ResourceName){} Size:(uint64){}}}",
                            bs.empty() ? "" : " ", SpewIntSlice(aff), block.type, block.size);
          out.push_back(std::move(block));
        }
        cs += fmt::format("{}{}:[{}]", cs.empty() ? "" : " ", name, bs);
      }
      pods += fmt::format("{}{}:map[{}]", pods.empty() ? "" : " ", uid, cs);
    }
    entries_dump = "map[" + pods + "]";
  }
  auto spew = [&](const std::string& e) {
    return fmt::format(
        "(*state.MemoryManagerCheckpoint){{PolicyName:(string){} MachineState:(state.NUMANodeMap){} "
        "Entries:(state.ContainerMemoryAssignments){} Checksum:(checksum.Checksum)0}}",
        cp.policy_name, machine, e);
  };
  if (entries != nullptr) {
    cp.computed_checksum = Fnv32a(spew(entries_dump));
  } else {
    cp.computed_checksum = Fnv32a(spew("map[]"));
    if (cp.computed_checksum != cp.checksum) cp.computed_checksum = Fnv32a(spew("<nil>"));
  }
  cp.checksum_ok = cp.checksum == cp.computed_checksum;
  return cp;
}

std::vector<std::string> ImportKubeletCpus(NodeState& node, const KubeletCpuCheckpoint& cp) {
  std::vector<std::string> out;
  if (!cp.checksum_ok) {
    out.push_back(fmt::format("checksum: file says {}, kubelet's algorithm gives {}",
                              cp.checksum, cp.computed_checksum));
  }
  if (cp.format == 1) {
    out.push_back("entries: v1 layout (keyed by container ID) cannot be tied to pods; not imported");
    return out;
  }
  const CpuTopology& topo = node.Topology();
  CpuSet::Builder assigned;
  for (const auto& [uid, containers] : cp.entries) {
    for (const auto& [name, cpus] : containers) {
      if (const CpuSet both = cpus.Intersection(cp.default_cpu_set); !both.Empty()) {
        out.push_back(fmt::format("pod {}: container {:?}: cpus {} are also in defaultCpuSet",
                                  uid, name, both.ToString()));
      }
      assigned.Add(cpus);
    }
  }
  // kubelet's validateState: the default set and the entries together are every online CPU.
  // A static file with neither is a fresh state (kubelet fills it); the none policy names no
  // CPUs. Only user-pool CPUs must be covered: with strict-cpu-reservation kubelet leaves the
  // reserved (system-pool) CPUs out of the file.
  const bool fresh = cp.default_cpu_set.Empty() && cp.entries.empty();
  const CpuSet missing =
      node.UserPool().Difference(cp.default_cpu_set).Difference(assigned.Build());
  if (!fresh && (cp.policy_name == "static" || !cp.entries.empty()) && !missing.Empty()) {
    out.push_back(fmt::format("online cpus {} are neither in defaultCpuSet nor assigned",
                              missing.ToString()));
  }
  // CPUs the runtime could not pin: absent or offline. Entries are checked by Assume below.
  if (const CpuSet absent = cp.default_cpu_set.Difference(topo.AllCpus()); !absent.Empty()) {
    out.push_back(fmt::format("defaultCpuSet: cpus {} do not exist on this machine",
                              absent.ToString()));
  }
  if (const CpuSet offline =
          cp.default_cpu_set.Intersection(topo.AllCpus()).Difference(topo.OnlineCpus());
      !offline.Empty()) {
    out.push_back(fmt::format("defaultCpuSet: cpus {} are offline", offline.ToString()));
  }
  for (const auto& [uid, containers] : cp.entries) {
    PodSpec spec;
    spec.uid = uid;
    PodAllocation alloc;
    alloc.pod_uid = uid;
    for (const auto& [name, cpus] : containers) {
      ContainerSpec c;
      c.name = name;
      c.cpu_request_milli = c.cpu_limit_milli = int64_t{cpus.Size()} * 1000;
      spec.containers.push_back(c);
      ContainerAllocation a;
      a.name = name;
      a.cpuset = cpus;
      CpuSet::Builder mems;
      for (int cpu : cpus) {
        if (topo.HasCpu(cpu) && topo.Cpu(cpu).numa >= 0) mems.Add(topo.Cpu(cpu).numa);
      }
      a.mems = mems.Build();
      alloc.containers.push_back(std::move(a));
    }
    if (absl::Status s = node.Assume(spec, alloc, Owner::kKubelet); !s.ok()) {
      out.push_back(fmt::format("kubelet {}", std::string(s.message())));
    }
  }
  return out;
}

}  // namespace huygens

#include "sim/cluster_spec.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "alloc/memory_manager.h"
#include "fmt/format.h"
#include "sim/csv.h"
#include "base/yaml_reader.h"
#include "topology/discovery/discovery.h"

namespace huygens::sim {
namespace {

struct Preset {
  const char* name;
  const char* synthetic;  // hwloc synthetic description, Linux numbering
  NumaSplit split;
  const char* about;
};

// Real servers. Linux numbering gives siblings n and n + cpus/2, as these machines report.
const Preset kPresets[] = {
    // 2x AMD EPYC 9654 (Genoa): 96 cores per socket in 12 CCDs of 8 cores (one L3 each), SMT2.
    {"epyc-9654-2s-nps1", "package:2 l3cache:12 core:8 pu:2",
     {NumaSplit::Mode::kPerSocket, 1}, "2x AMD EPYC 9654, NPS1: 2 NUMA nodes of 192 CPUs"},
    {"epyc-9654-2s-nps4", "package:2 l3cache:12 core:8 pu:2",
     {NumaSplit::Mode::kPerSocket, 4}, "2x AMD EPYC 9654, NPS4: 8 NUMA nodes of 48 CPUs"},
    // 2x Intel Xeon Platinum 8480+ (Sapphire Rapids): 56 cores per socket, one L3, SMT2, SNC off.
    {"xeon-8480-2s", "package:2 l3cache:1 core:56 pu:2", {NumaSplit::Mode::kPerSocket, 1},
     "2x Intel Xeon 8480+, SNC off: 2 NUMA nodes of 112 CPUs"},
    // 2x Intel Xeon Gold 6230 (Cascade Lake), 20 cores per socket, SMT2, SNC2 (as the
    // memorysidecaches fixture; that machine interleaves its node cpu-lists, this one does not).
    {"xeon-6230-2s-snc2", "package:2 l3cache:1 core:20 pu:2", {NumaSplit::Mode::kPerSocket, 2},
     "2x Intel Xeon Gold 6230, SNC2: 4 NUMA nodes of 20 CPUs"},
    // 2x Huawei Kunpeng 920-6426: 64 cores per socket without SMT, 2 NUMA nodes per socket
    // (one per die, each with its own L3). The real machine groups cores in clusters of 4;
    // hwloc's synthetic syntax cannot mark a Group as a cluster, so cluster = core here (no
    // scheduling decision reads clusters).
    {"kunpeng-920-2s", "package:2 l3cache:2 core:32 pu:1",
     {NumaSplit::Mode::kPerL3, 1}, "2x Huawei Kunpeng 920, 4 NUMA nodes of 32 CPUs, no SMT"},
};

absl::StatusOr<CpuTopology> LoadTopologyFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return DiscoverFromFsroot(path);
  if (path.ends_with(".xml")) return DiscoverFromXml(path);
  if (path.ends_with(".tar.bz2")) return DiscoverFromFsroot(path);
  return absl::InvalidArgumentError(fmt::format(
      "{}: unknown topology file type (use an hwloc 2 .xml export, a sysfs dump directory or "
      "a .tar.bz2 dump)",
      path));
}

int64_t DefaultMemory(const CpuTopology& topo) {
  int64_t total = 0;
  for (const NumaNode& n : topo.NumaNodes()) total += static_cast<int64_t>(n.memory_bytes);
  // Synthetic machines carry a token amount of memory; model 4 GiB per CPU for them.
  const int64_t per_cpu = int64_t{4} * 1024 * 1024 * 1024;
  return total >= per_cpu / 4 * topo.NumCpus() ? total : per_cpu * topo.NumCpus();
}

absl::Status ParseTopology(const YamlReader& r, const YAML::Node& node, const std::string& field,
                           const std::string& base_dir, NodeGroupSpec& group) {
  if (auto st = r.CheckMap(node, field, {"preset", "synthetic", "file", "numbering", "numaSplit"});
      !st.ok()) {
    return st;
  }
  const int sources = (node["preset"] ? 1 : 0) + (node["synthetic"] ? 1 : 0) +
                      (node["file"] ? 1 : 0);
  if (sources != 1) {
    return r.Error(node, field, "give exactly one of preset, synthetic or file");
  }
  absl::StatusOr<CpuTopology> topo;
  YAML::Node source;
  std::string source_field;
  if (auto preset = node["preset"]) {
    source = preset;
    source_field = field + ".preset";
    auto name = r.String(preset, source_field);
    if (!name.ok()) return name.status();
    topo = PresetTopology(*name);
    group.shape = "preset " + *name;
  } else if (auto s = node["synthetic"]) {
    source = s;
    source_field = field + ".synthetic";
    auto text = r.String(s, source_field);
    if (!text.ok()) return text.status();
    CpuNumbering numbering = CpuNumbering::kLinux;
    if (auto n = node["numbering"]) {
      auto word = r.String(n, field + ".numbering");
      if (!word.ok()) return word.status();
      auto parsed = ParseCpuNumbering(*word);
      if (!parsed.ok()) return r.Error(n, field + ".numbering", Msg(parsed.status()));
      numbering = *parsed;
    }
    topo = DiscoverSynthetic(*text, numbering);
    group.shape = "synthetic " + *text;
  } else {
    source = node["file"];
    source_field = field + ".file";
    auto path = r.String(source, source_field);
    if (!path.ok()) return path.status();
    std::filesystem::path p(*path);
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    topo = LoadTopologyFile(p.string());
    group.shape = "file " + *path;
  }
  if (!topo.ok()) return r.Error(source, source_field, Msg(topo.status()));
  if (node["numbering"] && !node["synthetic"]) {
    return r.Error(node["numbering"], field + ".numbering", "only applies to synthetic");
  }
  if (auto s = node["numaSplit"]) {
    auto text = r.String(s, field + ".numaSplit");
    if (!text.ok()) return text.status();
    auto split = ParseNumaSplit(*text);
    if (!split.ok()) return r.Error(s, field + ".numaSplit", Msg(split.status()));
    auto applied = ApplyNumaSplit(*topo, *split);
    if (!applied.ok()) return r.Error(s, field + ".numaSplit", Msg(applied.status()));
    topo = std::move(applied);
    group.shape += " numaSplit " + *text;
  }
  if (topo->NumCpus() == 0) return r.Error(source, source_field, "the machine has no online CPU");
  group.topology = std::make_shared<const CpuTopology>(*std::move(topo));
  return absl::OkStatus();
}

absl::StatusOr<sched::TaintEffect> ParseEffect(const std::string& s) {
  if (s == "NoSchedule") return sched::TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return sched::TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return sched::TaintEffect::kNoExecute;
  return absl::InvalidArgumentError(
      fmt::format("unknown taint effect {:?} (NoSchedule, PreferNoSchedule, NoExecute)", s));
}

// Enum fields: the text must be one of `names`.
template <typename T>
absl::Status ParseEnum(const YamlReader& r, const YAML::Node& node, const std::string& field,
                       const std::vector<std::pair<const char*, T>>& names, T& out) {
  auto text = r.String(node, field);
  if (!text.ok()) return text.status();
  std::string known;
  for (const auto& [name, value] : names) {
    if (*text == name) {
      out = value;
      return absl::OkStatus();
    }
    known += fmt::format("{}{}", known.empty() ? "" : ", ", name);
  }
  return r.Error(node, field, fmt::format("unknown value {:?} (one of {})", *text, known));
}

// The hugepage sizes a spec may name ("2Mi", "1Gi"): size key -> page size in bytes.
const std::map<std::string, uint64_t>& HugepageSizes() {
  static const auto* sizes =
      new std::map<std::string, uint64_t>{{"2Mi", uint64_t{2} << 20}, {"1Gi", uint64_t{1} << 30}};
  return *sizes;
}

// `memoryManager` of a group (see NodeGroupSpec::memory_manager and docs/simulate.md): sets
// g.memory_manager and rebuilds g.topology with the modelled per-NUMA memory and hugepages.
// Needs g.topology and g.memory_bytes.
absl::Status ParseMemoryManager(const YamlReader& r, const YAML::Node& node,
                                const std::string& field, NodeGroupSpec& g) {
  if (auto st = r.CheckMap(node, field, {"policy", "reservedMemory", "hugepages"}); !st.ok()) {
    return st;
  }
  MemoryManagerConfig config;
  if (auto p = node["policy"]) {
    auto st = ParseEnum<bool>(r, p, field + ".policy", {{"None", false}, {"Static", true}},
                              config.static_policy);
    if (!st.ok()) return st;
  }
  // Resource names a reservation may carry.
  std::vector<std::string> resources = {kMemoryResource};
  for (const auto& [key, size] : HugepageSizes()) resources.push_back(HugepageResourceName(size));
  if (auto list = node["reservedMemory"]) {
    if (auto st = r.CheckSequence(list, field + ".reservedMemory"); !st.ok()) return st;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string f = fmt::format("{}.reservedMemory[{}]", field, i);
      if (auto st = r.CheckMap(list[i], f, {"numaNode", "limits"}); !st.ok()) return st;
      if (!list[i]["numaNode"]) return r.Error(list[i], f + ".numaNode", "required");
      auto numa = r.Int(list[i]["numaNode"], f + ".numaNode", 0, 63);
      if (!numa.ok()) return numa.status();
      if (config.reserved_memory.contains(static_cast<int>(*numa))) {
        return r.Error(list[i]["numaNode"], f + ".numaNode",
                       fmt::format("NUMA node {} is listed twice", *numa));
      }
      std::map<std::string, uint64_t>& limits = config.reserved_memory[static_cast<int>(*numa)];
      const YAML::Node l = list[i]["limits"];
      if (!l) return r.Error(list[i], f + ".limits", "required");
      if (auto st = r.CheckMap(l, f + ".limits", {"memory", "hugepages-2Mi", "hugepages-1Gi"});
          !st.ok()) {
        return st;
      }
      for (const std::string& res : resources) {
        if (!l[res]) continue;
        auto bytes = r.Memory(l[res], f + ".limits." + res);
        if (!bytes.ok()) return bytes.status();
        limits[res] = static_cast<uint64_t>(*bytes);
      }
    }
  }
  std::map<uint64_t, uint64_t> pages;  // page size -> pages per NUMA node
  if (auto h = node["hugepages"]) {
    if (auto st = r.CheckMap(h, field + ".hugepages", {"2Mi", "1Gi"}); !st.ok()) return st;
    for (const auto& [key, size] : HugepageSizes()) {
      if (!h[key]) continue;
      auto n = r.Int(h[key], field + ".hugepages." + key, 0, int64_t{1} << 40);
      if (!n.ok()) return n.status();
      pages[size] = static_cast<uint64_t>(*n);
    }
  }
  // The modelled machine: per-NUMA memory from the group's `memory`, then the hugepages.
  const CpuTopology& topo = *g.topology;
  std::vector<NumaNode> numa = topo.NumaNodes();
  uint64_t total = 0;
  for (const NumaNode& n : numa) total += n.memory_bytes;
  const int64_t online = topo.OnlineCpus().Size();
  for (NumaNode& n : numa) {
    const int64_t cpus = n.cpus.IntersectionSize(topo.OnlineCpus());
    if (total != static_cast<uint64_t>(g.memory_bytes) && online > 0) {
      // memory * cpus / online without overflowing.
      n.memory_bytes = static_cast<uint64_t>(g.memory_bytes / online * cpus +
                                             g.memory_bytes % online * cpus / online);
    }
    if (cpus == 0) continue;
    for (const auto& [size, count] : pages) {
      n.hugepages[size] = count;
    }
    uint64_t huge = 0;  // bytes of hugepages, kept <= memory_bytes (checked before adding)
    for (const auto& [size, count] : n.hugepages) {
      if (size != 0 && count > (n.memory_bytes - huge) / size) {
        return r.Error(node["hugepages"] ? node["hugepages"] : node, field + ".hugepages",
                       fmt::format("the hugepages exceed NUMA node {}'s memory of {} bytes", n.id,
                                   n.memory_bytes));
      }
      huge += size * count;
    }
  }
  auto rebuilt = CpuTopology::Create(topo.Cpus(), std::move(numa), topo.Machine());
  if (!rebuilt.ok()) return r.Error(node, field, Msg(rebuilt.status()));
  auto policy = MemoryManagerPolicy::Create(*rebuilt, config.reserved_memory,
                                            /*require_system_reserved=*/config.static_policy);
  if (!policy.ok()) {
    return r.Error(node["reservedMemory"] ? node["reservedMemory"] : node,
                   field + ".reservedMemory", Msg(policy.status()));
  }
  g.topology = std::make_shared<const CpuTopology>(*std::move(rebuilt));
  g.memory_manager = std::move(config);
  return absl::OkStatus();
}

// `devices` of a group (see NodeGroupSpec::devices and docs/simulate.md): resource name ->
// an integer (that many devices on every NUMA node with CPUs) or a map NUMA node id -> count.
absl::Status ParseDevices(const YamlReader& r, const YAML::Node& node, const std::string& field,
                          NodeGroupSpec& g) {
  if (!node.IsMap()) return r.Error(node, field, "expected a map of resource name to devices");
  for (const auto& entry : node) {
    auto name = r.String(entry.first, field);
    if (!name.ok()) return name.status();
    const std::string f = field + "." + *name;
    if (name->find('/') == std::string::npos) {
      return r.Error(entry.first, f,
                     "a device-plugin resource name has a domain (e.g. nvidia.com/gpu)");
    }
    NumaDeviceCounts& counts = g.devices[*name];
    if (entry.second.IsScalar()) {
      auto n = r.Int(entry.second, f, 0, 1024);
      if (!n.ok()) return n.status();
      for (const NumaNode& numa : g.topology->NumaNodes()) {
        if (!g.topology->CpusInNumaNode(numa.id).Empty()) counts[numa.id] = *n;
      }
      continue;
    }
    if (!entry.second.IsMap()) {
      return r.Error(entry.second, f, "expected a count or a map of NUMA node id to count");
    }
    for (const auto& per : entry.second) {
      auto id = r.Int(per.first, f, 0, 1023);
      if (!id.ok()) return id.status();
      const std::string pf = fmt::format("{}.{}", f, *id);
      if (!g.topology->HasNumaNode(static_cast<int>(*id))) {
        return r.Error(per.first, pf, fmt::format("NUMA node {} does not exist", *id));
      }
      auto n = r.Int(per.second, pf, 0, 1024);
      if (!n.ok()) return n.status();
      counts[static_cast<int>(*id)] = *n;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<NodeGroupSpec> ParseGroup(const YamlReader& r, const YAML::Node& node,
                                         const std::string& field, const std::string& base_dir) {
  if (auto st = r.CheckMap(node, field,
                           {"name", "count", "topology", "systemCpus", "systemCpuCount", "mode",
                            "topologyPolicy", "topologyScope", "numaStrategy", "bindPolicy",
                            "labels", "taints", "memory", "maxPods", "memoryManager", "devices"});
      !st.ok()) {
    return st;
  }
  NodeGroupSpec g;
  if (!node["name"]) return r.Error(node, field + ".name", "required");
  auto name = r.String(node["name"], field + ".name");
  if (!name.ok()) return name.status();
  if (name->empty()) return r.Error(node["name"], field + ".name", "must not be empty");
  g.name = *name;
  if (auto c = node["count"]) {
    auto count = r.Int(c, field + ".count", 0, 1000000);
    if (!count.ok()) return count.status();
    g.count = static_cast<int>(*count);
  }
  if (!node["topology"]) return r.Error(node, field + ".topology", "required");
  if (auto st = ParseTopology(r, node["topology"], field + ".topology", base_dir, g); !st.ok()) {
    return st;
  }
  const CpuTopology& topo = *g.topology;
  if (auto s = node["systemCpus"]) {
    auto text = r.String(s, field + ".systemCpus");
    if (!text.ok()) return text.status();
    auto set = CpuSet::Parse(*text);
    if (!set.ok()) return r.Error(s, field + ".systemCpus", Msg(set.status()));
    if (!set->IsSubsetOf(topo.OnlineCpus())) {
      return r.Error(s, field + ".systemCpus",
                     fmt::format("CPUs {} are not online CPUs of the machine (online: {})",
                                 set->Difference(topo.OnlineCpus()).ToString(),
                                 topo.OnlineCpus().ToString()));
    }
    g.system_cpus = *set;
    g.system_cpu_count = set->Size();
  }
  if (auto s = node["systemCpuCount"]) {
    if (node["systemCpus"]) {
      return r.Error(s, field + ".systemCpuCount", "give systemCpus or systemCpuCount, not both");
    }
    auto n = r.Int(s, field + ".systemCpuCount", 0, CpuSet::kMaxCpus);
    if (!n.ok()) return n.status();
    g.system_cpu_count = static_cast<int>(*n);
  }
  if (g.system_cpu_count >= topo.NumCpus()) {
    return r.Error(node, field + ".systemCpus",
                   fmt::format("{} system CPUs leave no user CPU on a machine of {} CPUs",
                               g.system_cpu_count, topo.NumCpus()));
  }
  if (auto m = node["mode"]) {
    auto st = ParseEnum<NodeMode>(r, m, field + ".mode",
                                  {{"allocatable", NodeMode::kAllocatable},
                                   {"isolated", NodeMode::kIsolated}},
                                  g.mode);
    if (!st.ok()) return st;
  }
  if (auto p = node["topologyPolicy"]) {
    auto st = ParseEnum<TopologyPolicy>(r, p, field + ".topologyPolicy",
                                        {{"none", TopologyPolicy::kNone},
                                         {"best-effort", TopologyPolicy::kBestEffort},
                                         {"restricted", TopologyPolicy::kRestricted},
                                         {"single-numa-node", TopologyPolicy::kSingleNumaNode}},
                                        g.topology_policy);
    if (!st.ok()) return st;
  }
  if (auto s = node["topologyScope"]) {
    auto st = ParseEnum<TopologyScope>(
        r, s, field + ".topologyScope",
        {{"container", TopologyScope::kContainer}, {"pod", TopologyScope::kPod}},
        g.topology_scope);
    if (!st.ok()) return st;
  }
  if (auto s = node["numaStrategy"]) {
    auto st = ParseEnum<NumaStrategy>(r, s, field + ".numaStrategy",
                                      {{"pack", NumaStrategy::kMostAllocated},
                                       {"spread", NumaStrategy::kLeastAllocated},
                                       {"most-allocated", NumaStrategy::kMostAllocated},
                                       {"least-allocated", NumaStrategy::kLeastAllocated},
                                       {"nearest", NumaStrategy::kNearest}},
                                      g.numa_strategy);
    if (!st.ok()) return st;
  }
  if (auto b = node["bindPolicy"]) {
    auto st = ParseEnum<BindPolicy>(r, b, field + ".bindPolicy",
                                    {{"packed", BindPolicy::kPacked},
                                     {"full-cores", BindPolicy::kFullCores},
                                     {"spread-cores", BindPolicy::kSpreadCores}},
                                    g.bind_policy);
    if (!st.ok()) return st;
  }
  if (auto l = node["labels"]) {
    auto labels = r.StringMap(l, field + ".labels");
    if (!labels.ok()) return labels.status();
    g.labels = *labels;
  }
  if (auto t = node["taints"]) {
    if (auto st = r.CheckSequence(t, field + ".taints"); !st.ok()) return st;
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string tf = fmt::format("{}.taints[{}]", field, i);
      if (auto st = r.CheckMap(t[i], tf, {"key", "value", "effect"}); !st.ok()) return st;
      sched::Taint taint;
      if (!t[i]["key"]) return r.Error(t[i], tf + ".key", "required");
      auto key = r.String(t[i]["key"], tf + ".key");
      if (!key.ok()) return key.status();
      taint.key = *key;
      if (auto v = t[i]["value"]) {
        auto value = r.String(v, tf + ".value");
        if (!value.ok()) return value.status();
        taint.value = *value;
      }
      if (!t[i]["effect"]) return r.Error(t[i], tf + ".effect", "required");
      auto effect_text = r.String(t[i]["effect"], tf + ".effect");
      if (!effect_text.ok()) return effect_text.status();
      auto effect = ParseEffect(*effect_text);
      if (!effect.ok()) return r.Error(t[i]["effect"], tf + ".effect", Msg(effect.status()));
      taint.effect = *effect;
      g.taints.push_back(std::move(taint));
    }
  }
  g.memory_bytes = DefaultMemory(topo);
  if (auto m = node["memory"]) {
    auto mem = r.Memory(m, field + ".memory");
    if (!mem.ok()) return mem.status();
    g.memory_bytes = *mem;
  }
  if (auto m = node["maxPods"]) {
    auto n = r.Int(m, field + ".maxPods", 1, 100000);
    if (!n.ok()) return n.status();
    g.max_pods = *n;
  }
  if (auto m = node["memoryManager"]) {
    if (auto st = ParseMemoryManager(r, m, field + ".memoryManager", g); !st.ok()) return st;
  }
  if (auto d = node["devices"]) {
    if (auto st = ParseDevices(r, d, field + ".devices", g); !st.ok()) return st;
  }
  return g;
}

}  // namespace

int ClusterSpec::TotalNodes() const {
  int n = 0;
  for (const NodeGroupSpec& g : groups) n += g.count;
  return n;
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

absl::StatusOr<CpuTopology> PresetTopology(std::string_view name) {
  for (const Preset& p : kPresets) {
    if (name != p.name) continue;
    auto topo = DiscoverSynthetic(p.synthetic, CpuNumbering::kLinux);
    if (!topo.ok()) return topo.status();
    return ApplyNumaSplit(*topo, p.split);
  }
  std::string known;
  for (const Preset& p : kPresets) known += fmt::format("{}{}", known.empty() ? "" : ", ", p.name);
  return absl::NotFoundError(
      fmt::format("unknown preset {:?} (known presets: {})", std::string(name), known));
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::ErrnoToStatus(errno, fmt::format("{}: cannot open file", path));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

absl::StatusOr<ClusterSpec> ParseClusterSpec(std::string_view yaml, std::string_view file_name) {
  YamlReader r{std::string(file_name)};
  auto doc = r.Load(yaml);
  if (!doc.ok()) return doc.status();
  if (auto st = r.CheckMap(*doc, "cluster", {"nodeGroups"}); !st.ok()) return st;
  const YAML::Node groups = (*doc)["nodeGroups"];
  if (!groups) return r.Error(*doc, "nodeGroups", "required");
  if (auto st = r.CheckSequence(groups, "nodeGroups"); !st.ok()) return st;
  const std::string base_dir =
      std::filesystem::path(std::string(file_name)).parent_path().string();
  ClusterSpec spec;
  std::set<std::string> names;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string field = fmt::format("nodeGroups[{}]", i);
    auto g = ParseGroup(r, groups[i], field, base_dir);
    if (!g.ok()) return g.status();
    if (!names.insert(g->name).second) {
      return r.Error(groups[i]["name"], field + ".name",
                     fmt::format("duplicate group name {:?}", g->name));
    }
    spec.groups.push_back(*std::move(g));
  }
  if (spec.TotalNodes() == 0) return r.Error(groups, "nodeGroups", "the cluster has no node");
  return spec;
}

absl::StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseClusterSpec(*text, path);
}

absl::StatusOr<NodeGroupSpec> ShapeForCpuCount(int cpus) {
  if (cpus < 1) {
    return absl::InvalidArgumentError(fmt::format("a node needs at least 1 CPU, not {}", cpus));
  }
  NodeGroupSpec g;
  for (const Preset& p : kPresets) {
    auto topo = PresetTopology(p.name);
    if (!topo.ok()) return topo.status();
    if (topo->NumCpus() == cpus) {
      g.topology = std::make_shared<const CpuTopology>(*std::move(topo));
      g.shape = fmt::format("preset {}", p.name);
      return g;
    }
  }
  std::string synthetic;
  if (cpus % 4 == 0 && cpus >= 32) {
    synthetic = fmt::format("package:2 core:{} pu:2", cpus / 4);
  } else if (cpus % 2 == 0) {
    synthetic = fmt::format("package:1 core:{} pu:2", cpus / 2);
  } else {
    synthetic = fmt::format("package:1 core:{} pu:1", cpus);
  }
  auto topo = DiscoverSynthetic(synthetic, CpuNumbering::kLinux);
  if (!topo.ok()) return topo.status();
  auto split = ApplyNumaSplit(*topo, {NumaSplit::Mode::kPerSocket, 1});
  if (!split.ok()) return split.status();
  g.topology = std::make_shared<const CpuTopology>(*std::move(split));
  g.shape = "synthetic " + synthetic;
  return g;
}

absl::StatusOr<ClusterSpec> ParseNodeListCsv(std::string_view csv, std::string_view file_name,
                                             const NodeGroupSpec& defaults) {
  auto table = ParseCsv(csv, file_name);
  if (!table.ok()) return table.status();
  auto cpu_col = table->Column("cpu_milli");
  if (!cpu_col.ok()) return cpu_col.status();
  auto mem_col = table->Column("memory_mib");
  if (!mem_col.ok()) return mem_col.status();
  // (cpus, memory MiB) -> index in spec.groups, in order of first appearance.
  std::map<std::pair<int64_t, int64_t>, size_t> group_of;
  std::map<int64_t, NodeGroupSpec> shape_of;  // cpus -> shape, computed once
  ClusterSpec spec;
  for (const CsvTable::Row& row : table->rows) {
    auto milli = table->Int(row, *cpu_col, kMaxCpuMilli);
    if (!milli.ok()) return milli.status();
    auto mib = table->Int(row, *mem_col, kMaxMemoryMib);
    if (!mib.ok()) return mib.status();
    const int64_t cpus = *milli / 1000;
    if (cpus < 1 || cpus > 4096) {
      return table->Error(row, "cpu_milli",
                          fmt::format("{} is not a node size between 1000 and 4096000", *milli));
    }
    if (*mib < 0) return table->Error(row, "memory_mib", "negative");
    const auto key = std::make_pair(cpus, *mib);
    auto it = group_of.find(key);
    if (it != group_of.end()) {
      ++spec.groups[it->second].count;
      continue;
    }
    auto shape = shape_of.find(cpus);
    if (shape == shape_of.end()) {
      auto s = ShapeForCpuCount(static_cast<int>(cpus));
      if (!s.ok()) return table->Error(row, "cpu_milli", Msg(s.status()));
      shape = shape_of.emplace(cpus, *std::move(s)).first;
    }
    NodeGroupSpec g = defaults;
    g.name = fmt::format("c{}-m{}", cpus, *mib);
    g.count = 1;
    g.topology = shape->second.topology;
    g.shape = shape->second.shape;
    g.memory_bytes = *mib * 1024 * 1024;
    g.system_cpus.reset();
    if (g.system_cpu_count >= g.topology->NumCpus()) g.system_cpu_count = 0;
    group_of.emplace(key, spec.groups.size());
    spec.groups.push_back(std::move(g));
  }
  if (spec.groups.empty()) {
    return absl::InvalidArgumentError(fmt::format("{}: no node rows", file_name));
  }
  return spec;
}

absl::StatusOr<ClusterSpec> LoadNodeListCsv(const std::string& path,
                                            const NodeGroupSpec& defaults) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseNodeListCsv(*text, path, defaults);
}

}  // namespace huygens::sim

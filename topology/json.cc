#include "topology/json.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "topology/json_fields.h"

namespace huygens {
namespace {

using json_fields::Child;
using json_fields::Element;
using json_fields::FieldError;
using json_fields::Find;
using nlohmann::json;

// Topology ids (core, cluster, die, socket, NUMA node, L3 group) index per-id tables downstream
// (NodeState, the allocator's index), so each is bounded as a CPU id is: below
// CpuSet::kMaxCpus, the largest NR_CPUS Linux distributions ship (MAX_NUMNODES is smaller).
// An NRT naming core 2147483647 is then one bad node, not a scheduler out of memory.
constexpr uint64_t kMaxNumaId = CpuSet::kMaxCpus - 1;

// `id` (read at path.key) is -1 (unknown) or a bounded topology id.
absl::Status CheckTopologyId(int id, std::string_view path, std::string_view key) {
  if (id >= -1 && id < CpuSet::kMaxCpus) return absl::OkStatus();
  return FieldError(Child(path, key), fmt::format("{} is outside [0, {})", id, CpuSet::kMaxCpus));
}

json DistancesToJson(const std::map<int, int>& distances) {
  json out = json::object();
  for (const auto& [to, d] : distances) out[std::to_string(to)] = d;
  return out;
}

// {"<node id>": distance, ...} at `path`.
absl::StatusOr<std::map<int, int>> ReadDistanceRow(const json& j, std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  std::map<int, int> row;
  for (const auto& [key, value] : j.items()) {
    const std::string field = Child(path, key);
    HUYGENS_ASSIGN_OR_RETURN(const uint64_t to,
                             json_fields::ReadDecimalKey(key, field, kMaxNumaId));
    HUYGENS_ASSIGN_OR_RETURN(const int d, json_fields::ReadInt(value, field));
    row[static_cast<int>(to)] = d;
  }
  return row;
}

// An integer field with a default when absent.
absl::StatusOr<int> IntOr(const json& obj, std::string_view path, std::string_view key,
                          int fallback) {
  const json* v = Find(obj, key);
  if (v == nullptr) return fallback;
  return json_fields::ReadInt(*v, Child(path, key));
}

absl::StatusOr<bool> BoolOr(const json& obj, std::string_view path, std::string_view key,
                            bool fallback) {
  const json* v = Find(obj, key);
  if (v == nullptr) return fallback;
  return json_fields::ReadBool(*v, Child(path, key));
}

// Reads the optional cpu-list field `key` into `out`; leaves `out` alone when absent.
absl::Status ReadOptionalCpuList(const json& obj, std::string_view path, std::string_view key,
                                 CpuSet& out) {
  const json* v = Find(obj, key);
  if (v == nullptr) return absl::OkStatus();
  HUYGENS_ASSIGN_OR_RETURN(out, json_fields::ReadCpuList(*v, Child(path, key)));
  return absl::OkStatus();
}

absl::StatusOr<CpuInfo> ReadCpu(const json& j, std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      j, path,
      {"id", "core", "cluster", "die", "socket", "numa", "l3", "online", "isolated"}));
  const json* id = Find(j, "id");
  if (id == nullptr) return FieldError(Child(path, "id"), "missing");
  CpuInfo c;
  HUYGENS_ASSIGN_OR_RETURN(c.id, json_fields::ReadInt(*id, Child(path, "id")));
  HUYGENS_ASSIGN_OR_RETURN(c.core, IntOr(j, path, "core", -1));
  HUYGENS_ASSIGN_OR_RETURN(c.socket, IntOr(j, path, "socket", -1));
  HUYGENS_ASSIGN_OR_RETURN(c.numa, IntOr(j, path, "numa", -1));
  HUYGENS_ASSIGN_OR_RETURN(c.cluster, IntOr(j, path, "cluster", c.core));
  HUYGENS_ASSIGN_OR_RETURN(c.die, IntOr(j, path, "die", c.socket));
  HUYGENS_ASSIGN_OR_RETURN(c.l3, IntOr(j, path, "l3", c.socket));
  for (const auto& [key, value] : {std::pair{"core", c.core}, std::pair{"socket", c.socket}, std::pair{"numa", c.numa},
                                   std::pair{"cluster", c.cluster}, std::pair{"die", c.die}, std::pair{"l3", c.l3}}) {
    HUYGENS_RETURN_IF_ERROR(CheckTopologyId(value, path, key));
  }
  HUYGENS_ASSIGN_OR_RETURN(c.online, BoolOr(j, path, "online", true));
  HUYGENS_ASSIGN_OR_RETURN(c.isolated, BoolOr(j, path, "isolated", false));
  return c;
}

absl::StatusOr<NumaNode> ReadNumaNode(const json& j, std::string_view path,
                                      const std::map<int, CpuSet>& cpus_of_node) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      j, path, {"id", "cpus", "memoryBytes", "hugepages", "distances"}));
  const json* id = Find(j, "id");
  if (id == nullptr) return FieldError(Child(path, "id"), "missing");
  NumaNode n;
  HUYGENS_ASSIGN_OR_RETURN(n.id, json_fields::ReadInt(*id, Child(path, "id")));
  if (n.id < 0 || n.id >= CpuSet::kMaxCpus) {
    return FieldError(Child(path, "id"), fmt::format("{} is outside [0, {})", n.id, CpuSet::kMaxCpus));
  }
  auto derived = cpus_of_node.find(n.id);
  n.cpus = derived == cpus_of_node.end() ? CpuSet() : derived->second;
  if (const json* cpus = Find(j, "cpus")) {
    HUYGENS_ASSIGN_OR_RETURN(const CpuSet listed,
                             json_fields::ReadCpuList(*cpus, Child(path, "cpus")));
    if (listed != n.cpus) {
      return FieldError(Child(path, "cpus"),
                        fmt::format("{:?} differs from the CPUs whose numa is {} ({:?})",
                                    listed.ToString(), n.id, n.cpus.ToString()));
    }
  }
  if (const json* memory = Find(j, "memoryBytes")) {
    HUYGENS_ASSIGN_OR_RETURN(n.memory_bytes,
                             json_fields::ReadUint64(*memory, Child(path, "memoryBytes")));
  }
  if (const json* hugepages = Find(j, "hugepages")) {
    const std::string hp_path = Child(path, "hugepages");
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(*hugepages, hp_path));
    for (const auto& [key, value] : hugepages->items()) {
      const std::string field = Child(hp_path, key);
      HUYGENS_ASSIGN_OR_RETURN(
          const uint64_t size,
          json_fields::ReadDecimalKey(key, field, std::numeric_limits<uint64_t>::max()));
      HUYGENS_ASSIGN_OR_RETURN(n.hugepages[size], json_fields::ReadUint64(value, field));
    }
  }
  if (const json* distances = Find(j, "distances")) {
    HUYGENS_ASSIGN_OR_RETURN(n.distances,
                             ReadDistanceRow(*distances, Child(path, "distances")));
  }
  return n;
}

absl::StatusOr<MachineCpus> ReadMachine(const json& j, std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      j, path, {"possible", "present", "isolated", "nohzFull", "isolcpusFlags"}));
  MachineCpus m;
  HUYGENS_RETURN_IF_ERROR(ReadOptionalCpuList(j, path, "possible", m.possible));
  HUYGENS_RETURN_IF_ERROR(ReadOptionalCpuList(j, path, "present", m.present));
  HUYGENS_RETURN_IF_ERROR(ReadOptionalCpuList(j, path, "isolated", m.isolated));
  HUYGENS_RETURN_IF_ERROR(ReadOptionalCpuList(j, path, "nohzFull", m.nohz_full));
  if (const json* flags = Find(j, "isolcpusFlags")) {
    const std::string flags_path = Child(path, "isolcpusFlags");
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*flags, flags_path));
    for (size_t i = 0; i < flags->size(); ++i) {
      HUYGENS_ASSIGN_OR_RETURN(std::string flag,
                               json_fields::ReadString((*flags)[i], Element(flags_path, i)));
      m.isolcpus_flags.push_back(std::move(flag));
    }
  }
  return m;
}

}  // namespace

json ToJson(const CpuTopology& t) {
  json cpus = json::array();
  for (const CpuInfo& c : t.Cpus()) {
    cpus.push_back({{"id", c.id},
                    {"core", c.core},
                    {"cluster", c.cluster},
                    {"die", c.die},
                    {"socket", c.socket},
                    {"numa", c.numa},
                    {"l3", c.l3},
                    {"online", c.online},
                    {"isolated", c.isolated}});
  }
  json nodes = json::array();
  for (const NumaNode& n : t.NumaNodes()) {
    json hugepages = json::object();
    for (const auto& [size, count] : n.hugepages) hugepages[std::to_string(size)] = count;
    nodes.push_back({{"id", n.id},
                     {"cpus", n.cpus.ToString()},
                     {"memoryBytes", n.memory_bytes},
                     {"hugepages", std::move(hugepages)},
                     {"distances", DistancesToJson(n.distances)}});
  }
  const MachineCpus& m = t.Machine();
  json machine = {{"possible", m.possible.ToString()},
                  {"present", m.present.ToString()},
                  {"isolated", m.isolated.ToString()},
                  {"nohzFull", m.nohz_full.ToString()},
                  {"isolcpusFlags", m.isolcpus_flags}};
  return {{"version", kTopologyJsonVersion},
          {"cpus", std::move(cpus)},
          {"numaNodes", std::move(nodes)},
          {"machine", std::move(machine)}};
}

std::string ToJsonString(const CpuTopology& t, int indent) { return ToJson(t).dump(indent); }

absl::StatusOr<CpuTopology> TopologyFromJson(const json& doc) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(doc, "topology JSON"));
  const json* version = Find(doc, "version");
  if (version != nullptr) {
    HUYGENS_ASSIGN_OR_RETURN(const int v, json_fields::ReadInt(*version, "version"));
    if (v != kTopologyJsonVersion) {
      return FieldError("version", fmt::format("unsupported version {} (this reader knows {})",
                                               v, kTopologyJsonVersion));
    }
    HUYGENS_RETURN_IF_ERROR(
        json_fields::CheckKnownKeys(doc, "", {"version", "cpus", "numaNodes", "machine"}));
  } else {
    HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
        doc, "", {"cpus", "numaNodes", "machine", "distances"}));
  }

  const json* cpus_json = Find(doc, "cpus");
  if (cpus_json == nullptr) return FieldError("cpus", "missing");
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*cpus_json, "cpus"));
  std::vector<CpuInfo> cpus;
  cpus.reserve(cpus_json->size());
  std::map<int, CpuSet::Builder> cpus_of_node;
  for (size_t i = 0; i < cpus_json->size(); ++i) {
    const std::string path = Element("cpus", i);
    HUYGENS_ASSIGN_OR_RETURN(CpuInfo c, ReadCpu((*cpus_json)[i], path));
    if (c.id < 0 || c.id >= CpuSet::kMaxCpus) {
      return FieldError(Child(path, "id"),
                        fmt::format("cpu id {} is outside [0, {})", c.id, CpuSet::kMaxCpus));
    }
    if (c.numa >= 0) cpus_of_node[c.numa].Add(c.id);
    cpus.push_back(c);
  }
  std::map<int, CpuSet> node_cpus;
  for (const auto& [id, b] : cpus_of_node) node_cpus.emplace(id, b.Build());

  std::vector<NumaNode> nodes;
  const json* nodes_json = Find(doc, "numaNodes");
  if (nodes_json != nullptr) {
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*nodes_json, "numaNodes"));
    for (size_t i = 0; i < nodes_json->size(); ++i) {
      HUYGENS_ASSIGN_OR_RETURN(
          NumaNode n, ReadNumaNode((*nodes_json)[i], Element("numaNodes", i), node_cpus));
      nodes.push_back(std::move(n));
    }
  } else if (version != nullptr) {
    return FieldError("numaNodes", "missing (required with \"version\")");
  }

  // Minimal form: a distance matrix at the top level, keyed by NUMA node id.
  if (const json* matrix = Find(doc, "distances")) {
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(*matrix, "distances"));
    std::map<int, std::map<int, int>> rows;
    for (const auto& [key, value] : matrix->items()) {
      const std::string path = Child("distances", key);
      HUYGENS_ASSIGN_OR_RETURN(const uint64_t from,
                               json_fields::ReadDecimalKey(key, path, kMaxNumaId));
      HUYGENS_ASSIGN_OR_RETURN(rows[static_cast<int>(from)], ReadDistanceRow(value, path));
    }
    if (nodes_json != nullptr) {
      // Given nodes: each row belongs to a listed node without its own distances.
      for (auto& [from, row] : rows) {
        auto it = std::find_if(nodes.begin(), nodes.end(),
                               [from = from](const NumaNode& n) { return n.id == from; });
        if (it == nodes.end()) {
          return FieldError(Child("distances", std::to_string(from)),
                            fmt::format("NUMA node {} is not in numaNodes", from));
        }
        if (!it->distances.empty()) {
          return FieldError(Child("distances", std::to_string(from)),
                            "NUMA node also has numaNodes[].distances; give one or the other");
        }
        it->distances = std::move(row);
      }
    } else {
      // Derived nodes: every node named by the matrix exists (possibly without CPUs).
      for (auto& [from, row] : rows) node_cpus.try_emplace(from);
      for (auto& [id, cpus_in] : node_cpus) {
        NumaNode n{.id = id, .cpus = cpus_in, .memory_bytes = 0, .hugepages = {},
                   .distances = {}};
        if (auto it = rows.find(id); it != rows.end()) n.distances = std::move(it->second);
        nodes.push_back(std::move(n));
      }
    }
  } else if (nodes_json == nullptr) {
    for (const auto& [id, cpus_in] : node_cpus) {
      nodes.push_back(
          NumaNode{.id = id, .cpus = cpus_in, .memory_bytes = 0, .hugepages = {}, .distances = {}});
    }
  }

  MachineCpus machine;
  if (const json* m = Find(doc, "machine")) {
    HUYGENS_ASSIGN_OR_RETURN(machine, ReadMachine(*m, "machine"));
  }

  absl::StatusOr<CpuTopology> t =
      CpuTopology::Create(std::move(cpus), std::move(nodes), std::move(machine));
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("topology JSON: {}", std::string(t.status().message())));
  }
  return t;
}

absl::StatusOr<CpuTopology> TopologyFromJson(std::string_view text) {
  HUYGENS_ASSIGN_OR_RETURN(const json doc, json_fields::ParseJson(text, "topology JSON"));
  return TopologyFromJson(doc);
}

}  // namespace huygens

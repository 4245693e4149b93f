#include "cmd/allocate/batch.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <vector>

#include "alloc/device_manager.h"
#include "alloc/hints.h"
#include "alloc/memory_manager.h"
#include "alloc/merge.h"
#include "alloc/pod.h"
#include "base/quantity.h"
#include "alloc/static_policy.h"
#include "alloc/take.h"
#include "fmt/format.h"
#include "node/kubelet_checkpoint.h"
#include "topology/json.h"
#include "topology/json_fields.h"

namespace huygens {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using json_fields::Child;
using json_fields::Element;
using json_fields::FieldError;
using json_fields::Find;

// Largest NUMA node id a request may name (the kernel's MAX_NUMNODES is at most 1024).
constexpr uint64_t kMaxNumaId = 1023;
// Deepest nesting of arrays and objects a request may have (the deepest valid one has 4).
constexpr int kMaxNesting = 32;

const char* KindOf(const absl::Status& s) {
  if (IsSmtAlignmentError(s)) return "smt-alignment";
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
      return "invalid";
    case absl::StatusCode::kNotFound:
      return "not-found";
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kFailedPrecondition:
      return "unavailable";
    default:
      return "internal";
  }
}

// Deepest nesting of JSON arrays and objects in `text`, outside strings; stops counting past
// `limit`. (The JSON library recurses when writing a value, so depth is bounded up front.)
int NestingDepth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// Prefixes a status message with a field path, keeping its code.
absl::Status InField(std::string_view path, const absl::Status& s) {
  return absl::Status(s.code(), fmt::format("{}: {}", path, std::string(s.message())));
}

// ---- Field readers (absent optional fields keep the caller's default) -----------------------

absl::StatusOr<const json*> Required(const json& obj, std::string_view key) {
  const json* j = Find(obj, key);
  if (j == nullptr) return FieldError(key, "missing");
  return j;
}

absl::StatusOr<int> ReadNonNegative(const json& j, std::string_view path) {
  HUYGENS_ASSIGN_OR_RETURN(const int n, json_fields::ReadInt(j, path));
  if (n < 0) return FieldError(path, fmt::format("{} is negative", n));
  return n;
}

absl::StatusOr<int> NumCpus(const json& req) {
  HUYGENS_ASSIGN_OR_RETURN(const json* j, Required(req, "numCpus"));
  return ReadNonNegative(*j, "numCpus");
}

// A cpu-list field; absent (or null) gives `fallback`.
absl::StatusOr<CpuSet> CpuListOr(const json& obj, std::string_view key, const CpuSet& fallback) {
  const json* j = Find(obj, key);
  if (j == nullptr || j->is_null()) return fallback;
  return json_fields::ReadCpuList(*j, key);
}

absl::StatusOr<bool> BoolOr(const json& obj, std::string_view key, std::string_view path,
                            bool fallback) {
  const json* j = Find(obj, key);
  if (j == nullptr) return fallback;
  return json_fields::ReadBool(*j, Child(path, key));
}

// kubelet's option maps are text; JSON booleans and integers are accepted and written as text.
absl::StatusOr<std::map<std::string, std::string>> OptionMap(const json& obj,
                                                             std::string_view key) {
  std::map<std::string, std::string> out;
  const json* j = Find(obj, key);
  if (j == nullptr) return out;
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(*j, key));
  for (const auto& [name, value] : j->items()) {
    if (value.is_string()) {
      out[name] = value.get<std::string>();
    } else if (value.is_boolean() || value.is_number_integer()) {
      out[name] = value.dump();
    } else {
      return FieldError(Child(key, name), fmt::format("expected a string, got {}",
                                                      json_fields::TypeName(value)));
    }
  }
  return out;
}

// A list of NUMA node ids, sorted; duplicates are an error.
absl::StatusOr<std::vector<int>> NumaList(const json& j, std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(j, path));
  std::vector<int> ids;
  for (size_t i = 0; i < j.size(); ++i) {
    HUYGENS_ASSIGN_OR_RETURN(const int id, json_fields::ReadInt(j[i], Element(path, i)));
    if (id < 0 || static_cast<uint64_t>(id) > kMaxNumaId) {
      return FieldError(Element(path, i),
                        fmt::format("NUMA node id {} is outside [0, {}]", id, kMaxNumaId));
    }
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  if (auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end()) {
    return FieldError(path, fmt::format("NUMA node {} is listed twice", *dup));
  }
  return ids;
}

// The request's required "numaNodes" (NumaList).
absl::StatusOr<std::vector<int>> RequiredNumaNodes(const json& req) {
  HUYGENS_ASSIGN_OR_RETURN(const json* nodes, Required(req, "numaNodes"));
  return NumaList(*nodes, "numaNodes");
}

// A topology hint: {"numaNodes":[...] | null, "preferred":bool}.
absl::StatusOr<TopologyHint> ReadHint(const json& j, std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(j, path, {"numaNodes", "preferred"}));
  TopologyHint hint;
  if (const json* nodes = Find(j, "numaNodes"); nodes != nullptr && !nodes->is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(hint.numa_nodes, NumaList(*nodes, Child(path, "numaNodes")));
  }
  HUYGENS_ASSIGN_OR_RETURN(hint.preferred, BoolOr(j, "preferred", path, false));
  return hint;
}

ojson HintJson(const TopologyHint& h) {
  ojson out;
  out["numaNodes"] = h.numa_nodes.empty() ? ojson(nullptr) : ojson(h.numa_nodes);
  out["preferred"] = h.preferred;
  return out;
}

// A NUMA distance matrix {"0":{"0":10,"1":21}, ...}.
absl::StatusOr<std::map<int, std::map<int, int>>> Distances(const json& j,
                                                            std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  std::map<int, std::map<int, int>> out;
  for (const auto& [from_key, row] : j.items()) {
    const std::string row_path = Child(path, from_key);
    HUYGENS_ASSIGN_OR_RETURN(const uint64_t from,
                             json_fields::ReadDecimalKey(from_key, row_path, kMaxNumaId));
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(row, row_path));
    for (const auto& [to_key, value] : row.items()) {
      const std::string cell = Child(row_path, to_key);
      HUYGENS_ASSIGN_OR_RETURN(const uint64_t to,
                               json_fields::ReadDecimalKey(to_key, cell, kMaxNumaId));
      HUYGENS_ASSIGN_OR_RETURN(const int d, json_fields::ReadInt(value, cell));
      if (d <= 0) return FieldError(cell, fmt::format("distance {} is not positive", d));
      out[static_cast<int>(from)][static_cast<int>(to)] = d;
    }
  }
  return out;
}

// A CPU quantity: a string ("4", "500m") or a JSON number of CPUs (4, 0.5).
absl::StatusOr<int64_t> CpuMilli(const json& j, std::string_view path) {
  absl::StatusOr<int64_t> milli;
  if (j.is_string()) {
    milli = ParseCpuMilli(j.get<std::string>());
  } else if (j.is_number_unsigned() || j.is_number_integer()) {
    milli = ParseCpuMilli(j.dump());
  } else if (j.is_number_float()) {
    milli = ParseCpuMilli(fmt::format("{:.6f}", j.get<double>()));
  } else {
    return FieldError(path, fmt::format("expected a CPU quantity, got {}",
                                        json_fields::TypeName(j)));
  }
  if (!milli.ok()) return InField(path, milli.status());
  return milli;
}

// ---- The pod of static-allocate -------------------------------------------------------------

// A memory quantity: a string ("1Gi", "512Mi", "1073741824") or a JSON integer of bytes.
absl::StatusOr<uint64_t> MemoryBytes(const json& j, std::string_view path) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (!j.is_string()) {
    return FieldError(path, fmt::format("expected a memory quantity, got {}",
                                        json_fields::TypeName(j)));
  }
  absl::StatusOr<int64_t> bytes = ParseMemoryBytes(j.get<std::string>());
  if (!bytes.ok()) return InField(path, bytes.status());
  return static_cast<uint64_t>(*bytes);
}

bool IsHugepagesKey(std::string_view key) {
  return key.size() > 10 && key.starts_with("hugepages-");
}

// The memory fields of a container: memoryRequest, memoryLimit, hugepages-<size>.
bool HasMemoryFields(const json& container) {
  if (!container.is_object()) return false;
  for (const auto& [key, value] : container.items()) {
    if (key == "memoryRequest" || key == "memoryLimit" || IsHugepagesKey(key)) return true;
  }
  return false;
}

absl::StatusOr<ContainerSpec> ReadContainer(const json& j, std::string_view path, bool init) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  static constexpr std::string_view kKnown[] = {"name", "cpuRequest", "cpuLimit",
                                                "restartPolicy", "memoryRequest", "memoryLimit"};
  for (const auto& [key, value] : j.items()) {
    if (std::ranges::find(kKnown, key) == std::end(kKnown) && !IsHugepagesKey(key)) {
      return FieldError(Child(path, key), "unknown field");
    }
  }
  ContainerSpec c;
  c.init = init;
  HUYGENS_ASSIGN_OR_RETURN(const json* name, Required(j, "name"));
  HUYGENS_ASSIGN_OR_RETURN(c.name, json_fields::ReadString(*name, Child(path, "name")));
  if (const json* r = Find(j, "cpuRequest")) {
    HUYGENS_ASSIGN_OR_RETURN(c.cpu_request_milli, CpuMilli(*r, Child(path, "cpuRequest")));
  }
  if (const json* l = Find(j, "cpuLimit")) {
    HUYGENS_ASSIGN_OR_RETURN(c.cpu_limit_milli, CpuMilli(*l, Child(path, "cpuLimit")));
  }
  for (const auto& [key, dest] : {std::pair{"memoryRequest", &c.memory_request_bytes},
                                  {"memoryLimit", &c.memory_limit_bytes}}) {
    if (const json* m = Find(j, key)) {
      HUYGENS_ASSIGN_OR_RETURN(const uint64_t bytes, MemoryBytes(*m, Child(path, key)));
      *dest = static_cast<int64_t>(std::min<uint64_t>(bytes, uint64_t{1} << 62));
    }
  }
  for (const auto& [key, value] : j.items()) {
    if (!IsHugepagesKey(key)) continue;
    HUYGENS_ASSIGN_OR_RETURN(const uint64_t bytes, MemoryBytes(value, Child(path, key)));
    c.hugepages_request_bytes[key] = static_cast<int64_t>(std::min<uint64_t>(bytes, uint64_t{1} << 62));
  }
  if (const json* p = Find(j, "restartPolicy"); p != nullptr && !p->is_null()) {
    const std::string p_path = Child(path, "restartPolicy");
    HUYGENS_ASSIGN_OR_RETURN(const std::string policy, json_fields::ReadString(*p, p_path));
    if (policy != "Always") {
      return FieldError(p_path, "the only container restart policy is \"Always\"");
    }
    if (!init) return FieldError(p_path, "only init containers have a restart policy");
    c.restartable = true;
  }
  return c;
}

// A pod whose containers give no memory (no memoryRequest, memoryLimit or hugepages-<size> on
// any of them) has its memory faked: `qos` stands for the class kubelet computes from cpu and
// memory together. Each container gets the memory request/limit (kFakeMemoryBytes, the 1Gi the
// oracle gives) that makes QosOf give that class (Guaranteed: equal; Burstable: a request
// only; BestEffort: none), then the class is checked against the CPU fields. Without `qos`,
// memory mirrors the CPU fields (the class they give). A pod that gives memory keeps it; `qos`,
// when given, is then checked against cpu and memory together.
constexpr int64_t kFakeMemoryBytes = int64_t{1} << 30;

absl::Status ApplyQos(PodSpec& pod, const json* qos_json, bool memory_given) {
  std::optional<QosClass> qos;
  if (qos_json != nullptr && !qos_json->is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(const std::string name, json_fields::ReadString(*qos_json, "pod.qos"));
    for (QosClass q : {QosClass::kGuaranteed, QosClass::kBurstable, QosClass::kBestEffort}) {
      if (name == ToString(q)) qos = q;
    }
    if (!qos) {
      return FieldError("pod.qos", fmt::format("{:?} is not Guaranteed, Burstable or BestEffort",
                                               name));
    }
  }
  auto visit = [&](ContainerSpec& c) {
    const bool request = qos ? *qos != QosClass::kBestEffort : c.cpu_request_milli != 0;
    const bool limit = qos ? *qos == QosClass::kGuaranteed : c.cpu_limit_milli != 0;
    c.memory_request_bytes = request ? kFakeMemoryBytes : 0;
    c.memory_limit_bytes = limit ? kFakeMemoryBytes : 0;
  };
  if (!memory_given) {
    for (ContainerSpec& c : pod.init_containers) visit(c);
    for (ContainerSpec& c : pod.containers) visit(c);
  }
  if (qos && QosOf(pod) != *qos) {
    return FieldError("pod.qos", fmt::format("{} contradicts the containers' {} requests and "
                                             "limits (they make the pod {})",
                                             ToString(*qos), memory_given ? "cpu and memory" : "cpu",
                                             ToString(QosOf(pod))));
  }
  return absl::OkStatus();
}

absl::StatusOr<PodSpec> ReadPod(const json& j) {
  const std::string path = "pod";
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      j, path, {"uid", "qos", "initContainers", "containers", "cpuRequest", "cpuLimit"}));
  PodSpec pod;
  bool memory_given = false;
  HUYGENS_ASSIGN_OR_RETURN(const json* uid, Required(j, "uid"));
  HUYGENS_ASSIGN_OR_RETURN(pod.uid, json_fields::ReadString(*uid, "pod.uid"));
  for (const auto& [key, init] : {std::pair{"initContainers", true}, {"containers", false}}) {
    const json* list = Find(j, key);
    if (list == nullptr) continue;
    const std::string list_path = Child(path, key);
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*list, list_path));
    for (size_t i = 0; i < list->size(); ++i) {
      memory_given = memory_given || HasMemoryFields((*list)[i]);
      HUYGENS_ASSIGN_OR_RETURN(ContainerSpec c,
                               ReadContainer((*list)[i], Element(list_path, i), init));
      (init ? pod.init_containers : pod.containers).push_back(std::move(c));
    }
  }
  if (const json* r = Find(j, "cpuRequest")) {
    HUYGENS_ASSIGN_OR_RETURN(pod.pod_cpu_request_milli, CpuMilli(*r, "pod.cpuRequest"));
  }
  if (const json* l = Find(j, "cpuLimit")) {
    HUYGENS_ASSIGN_OR_RETURN(pod.pod_cpu_limit_milli, CpuMilli(*l, "pod.cpuLimit"));
  }
  HUYGENS_RETURN_IF_ERROR(ApplyQos(pod, Find(j, "qos"), memory_given));
  return pod;
}

absl::StatusOr<std::map<std::string, std::map<std::string, CpuSet>>> ReadAssignments(
    const json& j) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, "assignments"));
  std::map<std::string, std::map<std::string, CpuSet>> out;
  for (const auto& [pod, containers] : j.items()) {
    const std::string pod_path = Child("assignments", pod);
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(containers, pod_path));
    for (const auto& [container, cpus] : containers.items()) {
      HUYGENS_ASSIGN_OR_RETURN(out[pod][container],
                               json_fields::ReadCpuList(cpus, Child(pod_path, container)));
    }
  }
  return out;
}

ojson AssignmentsJson(const std::map<std::string, std::map<std::string, CpuSet>>& a) {
  ojson out = ojson::object();
  for (const auto& [pod, containers] : a) {
    ojson row = ojson::object();
    for (const auto& [container, cpus] : containers) row[container] = cpus.ToString();
    out[pod] = std::move(row);
  }
  return out;
}

// ---- Ops ------------------------------------------------------------------------------------

absl::StatusOr<ojson> Take(const json& req, const ExclusiveAllocator& machine) {
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      req, "", {"id", "op", "topology", "available", "numCpus", "options", "affinity"}));
  HUYGENS_ASSIGN_OR_RETURN(const CpuSet available,
                           CpuListOr(req, "available", machine.Topology().OnlineCpus()));
  HUYGENS_ASSIGN_OR_RETURN(const int num_cpus, NumCpus(req));
  TakeOptions options;
  options.whole_units_by_average_size = true;  // kubelet's answer, also on hybrid machines
  bool distribute = false, align_by_socket = false;
  std::optional<int> group_size;
  if (const json* o = Find(req, "options")) {
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(*o, "options"));
    HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
        *o, "options",
        {"cpuSortingStrategy", "distribute-cpus-across-numa", "cpuGroupSize",
         "prefer-align-cpus-by-uncorecache", "align-by-socket"}));
    if (const json* s = Find(*o, "cpuSortingStrategy")) {
      HUYGENS_ASSIGN_OR_RETURN(const std::string name,
                               json_fields::ReadString(*s, "options.cpuSortingStrategy"));
      if (name == "spread") {
        options.cpu_sorting_strategy = CpuSortingStrategy::kSpread;
      } else if (name != "packed") {
        return FieldError("options.cpuSortingStrategy",
                          fmt::format("{:?} is not packed or spread", name));
      }
    }
    HUYGENS_ASSIGN_OR_RETURN(distribute,
                             BoolOr(*o, "distribute-cpus-across-numa", "options", false));
    HUYGENS_ASSIGN_OR_RETURN(
        options.prefer_align_by_uncore_cache,
        BoolOr(*o, "prefer-align-cpus-by-uncorecache", "options", false));
    HUYGENS_ASSIGN_OR_RETURN(align_by_socket, BoolOr(*o, "align-by-socket", "options", false));
    if (const json* g = Find(*o, "cpuGroupSize")) {
      HUYGENS_ASSIGN_OR_RETURN(group_size, json_fields::ReadInt(*g, "options.cpuGroupSize"));
      if (*group_size < 1) {
        return FieldError("options.cpuGroupSize", fmt::format("{} is not positive", *group_size));
      }
      if (!distribute) {
        return FieldError("options.cpuGroupSize",
                          "only used with distribute-cpus-across-numa");
      }
    }
  }
  auto take = [&](const CpuSet& from, int n) {
    return distribute ? TakeByTopologyNumaDistributed(machine.Index(), from, n,
                                                      group_size.value_or(1), options)
                      : TakeByTopology(machine.Index(), from, n, options);
  };
  std::optional<TopologyHint> affinity;
  if (const json* h = Find(req, "affinity"); h != nullptr && !h->is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(affinity, ReadHint(*h, "affinity"));
  }
  absl::StatusOr<CpuSet> cpus =
      affinity.has_value() || align_by_socket
          ? TakeAligned(machine.Topology(), available.Intersection(machine.Topology().OnlineCpus()),
                        num_cpus,
                        affinity.has_value() ? std::span<const int>(affinity->numa_nodes)
                                             : std::span<const int>(),
                        align_by_socket, take)
          : take(available, num_cpus);
  if (!cpus.ok()) return cpus.status();
  ojson out;
  out["cpuset"] = cpus->ToString();
  return out;
}

absl::StatusOr<ojson> StaticAllocate(const json& req, const ExclusiveAllocator& machine) {
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      req, "", {"id", "op", "topology", "reservedCpus", "numReservedCpus", "policyOptions",
                "defaultCpuSet", "assignments", "pod", "container", "affinity"}));
  std::optional<CpuSet> reserved;
  if (const json* r = Find(req, "reservedCpus"); r != nullptr && !r->is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(reserved, json_fields::ReadCpuList(*r, "reservedCpus"));
  }
  int num_reserved = 0;
  if (const json* n = Find(req, "numReservedCpus")) {
    HUYGENS_ASSIGN_OR_RETURN(num_reserved, ReadNonNegative(*n, "numReservedCpus"));
  }
  HUYGENS_ASSIGN_OR_RETURN(const auto option_map, OptionMap(req, "policyOptions"));
  absl::StatusOr<StaticPolicyOptions> options = ParseStaticPolicyOptions(option_map);
  if (!options.ok()) return InField("policyOptions", options.status());
  absl::StatusOr<StaticPolicy> policy =
      StaticPolicy::Create(machine.Topology(), reserved, num_reserved, *options);
  if (!policy.ok()) return policy.status();

  CpuManagerState state = policy->InitialState();
  HUYGENS_ASSIGN_OR_RETURN(state.default_cpu_set,
                           CpuListOr(req, "defaultCpuSet", state.default_cpu_set));
  if (const json* a = Find(req, "assignments")) {
    HUYGENS_ASSIGN_OR_RETURN(state.assignments, ReadAssignments(*a));
  }
  HUYGENS_ASSIGN_OR_RETURN(const json* pod_json, Required(req, "pod"));
  HUYGENS_ASSIGN_OR_RETURN(const PodSpec pod, ReadPod(*pod_json));
  HUYGENS_ASSIGN_OR_RETURN(const json* container_json, Required(req, "container"));
  HUYGENS_ASSIGN_OR_RETURN(const std::string container,
                           json_fields::ReadString(*container_json, "container"));
  std::optional<TopologyHint> affinity;
  if (const json* h = Find(req, "affinity"); h != nullptr && !h->is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(affinity, ReadHint(*h, "affinity"));
  }
  absl::StatusOr<CpuSet> cpus = policy->Allocate(state, pod, container, affinity);
  if (!cpus.ok()) return cpus.status();
  ojson out;
  out["cpuset"] = cpus->ToString();
  out["defaultCpuSet"] = state.default_cpu_set.ToString();
  out["assignments"] = AssignmentsJson(state.assignments);
  return out;
}

absl::StatusOr<ojson> Hints(const json& req, const ExclusiveAllocator& machine) {
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      req, "", {"id", "op", "topology", "available", "reusable", "numCpus", "alignBySocket",
                "maxAllowableNumaNodes"}));
  HUYGENS_ASSIGN_OR_RETURN(const CpuSet available,
                           CpuListOr(req, "available", machine.Topology().OnlineCpus()));
  HUYGENS_ASSIGN_OR_RETURN(const CpuSet reusable, CpuListOr(req, "reusable", CpuSet()));
  HUYGENS_ASSIGN_OR_RETURN(const int num_cpus, NumCpus(req));
  HUYGENS_ASSIGN_OR_RETURN(const bool align_by_socket, BoolOr(req, "alignBySocket", "", false));
  int max_numa = kDefaultMaxAllowableNumaNodes;
  if (const json* m = Find(req, "maxAllowableNumaNodes")) {
    HUYGENS_ASSIGN_OR_RETURN(max_numa, json_fields::ReadInt(*m, "maxAllowableNumaNodes"));
    if (max_numa < 1) {
      return FieldError("maxAllowableNumaNodes", fmt::format("{} is not positive", max_numa));
    }
  }
  const std::map<std::string, ProviderHints> hints = CpuProviderHints(
      machine.Topology(), available, reusable, num_cpus, align_by_socket, max_numa);
  const ProviderHints& cpu = hints.at("cpu");
  ojson out;
  if (!cpu) {
    out["hints"] = nullptr;
    return out;
  }
  out["hints"] = ojson::array();
  for (const TopologyHint& h : *cpu) out["hints"].push_back(HintJson(h));
  return out;
}

absl::StatusOr<ojson> Merge(const json& req) {
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      req, "", {"id", "op", "policy", "scope", "options", "numaNodes", "distances",
                "providers"}));
  HUYGENS_ASSIGN_OR_RETURN(const json* policy_json, Required(req, "policy"));
  HUYGENS_ASSIGN_OR_RETURN(const std::string policy_name,
                           json_fields::ReadString(*policy_json, "policy"));
  const std::optional<TopologyPolicy> policy = ParseTopologyPolicy(policy_name);
  if (!policy) {
    return FieldError("policy", fmt::format("{:?} is not none, best-effort, restricted or "
                                            "single-numa-node",
                                            policy_name));
  }
  if (const json* s = Find(req, "scope")) {
    HUYGENS_ASSIGN_OR_RETURN(const std::string scope, json_fields::ReadString(*s, "scope"));
    if (!ParseTopologyScope(scope)) {
      return FieldError("scope", fmt::format("{:?} is not container or pod", scope));
    }
  }
  HUYGENS_ASSIGN_OR_RETURN(const auto option_map, OptionMap(req, "options"));
  absl::StatusOr<TopologyManagerOptions> options = ParseTopologyManagerOptions(option_map);
  if (!options.ok()) return InField("options", options.status());
  HUYGENS_ASSIGN_OR_RETURN(const std::vector<int> numa_nodes, RequiredNumaNodes(req));
  std::map<int, std::map<int, int>> distances;
  if (const json* d = Find(req, "distances")) {
    HUYGENS_ASSIGN_OR_RETURN(distances, Distances(*d, "distances"));
  }
  HUYGENS_ASSIGN_OR_RETURN(const json* providers_json, Required(req, "providers"));
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*providers_json, "providers"));
  std::vector<std::map<std::string, ProviderHints>> providers;
  for (size_t p = 0; p < providers_json->size(); ++p) {
    const std::string p_path = Element("providers", p);
    const json& provider = (*providers_json)[p];
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(provider, p_path));
    std::map<std::string, ProviderHints>& resources = providers.emplace_back();
    for (const auto& [resource, hints] : provider.items()) {
      const std::string r_path = Child(p_path, resource);
      if (hints.is_null()) {
        resources[resource] = std::nullopt;
        continue;
      }
      HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(hints, r_path));
      std::vector<TopologyHint>& list = resources[resource].emplace();
      for (size_t i = 0; i < hints.size(); ++i) {
        HUYGENS_ASSIGN_OR_RETURN(list.emplace_back(), ReadHint(hints[i], Element(r_path, i)));
      }
    }
  }
  absl::StatusOr<MergeResult> merged =
      MergeHints(*policy, *options, numa_nodes, distances, providers);
  if (!merged.ok()) return merged.status();
  ojson out;
  out["hint"] = HintJson(merged->hint);
  out["admit"] = merged->admit;
  return out;
}

// ---- The device manager op (device-hints) -------------------------------------------------

// Most NUMA nodes a device-hints request may name: kubelet visits every non-empty NUMA set.
constexpr int kMaxDeviceNumaNodes = 16;

// A NUMA node id -> device count object ("devices", "available", "reusable"); absent = none.
absl::StatusOr<NumaDeviceCounts> DeviceCountsField(const json& req, std::string_view field,
                                                   const std::vector<int>& numa_nodes) {
  NumaDeviceCounts out;
  const json* j = Find(req, field);
  if (j == nullptr || j->is_null()) return out;
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(*j, field));
  for (const auto& [key, value] : j->items()) {
    const std::string path = Child(field, key);
    int numa = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), numa);
    if (ec != std::errc() || end != key.data() + key.size() ||
        !std::binary_search(numa_nodes.begin(), numa_nodes.end(), numa)) {
      return FieldError(path, "not a NUMA node id of numaNodes");
    }
    HUYGENS_ASSIGN_OR_RETURN(const int n, json_fields::ReadInt(value, path));
    if (n < 0) return FieldError(path, fmt::format("{} is negative", n));
    out[numa] = n;
  }
  return out;
}

absl::StatusOr<ojson> DeviceHintsOp(const json& req) {
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      req, "", {"id", "op", "numaNodes", "resource", "devices", "available", "reusable",
                "request"}));
  HUYGENS_ASSIGN_OR_RETURN(const std::vector<int> numa_nodes, RequiredNumaNodes(req));
  if (numa_nodes.empty() || numa_nodes.size() > kMaxDeviceNumaNodes) {
    return FieldError("numaNodes", fmt::format("needs 1 to {} NUMA nodes", kMaxDeviceNumaNodes));
  }
  if (const json* r = Find(req, "resource")) {
    HUYGENS_RETURN_IF_ERROR(json_fields::ReadString(*r, "resource").status());
  }
  HUYGENS_ASSIGN_OR_RETURN(const NumaDeviceCounts total,
                           DeviceCountsField(req, "devices", numa_nodes));
  HUYGENS_ASSIGN_OR_RETURN(const NumaDeviceCounts available,
                           DeviceCountsField(req, "available", numa_nodes));
  HUYGENS_ASSIGN_OR_RETURN(const NumaDeviceCounts reusable,
                           DeviceCountsField(req, "reusable", numa_nodes));
  for (int numa : numa_nodes) {
    const auto at = [numa](const NumaDeviceCounts& c) {
      auto it = c.find(numa);
      return it == c.end() ? int64_t{0} : it->second;
    };
    if (at(available) + at(reusable) > at(total)) {
      return FieldError("available", fmt::format("available + reusable on NUMA node {} exceed "
                                                 "its {} devices",
                                                 numa, at(total)));
    }
  }
  HUYGENS_ASSIGN_OR_RETURN(const json* request_json, Required(req, "request"));
  HUYGENS_ASSIGN_OR_RETURN(const int request, json_fields::ReadInt(*request_json, "request"));
  if (request < 0) return FieldError("request", fmt::format("{} is negative", request));
  ojson out;
  out["hints"] = ojson::array();
  for (const TopologyHint& h : DeviceHints(numa_nodes, total, available, reusable, request)) {
    out["hints"].push_back(HintJson(h));
  }
  return out;
}

// ---- The memory manager ops (memory-allocate, memory-hints) --------------------------------

// Most NUMA nodes a memory op's machine state may have: kubelet's memory manager visits every
// non-empty NUMA set (2^n - 1) for its hints.
constexpr size_t kMaxMemoryNumaNodes = 16;

// kubelet's --reserved-memory: {"<numa>": {"memory": Q, "hugepages-2Mi": Q}}.
absl::StatusOr<ReservedMemory> ReadReservedMemory(const json& j) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, "reservedMemory"));
  ReservedMemory out;
  for (const auto& [key, resources] : j.items()) {
    const std::string path = Child("reservedMemory", key);
    HUYGENS_ASSIGN_OR_RETURN(const uint64_t numa, json_fields::ReadDecimalKey(key, path, kMaxNumaId));
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(resources, path));
    auto& row = out[static_cast<int>(numa)];
    for (const auto& [name, value] : resources.items()) {
      if (name != kMemoryResource && !IsHugepagesKey(name)) {
        return FieldError(Child(path, name), "not memory or hugepages-<size>");
      }
      HUYGENS_ASSIGN_OR_RETURN(row[name], MemoryBytes(value, Child(path, name)));
    }
  }
  return out;
}

// The state of a memory op: "machineState" and "assignments" in memory_manager_state's shape
// (read by node/kubelet_checkpoint.h), or, without a machine state, the policy's fresh one
// (kubelet's Start; assignments then are refused, as kubelet refuses them).
absl::StatusOr<MemoryManagerState> ReadMemoryState(const json& req,
                                                   const MemoryManagerPolicy& policy) {
  const json* machine = Find(req, "machineState");
  const json* assignments = Find(req, "assignments");
  const bool has_machine = machine != nullptr && !machine->is_null() && !machine->empty();
  const bool has_assignments =
      assignments != nullptr && !assignments->is_null() && !assignments->empty();
  if (!has_machine) {
    if (has_assignments) {
      return FieldError("assignments",
                        "memory assignments without a machineState (kubelet: \"machine state "
                        "can not be empty when it has memory assignments\")");
    }
    return policy.InitialState();
  }
  json doc = {{"policyName", "Static"}, {"machineState", *machine}, {"checksum", 0}};
  if (has_assignments) doc["entries"] = *assignments;
  absl::StatusOr<KubeletMemoryCheckpoint> cp = ParseKubeletMemoryCheckpoint(doc.dump());
  if (!cp.ok()) return cp.status();
  MemoryManagerState state;
  for (const auto& [id, node] : cp->machine_state) {
    if (id > 63) {
      return FieldError(Child("machineState", std::to_string(id)),
                        "NUMA node ids above 63 do not fit kubelet's NUMA bitmask");
    }
    NumaMemoryState& out = state.machine[id];
    out.number_of_assignments = node.number_of_assignments;
    out.cells = node.cells;
    for (const auto& [name, t] : node.memory_map) {
      out.memory_map[name] = {t.total, t.system_reserved, t.allocatable, t.reserved, t.free};
    }
  }
  if (state.machine.size() > kMaxMemoryNumaNodes) {
    return FieldError("machineState", fmt::format("{} NUMA nodes; the memory ops take at most {}",
                                                  state.machine.size(), kMaxMemoryNumaNodes));
  }
  // kubelet dereferences the state of every NUMA node a group or a block names.
  auto check_ids = [&](const std::vector<int>& ids, const std::string& path) -> absl::Status {
    for (int id : ids) {
      if (!state.machine.contains(id)) {
        return FieldError(path, fmt::format("NUMA node {} is not in machineState", id));
      }
    }
    return absl::OkStatus();
  };
  for (const auto& [id, node] : state.machine) {
    HUYGENS_RETURN_IF_ERROR(check_ids(
        node.cells, Child(Child("machineState", std::to_string(id)), "cells")));
  }
  for (const auto& [uid, containers] : cp->entries) {
    for (const auto& [name, blocks] : containers) {
      const std::string path = Child(Child("assignments", uid), name);
      auto& out = state.assignments[uid][name];
      for (const KubeletMemoryBlock& b : blocks) {
        HUYGENS_RETURN_IF_ERROR(check_ids(b.numa_affinity, path));
        out.push_back({b.numa_affinity, b.type, b.size});
      }
    }
  }
  return state;
}

ojson BlocksJson(std::vector<MemoryBlock> blocks) {
  std::ranges::stable_sort(blocks, {}, &MemoryBlock::type);
  ojson out = ojson::array();
  for (const MemoryBlock& b : blocks) {
    out.push_back({{"numaAffinity", b.numa_affinity}, {"type", b.type}, {"size", b.size}});
  }
  return out;
}

ojson MachineStateJson(const MemoryManagerState& state) {
  ojson out = ojson::object();
  for (const auto& [id, node] : state.machine) {
    ojson tables = ojson::object();
    for (const auto& [name, t] : node.memory_map) {
      tables[name] = {{"total", t.total}, {"systemReserved", t.system_reserved},
                      {"allocatable", t.allocatable}, {"reserved", t.reserved}, {"free", t.free}};
    }
    out[std::to_string(id)] = {{"numberOfAssignments", node.number_of_assignments},
                               {"memoryMap", std::move(tables)},
                               {"cells", node.cells}};
  }
  return out;
}

ojson MemoryAssignmentsJson(const MemoryManagerState& state) {
  ojson out = ojson::object();
  for (const auto& [uid, containers] : state.assignments) {
    ojson row = ojson::object();
    for (const auto& [name, blocks] : containers) row[name] = BlocksJson(blocks);
    out[uid] = std::move(row);
  }
  return out;
}

// A memory provider's hints: resource -> list; {} is kubelet's "no preference" (its nil map and
// its empty map alike).
ojson MemoryHintsJson(const std::map<std::string, ProviderHints>& hints) {
  ojson out = ojson::object();
  for (const auto& [name, list] : hints) {
    ojson row = ojson::array();
    if (list) {
      for (const TopologyHint& h : *list) row.push_back(HintJson(h));
    }
    out[name] = std::move(row);
  }
  return out;
}

// The policy of a memory op, its state and its pod.
struct MemoryOp {
  MemoryManagerPolicy policy;
  MemoryManagerState state;
  PodSpec pod;
};

absl::StatusOr<MemoryOp> ReadMemoryOp(const json& req, const ExclusiveAllocator& machine) {
  HUYGENS_ASSIGN_OR_RETURN(const json* reserved_json, Required(req, "reservedMemory"));
  HUYGENS_ASSIGN_OR_RETURN(ReservedMemory reserved, ReadReservedMemory(*reserved_json));
  absl::StatusOr<MemoryManagerPolicy> policy =
      MemoryManagerPolicy::Create(machine.Topology(), std::move(reserved));
  if (!policy.ok()) return policy.status();
  HUYGENS_ASSIGN_OR_RETURN(MemoryManagerState state, ReadMemoryState(req, *policy));
  if (state.machine.size() > kMaxMemoryNumaNodes) {
    return FieldError("topology", fmt::format("{} NUMA nodes; the memory ops take at most {}",
                                              state.machine.size(), kMaxMemoryNumaNodes));
  }
  HUYGENS_ASSIGN_OR_RETURN(const json* pod_json, Required(req, "pod"));
  HUYGENS_ASSIGN_OR_RETURN(PodSpec pod, ReadPod(*pod_json));
  return MemoryOp{*std::move(policy), std::move(state), std::move(pod)};
}

bool PodHasContainer(const PodSpec& pod, const std::string& name) {
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const ContainerSpec& c : *list) {
      if (c.name == name) return true;
    }
  }
  return false;
}

absl::Status ContainerNotFound(std::string_view path, const PodSpec& pod, const std::string& name) {
  return absl::NotFoundError(
      fmt::format("{}: pod {:?} has no container {:?}", path, pod.uid, name));
}

absl::StatusOr<ojson> MemoryAllocate(const json& req, const ExclusiveAllocator& machine) {
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      req, "", {"id", "op", "topology", "reservedMemory", "machineState", "assignments", "pod",
                "containers", "remove", "withHints"}));
  HUYGENS_ASSIGN_OR_RETURN(MemoryOp op, ReadMemoryOp(req, machine));
  HUYGENS_ASSIGN_OR_RETURN(const bool with_hints, BoolOr(req, "withHints", "", false));
  std::vector<std::pair<std::string, std::optional<TopologyHint>>> targets;
  HUYGENS_ASSIGN_OR_RETURN(const json* list, Required(req, "containers"));
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*list, "containers"));
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string path = Element("containers", i);
    const json& c = (*list)[i];
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(c, path));
    HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(c, path, {"name", "affinity"}));
    HUYGENS_ASSIGN_OR_RETURN(const json* name_json, Required(c, "name"));
    HUYGENS_ASSIGN_OR_RETURN(std::string name,
                             json_fields::ReadString(*name_json, Child(path, "name")));
    if (!PodHasContainer(op.pod, name)) return ContainerNotFound(path, op.pod, name);
    std::optional<TopologyHint> affinity;
    if (const json* h = Find(c, "affinity"); h != nullptr && !h->is_null()) {
      HUYGENS_ASSIGN_OR_RETURN(affinity, ReadHint(*h, Child(path, "affinity")));
    }
    targets.emplace_back(std::move(name), std::move(affinity));
  }
  if (const json* remove = Find(req, "remove")) {
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*remove, "remove"));
    for (size_t i = 0; i < remove->size(); ++i) {
      const std::string path = Element("remove", i);
      const json& r = (*remove)[i];
      HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(r, path));
      HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(r, path, {"pod", "container"}));
      HUYGENS_ASSIGN_OR_RETURN(const json* pod, Required(r, "pod"));
      HUYGENS_ASSIGN_OR_RETURN(const json* container, Required(r, "container"));
      HUYGENS_ASSIGN_OR_RETURN(const std::string uid,
                               json_fields::ReadString(*pod, Child(path, "pod")));
      HUYGENS_ASSIGN_OR_RETURN(const std::string name,
                               json_fields::ReadString(*container, Child(path, "container")));
      op.policy.RemoveContainer(op.state, uid, name);
    }
  }
  ojson results = ojson::array();
  for (const auto& [name, affinity] : targets) {
    ojson row;
    row["name"] = name;
    if (with_hints) {
      row["hints"] = MemoryHintsJson(op.policy.ContainerHints(op.state, op.pod, name));
    }
    absl::StatusOr<std::vector<MemoryBlock>> blocks =
        op.policy.Allocate(op.state, op.pod, name, affinity);
    if (blocks.ok()) {
      row["blocks"] = BlocksJson(*std::move(blocks));
    } else {
      row["error"] = std::string(blocks.status().message());
      row["kind"] = KindOf(blocks.status());
    }
    results.push_back(std::move(row));
  }
  ojson out;
  out["containers"] = std::move(results);
  out["machineState"] = MachineStateJson(op.state);
  out["assignments"] = MemoryAssignmentsJson(op.state);
  return out;
}

absl::StatusOr<ojson> MemoryHints(const json& req, const ExclusiveAllocator& machine) {
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      req, "", {"id", "op", "topology", "reservedMemory", "machineState", "assignments", "pod",
                "container", "scope"}));
  HUYGENS_ASSIGN_OR_RETURN(const MemoryOp op, ReadMemoryOp(req, machine));
  TopologyScope scope = TopologyScope::kContainer;
  if (const json* s = Find(req, "scope")) {
    HUYGENS_ASSIGN_OR_RETURN(const std::string name, json_fields::ReadString(*s, "scope"));
    const std::optional<TopologyScope> parsed = ParseTopologyScope(name);
    if (!parsed) return FieldError("scope", fmt::format("{:?} is not container or pod", name));
    scope = *parsed;
  }
  ojson out;
  if (scope == TopologyScope::kPod) {
    if (Find(req, "container") != nullptr) {
      return FieldError("container", "not used with scope pod");
    }
    out["hints"] = MemoryHintsJson(op.policy.PodHints(op.state, op.pod));
    return out;
  }
  HUYGENS_ASSIGN_OR_RETURN(const json* container_json, Required(req, "container"));
  HUYGENS_ASSIGN_OR_RETURN(const std::string container,
                           json_fields::ReadString(*container_json, "container"));
  if (!PodHasContainer(op.pod, container)) {
    return ContainerNotFound("container", op.pod, container);
  }
  out["hints"] = MemoryHintsJson(op.policy.ContainerHints(op.state, op.pod, container));
  return out;
}

// Fails on the first key of a huygens or resize request that is neither a field of every such
// request (id, op, topology, available, and the fields ReadExclusiveRequest reads) nor one of
// `op_fields` (the op's own: withinNumaNodes, podCpus, cpuset). Same error as CheckKnownKeys.
absl::Status CheckExclusiveRequestKeys(const json& req,
                                       std::initializer_list<std::string_view> op_fields) {
  static constexpr std::string_view kShared[] = {
      "id", "op", "topology", "available", "numCpus", "bindPolicy", "topologyPolicy",
      "numaStrategy", "nearNumaNodes", "capacity", "allocatableCpus"};
  for (const auto& [key, value] : req.items()) {
    if (std::ranges::find(kShared, key) == std::end(kShared) &&
        std::ranges::find(op_fields, key) == op_fields.end()) {
      return FieldError(key, "unknown field");
    }
  }
  return absl::OkStatus();
}

// The fields an ExclusiveRequest takes from a huygens or resize request: numCpus,
// bindPolicy, topologyPolicy, numaStrategy, nearNumaNodes, capacity, allocatableCpus.
absl::StatusOr<ExclusiveRequest> ReadExclusiveRequest(const json& req) {
  ExclusiveRequest r;
  HUYGENS_ASSIGN_OR_RETURN(r.num_cpus, NumCpus(req));
  if (const json* b = Find(req, "bindPolicy")) {
    HUYGENS_ASSIGN_OR_RETURN(const std::string name, json_fields::ReadString(*b, "bindPolicy"));
    const std::optional<BindPolicy> p = ParseBindPolicy(name);
    if (!p) {
      return FieldError("bindPolicy",
                        fmt::format("{:?} is not packed, full-cores or spread-cores", name));
    }
    r.bind_policy = *p;
  }
  if (const json* t = Find(req, "topologyPolicy")) {
    HUYGENS_ASSIGN_OR_RETURN(const std::string name,
                             json_fields::ReadString(*t, "topologyPolicy"));
    const std::optional<TopologyPolicy> p = ParseTopologyPolicy(name);
    if (!p) {
      return FieldError("topologyPolicy",
                        fmt::format("{:?} is not none, best-effort, restricted or "
                                    "single-numa-node",
                                    name));
    }
    r.topology_policy = *p;
  }
  if (const json* s = Find(req, "numaStrategy")) {
    HUYGENS_ASSIGN_OR_RETURN(const std::string name, json_fields::ReadString(*s, "numaStrategy"));
    const std::optional<NumaStrategy> p = ParseNumaStrategy(name);
    if (!p) {
      return FieldError("numaStrategy",
                        fmt::format("{:?} is not most-allocated, least-allocated or nearest",
                                    name));
    }
    r.numa_strategy = *p;
  }
  if (const json* n = Find(req, "nearNumaNodes")) {
    HUYGENS_ASSIGN_OR_RETURN(r.near_numa_nodes, NumaList(*n, "nearNumaNodes"));
  }
  if (const json* c = Find(req, "capacity")) {
    HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(*c, "capacity"));
    for (const auto& [key, value] : c->items()) {
      const std::string path = Child("capacity", key);
      HUYGENS_ASSIGN_OR_RETURN(const uint64_t numa,
                               json_fields::ReadDecimalKey(key, path, kMaxNumaId));
      if (!value.is_number()) {
        return FieldError(path, fmt::format("expected a number, got {}",
                                            json_fields::TypeName(value)));
      }
      r.capacity[static_cast<int>(numa)] = value.get<double>();
    }
  }
  if (const json* a = Find(req, "allocatableCpus"); a != nullptr && !a->is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(r.allocatable_cpus, json_fields::ReadCpuList(*a, "allocatableCpus"));
  }
  return r;
}

absl::StatusOr<ojson> Huygens(const json& req, const ExclusiveAllocator& machine) {
  HUYGENS_RETURN_IF_ERROR(CheckExclusiveRequestKeys(req, {"withinNumaNodes", "podCpus"}));
  CpuSet pod_cpus;
  if (const json* p = Find(req, "podCpus"); p != nullptr && !p->is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(pod_cpus, json_fields::ReadCpuList(*p, "podCpus"));
  }
  HUYGENS_ASSIGN_OR_RETURN(
      const CpuSet available,
      CpuListOr(req, "available", machine.Topology().OnlineCpus().Difference(pod_cpus)));
  if (const CpuSet both = available.Intersection(pod_cpus); !both.Empty()) {
    return FieldError("available", fmt::format("cpus {} are also in podCpus", both.ToString()));
  }
  HUYGENS_ASSIGN_OR_RETURN(ExclusiveRequest r, ReadExclusiveRequest(req));
  r.pod_cpus = std::move(pod_cpus);
  if (const json* w = Find(req, "withinNumaNodes"); w != nullptr && !w->is_null()) {
    HUYGENS_ASSIGN_OR_RETURN(r.within_numa_nodes, NumaList(*w, "withinNumaNodes"));
  }
  absl::StatusOr<ExclusiveAllocation> got = machine.Allocate(available, r);
  if (!got.ok()) return got.status();
  ojson out;
  out["cpuset"] = got->cpus.ToString();
  out["numaNodes"] = got->numa_nodes;
  return out;
}

// In-place resize of a running container (ExclusiveAllocator::Resize): "cpuset" is what it
// holds, "numCpus" the new size, "available" the free CPUs (default: online CPUs not in
// "cpuset").
absl::StatusOr<ojson> Resize(const json& req, const ExclusiveAllocator& machine) {
  HUYGENS_RETURN_IF_ERROR(CheckExclusiveRequestKeys(req, {"cpuset"}));
  HUYGENS_ASSIGN_OR_RETURN(const json* cpuset_json, Required(req, "cpuset"));
  HUYGENS_ASSIGN_OR_RETURN(const CpuSet current, json_fields::ReadCpuList(*cpuset_json, "cpuset"));
  HUYGENS_ASSIGN_OR_RETURN(
      const CpuSet available,
      CpuListOr(req, "available", machine.Topology().OnlineCpus().Difference(current)));
  if (const CpuSet both = available.Intersection(current); !both.Empty()) {
    return FieldError("available", fmt::format("cpus {} are also in cpuset", both.ToString()));
  }
  HUYGENS_ASSIGN_OR_RETURN(const ExclusiveRequest r, ReadExclusiveRequest(req));
  absl::StatusOr<CpuSet> got = machine.Resize(current, available, r);
  if (!got.ok()) return got.status();
  ojson out;
  out["cpuset"] = got->ToString();
  out["added"] = got->Difference(current).ToString();
  out["removed"] = current.Difference(*got).ToString();
  out["numaNodes"] = machine.Topology().NumaNodesOf(*got);
  return out;
}

}  // namespace

absl::StatusOr<CpuTopology> AllocateBatch::Load(const json& topology) const {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(topology, "topology"));
  if (Find(topology, "cpus") != nullptr) {
    absl::StatusOr<CpuTopology> inline_topology = TopologyFromJson(topology);
    if (!inline_topology.ok()) return InField("topology", inline_topology.status());
    return inline_topology;
  }
  HUYGENS_RETURN_IF_ERROR(json_fields::CheckKnownKeys(
      topology, "topology", {"cpus", "synthetic", "numbering", "file", "distances"}));
  const json* synthetic = Find(topology, "synthetic");
  const json* file = Find(topology, "file");
  if ((synthetic == nullptr) == (file == nullptr)) {
    return FieldError("topology", "give exactly one of cpus, synthetic or file");
  }
  TopologySource source;
  if (synthetic != nullptr) {
    HUYGENS_ASSIGN_OR_RETURN(source.synthetic,
                             json_fields::ReadString(*synthetic, "topology.synthetic"));
    if (const json* n = Find(topology, "numbering")) {
      HUYGENS_ASSIGN_OR_RETURN(source.numbering,
                               json_fields::ReadString(*n, "topology.numbering"));
    }
  } else {
    if (Find(topology, "numbering") != nullptr) {
      return FieldError("topology.numbering", "only used with synthetic");
    }
    HUYGENS_ASSIGN_OR_RETURN(source.file, json_fields::ReadString(*file, "topology.file"));
  }
  absl::StatusOr<CpuTopology> loaded = load_(source);
  if (!loaded.ok()) return InField("topology", loaded.status());
  const json* distances = Find(topology, "distances");
  if (distances == nullptr) return loaded;
  // Replace the machine's distances: its topology JSON with the given matrix instead, read
  // back through the one reader (which validates the matrix against the NUMA nodes).
  json doc = ToJson(*loaded);
  doc.erase("version");
  for (json& node : doc["numaNodes"]) node["distances"] = json::object();
  doc["distances"] = *distances;
  absl::StatusOr<CpuTopology> with_distances = TopologyFromJson(doc);
  if (!with_distances.ok()) return InField("topology", with_distances.status());
  return with_distances;
}

absl::StatusOr<std::shared_ptr<const ExclusiveAllocator>> AllocateBatch::Machine(
    const json& topology) {
  std::string key = topology.dump();
  if (auto it = cache_.find(key); it != cache_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.second);
    return it->second.first;
  }
  absl::StatusOr<CpuTopology> topo = Load(topology);
  if (!topo.ok()) return topo.status();
  auto machine = std::make_shared<const ExclusiveAllocator>(*std::move(topo));
  if (cache_.size() >= kMaxCachedTopologies) {
    cache_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key);
  cache_.emplace(std::move(key), std::pair{machine, lru_.begin()});
  return machine;
}

absl::StatusOr<ojson> AllocateBatch::Dispatch(const json& req) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(req, "request"));
  HUYGENS_ASSIGN_OR_RETURN(const json* op_json, Required(req, "op"));
  HUYGENS_ASSIGN_OR_RETURN(const std::string op, json_fields::ReadString(*op_json, "op"));
  if (op == "merge") return Merge(req);
  if (op == "device-hints") return DeviceHintsOp(req);
  using OpFn = absl::StatusOr<ojson> (*)(const json&, const ExclusiveAllocator&);
  OpFn fn = nullptr;
  if (op == "take") fn = Take;
  if (op == "static-allocate") fn = StaticAllocate;
  if (op == "hints") fn = Hints;
  if (op == "huygens") fn = Huygens;
  if (op == "resize") fn = Resize;
  if (op == "memory-allocate") fn = MemoryAllocate;
  if (op == "memory-hints") fn = MemoryHints;
  if (fn == nullptr) {
    return FieldError("op", fmt::format("{:?} is not take, static-allocate, hints, merge, "
                                        "huygens, resize, memory-allocate, memory-hints or "
                                        "device-hints",
                                        op));
  }
  HUYGENS_ASSIGN_OR_RETURN(const json* topology, Required(req, "topology"));
  HUYGENS_ASSIGN_OR_RETURN(const std::shared_ptr<const ExclusiveAllocator> machine,
                           Machine(*topology));
  return fn(req, *machine);
}

AllocateBatch::Response AllocateBatch::Handle(std::string_view line) {
  ojson out;
  out["id"] = nullptr;
  absl::StatusOr<ojson> result;
  absl::StatusOr<json> req =
      NestingDepth(line, kMaxNesting) > kMaxNesting
          ? FieldError("request", fmt::format("nested deeper than {} levels", kMaxNesting))
          : json_fields::ParseJson(line, "request");
  if (!req.ok()) {
    result = req.status();
  } else {
    if (req->is_object()) {
      if (const json* id = Find(*req, "id")) out["id"] = ojson::parse(id->dump());
    }
    result = Dispatch(*req);
  }
  if (result.ok()) {
    for (auto& [key, value] : result->items()) out[key] = std::move(value);
  } else {
    out["error"] = std::string(result.status().message());
    out["kind"] = KindOf(result.status());
  }
  // Invalid UTF-8 in an echoed field must not abort the dump: replace it.
  return Response{.line = out.dump(-1, ' ', false, ojson::error_handler_t::replace),
                  .error = !result.ok()};
}

}  // namespace huygens

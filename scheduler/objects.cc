#include "scheduler/objects.h"

#include <charconv>

#include <set>

#include "alloc/pod.h"
#include "alloc/quantity.h"
#include "fmt/format.h"
#include "topology/json_fields.h"
#include "topology/nrt.h"

namespace huygens::scheduler {

namespace {

using nlohmann::json;

const json& Member(const json& object, std::string_view key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(std::string(key));
  return it == object.end() ? kNull : *it;
}

std::string StringMember(const json& object, std::string_view key) {
  const json& v = Member(object, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

absl::Status Error(const std::string& what, std::string_view field, std::string_view message) {
  return absl::InvalidArgumentError(fmt::format("{}: {}: {}", what, field, message));
}

absl::StatusOr<std::map<std::string, std::string>> StringMap(const json& j, const std::string& what,
                                                             std::string_view field) {
  std::map<std::string, std::string> out;
  if (j.is_null()) return out;
  if (!j.is_object()) return Error(what, field, "expected an object");
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) return Error(what, fmt::format("{}.{}", field, k), "expected a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

// A quantity as Kubernetes writes it ("4", "500m", "1Gi"); integers are accepted too.
absl::StatusOr<int64_t> Quantity(const json& j, bool cpu, const std::string& what,
                                 std::string_view field) {
  std::string text;
  if (j.is_number_integer()) {
    text = std::to_string(j.get<int64_t>());
  } else if (j.is_string()) {
    text = j.get<std::string>();
  } else {
    return Error(what, field, "expected a quantity string");
  }
  auto v = cpu ? ParseCpuMilli(text) : ParseMemoryBytes(text);
  if (!v.ok()) return Error(what, field, std::string(v.status().message()));
  return *v;
}

absl::Status ReadContainer(const json& c, bool init, const std::string& what,
                           const std::string& field, ContainerSpec& out,
                           std::map<std::string, int64_t>& extended) {
  if (!c.is_object()) return Error(what, field, "expected an object");
  out.name = StringMember(c, "name");
  if (out.name.empty()) return Error(what, field + ".name", "missing");
  out.init = init;
  out.restartable = init && StringMember(c, "restartPolicy") == "Always";
  const json& resources = Member(c, "resources");
  const json& requests = Member(resources, "requests");
  const json& limits = Member(resources, "limits");
  auto read = [&](std::string_view name, bool cpu, int64_t& request,
                  int64_t* limit) -> absl::Status {
    const json& r = Member(requests, name);
    const json& l = Member(limits, name);
    if (!l.is_null() && limit != nullptr) {
      HUYGENS_ASSIGN_OR_RETURN(*limit, Quantity(l, cpu, what, fmt::format("{}.resources.limits.{}", field, name)));
    }
    if (!r.is_null()) {
      HUYGENS_ASSIGN_OR_RETURN(request, Quantity(r, cpu, what, fmt::format("{}.resources.requests.{}", field, name)));
    } else if (!l.is_null()) {
      HUYGENS_ASSIGN_OR_RETURN(request, Quantity(l, cpu, what, fmt::format("{}.resources.limits.{}", field, name)));
    }
    return absl::OkStatus();
  };
  HUYGENS_RETURN_IF_ERROR(read("cpu", true, out.cpu_request_milli, &out.cpu_limit_milli));
  HUYGENS_RETURN_IF_ERROR(read("memory", false, out.memory_request_bytes, &out.memory_limit_bytes));
  HUYGENS_RETURN_IF_ERROR(read(sched::kIsolatedCpuResource, false, out.isolated_cpus, nullptr));
  // Other extended resources (names with a domain, not the Huygens one).
  std::set<std::string> names;
  for (const json* m : {&requests, &limits}) {
    if (!m->is_object()) continue;
    for (const auto& [k, v] : m->items()) {
      if (k.find('/') != std::string::npos && k != sched::kIsolatedCpuResource) names.insert(k);
    }
  }
  for (const std::string& name : names) {
    int64_t amount = 0;
    HUYGENS_RETURN_IF_ERROR(read(name, false, amount, nullptr));
    extended[name] = amount;
  }
  return absl::OkStatus();
}

absl::StatusOr<sched::NodeSelectorTerm> ReadTerm(const json& t, const std::string& what,
                                                 const std::string& field) {
  sched::NodeSelectorTerm term;
  for (const char* kind : {"matchExpressions", "matchFields"}) {
    const json& list = Member(t, kind);
    if (list.is_null()) continue;
    if (!list.is_array()) return Error(what, fmt::format("{}.{}", field, kind), "expected an array");
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string f = fmt::format("{}.{}[{}]", field, kind, i);
      sched::NodeSelectorRequirement req;
      req.key = StringMember(list[i], "key");
      std::string op = StringMember(list[i], "operator");
      static const std::map<std::string, sched::SelectorOperator> kOps = {
          {"In", sched::SelectorOperator::kIn},         {"NotIn", sched::SelectorOperator::kNotIn},
          {"Exists", sched::SelectorOperator::kExists}, {"DoesNotExist", sched::SelectorOperator::kDoesNotExist},
          {"Gt", sched::SelectorOperator::kGt},         {"Lt", sched::SelectorOperator::kLt}};
      auto it = kOps.find(op);
      if (it == kOps.end()) return Error(what, f + ".operator", fmt::format("unknown operator {:?}", op));
      req.op = it->second;
      const json& values = Member(list[i], "values");
      if (values.is_array()) {
        for (const json& v : values) {
          if (v.is_string()) req.values.push_back(v.get<std::string>());
        }
      }
      (std::string_view(kind) == "matchFields" ? term.match_fields : term.match_expressions)
          .push_back(std::move(req));
    }
  }
  return term;
}

std::optional<sched::TaintEffect> ParseEffect(const std::string& s) {
  if (s == "NoSchedule") return sched::TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return sched::TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return sched::TaintEffect::kNoExecute;
  return std::nullopt;
}

}  // namespace

std::string ObjectKey(const json& object) {
  const json& md = Member(object, "metadata");
  std::string ns = StringMember(md, "namespace");
  std::string name = StringMember(md, "name");
  return ns.empty() ? name : ns + "/" + name;
}

absl::StatusOr<sched::Pod> PodFromJson(const json& object) {
  const std::string what = "pod " + ObjectKey(object);
  const json& md = Member(object, "metadata");
  const json& spec = Member(object, "spec");
  sched::Pod pod;
  pod.spec.uid = StringMember(md, "uid");
  pod.spec.namespace_name = StringMember(md, "namespace");
  pod.spec.name = StringMember(md, "name");
  if (pod.spec.uid.empty()) return Error(what, "metadata.uid", "missing");
  for (const char* list : {"initContainers", "containers"}) {
    bool init = std::string_view(list) == "initContainers";
    const json& cs = Member(spec, list);
    if (cs.is_null()) continue;
    if (!cs.is_array()) return Error(what, fmt::format("spec.{}", list), "expected an array");
    for (std::size_t i = 0; i < cs.size(); ++i) {
      ContainerSpec c;
      HUYGENS_RETURN_IF_ERROR(ReadContainer(cs[i], init, what, fmt::format("spec.{}[{}]", list, i), c,
                                            pod.extended_requests));
      (init ? pod.spec.init_containers : pod.spec.containers).push_back(std::move(c));
      if (!init) {
        const json& ports = Member(cs[i], "ports");
        if (ports.is_array()) {
          for (const json& p : ports) {
            const json& hp = Member(p, "hostPort");
            if (!hp.is_number_integer() || hp.get<int64_t>() <= 0) continue;
            sched::HostPort port;
            port.port = static_cast<int32_t>(hp.get<int64_t>());
            port.host_ip = StringMember(p, "hostIP");
            std::string proto = StringMember(p, "protocol");
            if (!proto.empty()) port.protocol = proto;
            pod.host_ports.push_back(std::move(port));
          }
        }
      }
    }
  }
  HUYGENS_ASSIGN_OR_RETURN(auto annotations, StringMap(Member(md, "annotations"), what, "metadata.annotations"));
  auto annotation = [&](const char* key) -> const std::string* {
    auto it = annotations.find(key);
    return it == annotations.end() ? nullptr : &it->second;
  };
  if (const std::string* v = annotation("huygens.io/cpu-policy")) {
    pod.spec.cpu_policy = ParseCpuPolicy(*v);
    if (!pod.spec.cpu_policy) return Error(what, "huygens.io/cpu-policy", fmt::format("unknown policy {:?}", *v));
  }
  if (const std::string* v = annotation("huygens.io/topology-policy")) {
    pod.spec.topology_policy = ParseTopologyPolicy(*v);
    if (!pod.spec.topology_policy) {
      return Error(what, "huygens.io/topology-policy", fmt::format("unknown policy {:?}", *v));
    }
  }
  if (const std::string* v = annotation("huygens.io/bind-policy")) {
    pod.spec.bind_policy = ParseBindPolicy(*v);
    if (!pod.spec.bind_policy) return Error(what, "huygens.io/bind-policy", fmt::format("unknown policy {:?}", *v));
  }
  if (const std::string* v = annotation("huygens.io/affinity-group")) pod.spec.affinity_group = *v;
  HUYGENS_ASSIGN_OR_RETURN(pod.labels, StringMap(Member(md, "labels"), what, "metadata.labels"));
  HUYGENS_ASSIGN_OR_RETURN(pod.node_selector, StringMap(Member(spec, "nodeSelector"), what, "spec.nodeSelector"));
  const json& na = Member(Member(spec, "affinity"), "nodeAffinity");
  const json& required = Member(Member(na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
  if (required.is_array()) {
    for (std::size_t i = 0; i < required.size(); ++i) {
      HUYGENS_ASSIGN_OR_RETURN(auto term, ReadTerm(required[i], what,
                                                   fmt::format("spec.affinity.nodeAffinity.required[{}]", i)));
      pod.required_node_affinity.push_back(std::move(term));
    }
  }
  const json& preferred = Member(na, "preferredDuringSchedulingIgnoredDuringExecution");
  if (preferred.is_array()) {
    for (std::size_t i = 0; i < preferred.size(); ++i) {
      sched::PreferredSchedulingTerm p;
      const json& w = Member(preferred[i], "weight");
      p.weight = w.is_number_integer() ? static_cast<int32_t>(w.get<int64_t>()) : 1;
      HUYGENS_ASSIGN_OR_RETURN(p.preference, ReadTerm(Member(preferred[i], "preference"), what,
                                                      fmt::format("spec.affinity.nodeAffinity.preferred[{}]", i)));
      pod.preferred_node_affinity.push_back(std::move(p));
    }
  }
  const json& tolerations = Member(spec, "tolerations");
  if (tolerations.is_array()) {
    for (const json& t : tolerations) {
      sched::Toleration tol;
      tol.key = StringMember(t, "key");
      tol.op = StringMember(t, "operator") == "Exists" ? sched::TolerationOperator::kExists
                                                       : sched::TolerationOperator::kEqual;
      tol.value = StringMember(t, "value");
      std::string effect = StringMember(t, "effect");
      if (!effect.empty()) tol.effect = ParseEffect(effect);
      pod.tolerations.push_back(std::move(tol));
    }
  }
  const json& priority = Member(spec, "priority");
  if (priority.is_number_integer()) pod.priority = static_cast<int32_t>(priority.get<int64_t>());
  std::string scheduler = StringMember(spec, "schedulerName");
  if (!scheduler.empty()) pod.scheduler_name = scheduler;
  pod.node_name = StringMember(spec, "nodeName");
  return pod;
}

absl::StatusOr<std::optional<PodAllocation>> PodAllocationOf(const json& pod) {
  const json& v = Member(Member(Member(pod, "metadata"), "annotations"), kAllocationAnnotation);
  if (v.is_null()) return std::optional<PodAllocation>();
  if (!v.is_string()) return Error("pod " + ObjectKey(pod), kAllocationAnnotation, "expected a string");
  auto a = AllocationFromJson(v.get<std::string>(), StringMember(Member(pod, "metadata"), "uid"));
  if (!a.ok()) return absl::InvalidArgumentError(fmt::format("pod {}: {}", ObjectKey(pod), std::string(a.status().message())));
  return std::optional<PodAllocation>(*std::move(a));
}

bool PodIsTerminal(const json& pod) {
  std::string phase = StringMember(Member(pod, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

absl::StatusOr<sched::Node> NodeFromJson(const json& object) {
  const std::string what = "node " + ObjectKey(object);
  const json& md = Member(object, "metadata");
  sched::Node node;
  node.name = StringMember(md, "name");
  if (node.name.empty()) return Error(what, "metadata.name", "missing");
  HUYGENS_ASSIGN_OR_RETURN(node.labels, StringMap(Member(md, "labels"), what, "metadata.labels"));
  const json& spec = Member(object, "spec");
  const json& unschedulable = Member(spec, "unschedulable");
  node.unschedulable = unschedulable.is_boolean() && unschedulable.get<bool>();
  const json& taints = Member(spec, "taints");
  if (taints.is_array()) {
    for (std::size_t i = 0; i < taints.size(); ++i) {
      sched::Taint t;
      t.key = StringMember(taints[i], "key");
      t.value = StringMember(taints[i], "value");
      auto effect = ParseEffect(StringMember(taints[i], "effect"));
      if (!effect) return Error(what, fmt::format("spec.taints[{}].effect", i), "unknown effect");
      t.effect = *effect;
      node.taints.push_back(std::move(t));
    }
  }
  const json& allocatable = Member(Member(object, "status"), "allocatable");
  if (allocatable.is_object()) {
    for (const auto& [name, value] : allocatable.items()) {
      std::string field = "status.allocatable." + name;
      if (name == "cpu") {
        HUYGENS_ASSIGN_OR_RETURN(node.allocatable.cpu_milli, Quantity(value, true, what, field));
      } else if (name == "memory") {
        HUYGENS_ASSIGN_OR_RETURN(node.allocatable.memory_bytes, Quantity(value, false, what, field));
      } else if (name == "pods") {
        HUYGENS_ASSIGN_OR_RETURN(node.allocatable.pods, Quantity(value, false, what, field));
      } else if (name.find('/') != std::string::npos) {
        HUYGENS_ASSIGN_OR_RETURN(node.allocatable.extended[name], Quantity(value, false, what, field));
      }
    }
  }
  return node;
}

absl::StatusOr<std::shared_ptr<const NodeState>> NodeStateFromNrt(const json& object,
                                                                  NumaStrategy numa_strategy,
                                                                  const CpuSet& huygens_held) {
  HUYGENS_ASSIGN_OR_RETURN(NrtObject nrt, ReadNrt(object));
  HUYGENS_ASSIGN_OR_RETURN(CpuTopology topology, TopologyFromNrt(nrt));
  HUYGENS_ASSIGN_OR_RETURN(NrtPools pools, PoolsFromNrt(nrt));
  NodeConfig config;
  config.name = nrt.name;
  auto mode = ParseNodeMode(pools.mode);
  if (!mode) {
    return absl::InvalidArgumentError(
        fmt::format("NodeResourceTopology {:?}: {}: mode: unknown mode {:?}", nrt.name, kPoolsAnnotation, pools.mode));
  }
  config.mode = *mode;
  config.system_cpus = pools.system.Union(pools.exclusive.Difference(huygens_held));
  if (const std::string* p = nrt.Attribute("topologyManagerPolicy")) {
    if (auto policy = ParseTopologyPolicy(*p)) config.topology_policy = *policy;
  }
  if (const std::string* s = nrt.Attribute("topologyManagerScope")) {
    if (auto scope = ParseTopologyScope(*s)) config.topology_scope = *scope;
  }
  config.numa_strategy = numa_strategy;
  for (const NrtZone& zone : nrt.zones) {
    const std::optional<int> numa = zone.NumaId();
    if (!numa.has_value()) continue;
    for (const NrtNameValue& a : zone.attributes) {
      if (a.name != kCapacityFactorAttribute) continue;
      double factor = 0;
      const char* end = a.value.data() + a.value.size();
      auto [ptr, ec] = std::from_chars(a.value.data(), end, factor);
      if (ec != std::errc() || ptr != end || !(factor > 0 && factor <= 1)) {
        return absl::InvalidArgumentError(fmt::format(
            "NodeResourceTopology {:?}: zone {:?}: attribute {}: {:?} is not a number in (0, 1]",
            nrt.name, zone.name, kCapacityFactorAttribute, a.value));
      }
      if (factor < 1) config.capacity[*numa] = factor;
    }
  }
  HUYGENS_ASSIGN_OR_RETURN(NodeState state,
                           NodeState::Create(std::make_shared<const CpuTopology>(std::move(topology)), config));
  return std::shared_ptr<const NodeState>(std::make_shared<NodeState>(std::move(state)));
}

}  // namespace huygens::scheduler

#include "sim/workload.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "sim/cluster_spec.h"
#include "sim/csv.h"
#include "base/yaml_reader.h"

namespace huygens::sim {
namespace {

absl::Status ParseLifetime(const YamlReader& r, const YAML::Node& node, const std::string& field,
                           Lifetime& out) {
  if (auto st = r.CheckMap(node, field, {"distribution", "value", "mean", "min", "max"});
      !st.ok()) {
    return st;
  }
  if (!node["distribution"]) return r.Error(node, field + ".distribution", "required");
  auto dist = r.String(node["distribution"], field + ".distribution");
  if (!dist.ok()) return dist.status();
  // Each distribution takes exactly its own parameters.
  auto need = [&](const char* key, int64_t& value) -> absl::Status {
    if (!node[key]) return r.Error(node, fmt::format("{}.{}", field, key), "required");
    auto v = r.Duration(node[key], fmt::format("{}.{}", field, key));
    if (!v.ok()) return v.status();
    value = *v;
    return absl::OkStatus();
  };
  auto forbid = [&](std::initializer_list<const char*> keys) -> absl::Status {
    for (const char* key : keys) {
      if (node[key]) {
        return r.Error(node[key], fmt::format("{}.{}", field, key),
                       fmt::format("not a parameter of distribution {}", *dist));
      }
    }
    return absl::OkStatus();
  };
  absl::Status st;
  if (*dist == "forever") {
    out.kind = Lifetime::Kind::kForever;
    st = forbid({"value", "mean", "min", "max"});
  } else if (*dist == "fixed") {
    out.kind = Lifetime::Kind::kFixed;
    st = forbid({"mean", "min", "max"});
    if (st.ok()) st = need("value", out.a_us);
  } else if (*dist == "exponential") {
    out.kind = Lifetime::Kind::kExponential;
    st = forbid({"value", "min", "max"});
    if (st.ok()) st = need("mean", out.a_us);
  } else if (*dist == "uniform") {
    out.kind = Lifetime::Kind::kUniform;
    st = forbid({"value", "mean"});
    if (st.ok()) st = need("min", out.a_us);
    if (st.ok()) st = need("max", out.b_us);
    if (st.ok() && out.b_us < out.a_us) {
      return r.Error(node["max"], field + ".max", "below min");
    }
  } else {
    return r.Error(node["distribution"], field + ".distribution",
                   fmt::format("unknown distribution {:?} (forever, fixed, exponential, uniform)",
                               *dist));
  }
  return st;
}

// `requests` or `limits`: cpu, memory and hugepages-2Mi / hugepages-1Gi (bytes, into
// `hugepages` by resource name).
absl::Status ParseResources(const YamlReader& r, const YAML::Node& node, const std::string& field,
                            int64_t& cpu, int64_t& memory,
                            std::map<std::string, int64_t>& hugepages) {
  if (auto st = r.CheckMap(node, field, {"cpu", "memory", "hugepages-2Mi", "hugepages-1Gi"});
      !st.ok()) {
    return st;
  }
  for (const auto& [name, page] : {std::pair{"hugepages-2Mi", int64_t{2} << 20},
                                    std::pair{"hugepages-1Gi", int64_t{1} << 30}}) {
    if (auto h = node[name]) {
      auto v = r.Memory(h, field + "." + name);
      if (!v.ok()) return v.status();
      if (*v % page != 0) {
        return r.Error(h, field + "." + name,
                       fmt::format("{} bytes is not a whole number of pages", *v));
      }
      hugepages[name] = *v;
    }
  }
  if (auto c = node["cpu"]) {
    auto v = r.Cpu(c, field + ".cpu");
    if (!v.ok()) return v.status();
    cpu = *v;
  }
  if (auto m = node["memory"]) {
    auto v = r.Memory(m, field + ".memory");
    if (!v.ok()) return v.status();
    memory = *v;
  }
  return absl::OkStatus();
}

absl::StatusOr<ContainerSpec> ParseContainer(const YamlReader& r, const YAML::Node& node,
                                             const std::string& field) {
  if (auto st = r.CheckMap(node, field,
                           {"name", "init", "restartable", "requests", "limits", "isolatedCpus",
                            "devices"});
      !st.ok()) {
    return st;
  }
  ContainerSpec c;
  if (!node["name"]) return r.Error(node, field + ".name", "required");
  auto name = r.String(node["name"], field + ".name");
  if (!name.ok()) return name.status();
  if (name->empty()) return r.Error(node["name"], field + ".name", "must not be empty");
  c.name = *name;
  if (auto v = node["init"]) {
    auto b = r.Bool(v, field + ".init");
    if (!b.ok()) return b.status();
    c.init = *b;
  }
  if (auto v = node["restartable"]) {
    auto b = r.Bool(v, field + ".restartable");
    if (!b.ok()) return b.status();
    c.restartable = *b;
    if (c.restartable && !c.init) return r.Error(v, field + ".restartable", "needs init: true");
  }
  if (auto v = node["requests"]) {
    auto st = ParseResources(r, v, field + ".requests", c.cpu_request_milli,
                             c.memory_request_bytes, c.hugepages_request_bytes);
    if (!st.ok()) return st;
  }
  if (auto v = node["limits"]) {
    // Kubernetes: hugepages requests equal their limits; a limit alone sets the request.
    std::map<std::string, int64_t> hugepage_limits;
    auto st = ParseResources(r, v, field + ".limits", c.cpu_limit_milli, c.memory_limit_bytes,
                             hugepage_limits);
    if (!st.ok()) return st;
    for (const auto& [resource, bytes] : hugepage_limits) {
      auto [it, fresh] = c.hugepages_request_bytes.emplace(resource, bytes);
      if (!fresh && it->second != bytes) {
        return r.Error(v[resource], field + ".limits." + resource,
                       "must equal the hugepages request");
      }
    }
    // Kubernetes defaults a missing request to the limit.
    const YAML::Node requests = node["requests"];
    if (v["cpu"] && !(requests && requests["cpu"])) c.cpu_request_milli = c.cpu_limit_milli;
    if (v["memory"] && !(requests && requests["memory"])) {
      c.memory_request_bytes = c.memory_limit_bytes;
    }
    if (c.cpu_limit_milli > 0 && c.cpu_request_milli > c.cpu_limit_milli) {
      return r.Error(v["cpu"], field + ".limits.cpu", "below the cpu request");
    }
    if (c.memory_limit_bytes > 0 && c.memory_request_bytes > c.memory_limit_bytes) {
      return r.Error(v["memory"], field + ".limits.memory", "below the memory request");
    }
  }
  for (const auto& [resource, bytes] : c.hugepages_request_bytes) {
    const YAML::Node limits = node["limits"];
    if (!(limits && limits[resource])) {
      return r.Error(node["requests"][resource], field + ".requests." + resource,
                     "hugepages need an equal limit (Kubernetes requires it)");
    }
  }
  if (auto v = node["isolatedCpus"]) {
    auto n = r.Int(v, field + ".isolatedCpus", 0, CpuSet::kMaxCpus);
    if (!n.ok()) return n.status();
    c.isolated_cpus = *n;
  }
  if (auto v = node["devices"]) {
    // Device-plugin resources: whole counts, requests = limits (as Kubernetes requires).
    if (!v.IsMap()) return r.Error(v, field + ".devices", "expected a map of resource name to count");
    for (const auto& entry : v) {
      auto resource = r.String(entry.first, field + ".devices");
      if (!resource.ok()) return resource.status();
      const std::string f = field + ".devices." + *resource;
      if (resource->find('/') == std::string::npos) {
        return r.Error(entry.first, f,
                       "a device-plugin resource name has a domain (e.g. nvidia.com/gpu)");
      }
      auto n = r.Int(entry.second, f, 0, 1024);
      if (!n.ok()) return n.status();
      if (*n > 0) c.extended_requests[*resource] = *n;
    }
  }
  return c;
}

absl::StatusOr<sched::Toleration> ParseToleration(const YamlReader& r, const YAML::Node& node,
                                                  const std::string& field) {
  if (auto st = r.CheckMap(node, field, {"key", "operator", "value", "effect"}); !st.ok()) {
    return st;
  }
  sched::Toleration t;
  if (auto v = node["key"]) {
    auto s = r.String(v, field + ".key");
    if (!s.ok()) return s.status();
    t.key = *s;
  }
  if (auto v = node["operator"]) {
    auto s = r.String(v, field + ".operator");
    if (!s.ok()) return s.status();
    if (*s == "Equal") {
      t.op = sched::TolerationOperator::kEqual;
    } else if (*s == "Exists") {
      t.op = sched::TolerationOperator::kExists;
    } else {
      return r.Error(v, field + ".operator", fmt::format("unknown operator {:?} (Equal, Exists)", *s));
    }
  }
  if (auto v = node["value"]) {
    auto s = r.String(v, field + ".value");
    if (!s.ok()) return s.status();
    t.value = *s;
  }
  if (auto v = node["effect"]) {
    auto s = r.String(v, field + ".effect");
    if (!s.ok()) return s.status();
    if (*s == "NoSchedule") {
      t.effect = sched::TaintEffect::kNoSchedule;
    } else if (*s == "PreferNoSchedule") {
      t.effect = sched::TaintEffect::kPreferNoSchedule;
    } else if (*s == "NoExecute") {
      t.effect = sched::TaintEffect::kNoExecute;
    } else {
      return r.Error(v, field + ".effect",
                     fmt::format("unknown effect {:?} (NoSchedule, PreferNoSchedule, NoExecute)", *s));
    }
  }
  return t;
}

template <typename T>
absl::Status ParseNamed(const YamlReader& r, const YAML::Node& node, const std::string& field,
                        std::optional<T> (*parse)(const std::string&), const char* known,
                        std::optional<T>& out) {
  auto s = r.String(node, field);
  if (!s.ok()) return s.status();
  out = parse(*s);
  if (!out) return r.Error(node, field, fmt::format("unknown value {:?} ({})", *s, known));
  return absl::OkStatus();
}

// One entry of a template's `resizes`: {after: DURATION, container: NAME, cpu: N}; the
// container must be an app container of `spec` (init containers have ended by then).
absl::StatusOr<ResizeEvent> ParseResize(const YamlReader& r, const YAML::Node& node,
                                        const std::string& field, const PodSpec& spec) {
  if (auto st = r.CheckMap(node, field, {"after", "container", "cpu"}); !st.ok()) return st;
  ResizeEvent e;
  for (const char* key : {"after", "container", "cpu"}) {
    if (!node[key]) return r.Error(node, field + "." + key, "required");
  }
  auto after = r.Duration(node["after"], field + ".after");
  if (!after.ok()) return after.status();
  e.after_us = *after;
  auto name = r.String(node["container"], field + ".container");
  if (!name.ok()) return name.status();
  if (std::none_of(spec.containers.begin(), spec.containers.end(),
                   [&](const ContainerSpec& c) { return c.name == *name; })) {
    return r.Error(node["container"], field + ".container",
                   fmt::format("{:?} is not an app container of this pod", *name));
  }
  e.container = *name;
  auto cpus = r.Int(node["cpu"], field + ".cpu", 1, CpuSet::kMaxCpus);
  if (!cpus.ok()) return cpus.status();
  e.cpus = static_cast<int>(*cpus);
  return e;
}

absl::StatusOr<PodTemplate> ParseTemplate(const YamlReader& r, const YAML::Node& node,
                                          const std::string& field) {
  if (auto st = r.CheckMap(node, field,
                           {"name", "count", "arrivalsPerSecond", "startAt", "lifetime",
                            "priority", "cpuPolicy", "topologyPolicy", "bindPolicy",
                            "affinityGroup", "affinityGroups", "affinityPolicy", "rebalance",
                            "labels", "nodeSelector", "tolerations", "containers", "resizes"});
      !st.ok()) {
    return st;
  }
  PodTemplate t;
  if (!node["name"]) return r.Error(node, field + ".name", "required");
  auto name = r.String(node["name"], field + ".name");
  if (!name.ok()) return name.status();
  if (name->empty()) return r.Error(node["name"], field + ".name", "must not be empty");
  t.name = *name;
  if (auto v = node["count"]) {
    auto n = r.Int(v, field + ".count", 0, 100000000);
    if (!n.ok()) return n.status();
    t.count = static_cast<int>(*n);
  }
  if (auto v = node["arrivalsPerSecond"]) {
    auto n = r.Number(v, field + ".arrivalsPerSecond", 0);
    if (!n.ok()) return n.status();
    t.arrivals_per_second = *n;
  }
  if (auto v = node["startAt"]) {
    auto d = r.Duration(v, field + ".startAt");
    if (!d.ok()) return d.status();
    t.start_us = *d;
  }
  if (auto v = node["lifetime"]) {
    if (auto st = ParseLifetime(r, v, field + ".lifetime", t.lifetime); !st.ok()) return st;
  }
  if (auto v = node["priority"]) {
    auto n = r.Int(v, field + ".priority", -2147483648LL, 1000000000);
    if (!n.ok()) return n.status();
    t.pod.priority = static_cast<int32_t>(*n);
  }
  if (auto v = node["cpuPolicy"]) {
    auto st = ParseNamed<CpuPolicy>(r, v, field + ".cpuPolicy", &ParseCpuPolicy,
                                    "exclusive, shared, none", t.pod.spec.cpu_policy);
    if (!st.ok()) return st;
  }
  if (auto v = node["topologyPolicy"]) {
    auto st = ParseNamed<TopologyPolicy>(r, v, field + ".topologyPolicy", &ParseTopologyPolicy,
                                         "none, best-effort, restricted, single-numa-node",
                                         t.pod.spec.topology_policy);
    if (!st.ok()) return st;
  }
  if (auto v = node["bindPolicy"]) {
    auto st = ParseNamed<BindPolicy>(r, v, field + ".bindPolicy", &ParseBindPolicy,
                                     "packed, full-cores, spread-cores", t.pod.spec.bind_policy);
    if (!st.ok()) return st;
  }
  if (auto v = node["affinityGroup"]) {
    auto s = r.String(v, field + ".affinityGroup");
    if (!s.ok()) return s.status();
    t.pod.spec.affinity_group = *s;
  }
  for (const char* key : {"affinityGroups", "affinityPolicy"}) {
    if (node[key] && t.pod.spec.affinity_group.empty()) {
      return r.Error(node[key], fmt::format("{}.{}", field, key), "needs affinityGroup");
    }
  }
  if (auto v = node["affinityGroups"]) {
    auto n = r.Int(v, field + ".affinityGroups", 1, 1000000);
    if (!n.ok()) return n.status();
    t.affinity_groups = static_cast<int>(*n);
  }
  if (auto v = node["affinityPolicy"]) {
    auto s = r.String(v, field + ".affinityPolicy");
    if (!s.ok()) return s.status();
    auto policy = ParseAffinityGroupPolicy(*s);
    if (!policy) {
      return r.Error(v, field + ".affinityPolicy",
                     fmt::format("unknown value {:?} (same-numa, nearest, spread)", *s));
    }
    t.affinity_policy = *policy;
  }
  if (auto v = node["rebalance"]) {
    auto b = r.Bool(v, field + ".rebalance");
    if (!b.ok()) return b.status();
    t.pod.rebalance = *b;
  }
  if (auto v = node["labels"]) {
    auto m = r.StringMap(v, field + ".labels");
    if (!m.ok()) return m.status();
    t.pod.labels = *m;
  }
  if (auto v = node["nodeSelector"]) {
    auto m = r.StringMap(v, field + ".nodeSelector");
    if (!m.ok()) return m.status();
    t.pod.node_selector = *m;
  }
  if (auto v = node["tolerations"]) {
    if (auto st = r.CheckSequence(v, field + ".tolerations"); !st.ok()) return st;
    for (size_t i = 0; i < v.size(); ++i) {
      auto tol = ParseToleration(r, v[i], fmt::format("{}.tolerations[{}]", field, i));
      if (!tol.ok()) return tol.status();
      t.pod.tolerations.push_back(*std::move(tol));
    }
  }
  const YAML::Node containers = node["containers"];
  if (!containers) return r.Error(node, field + ".containers", "required");
  if (auto st = r.CheckSequence(containers, field + ".containers"); !st.ok()) return st;
  std::set<std::string> names;
  for (size_t i = 0; i < containers.size(); ++i) {
    const std::string cf = fmt::format("{}.containers[{}]", field, i);
    auto c = ParseContainer(r, containers[i], cf);
    if (!c.ok()) return c.status();
    if (!names.insert(c->name).second) {
      return r.Error(containers[i]["name"], cf + ".name",
                     fmt::format("duplicate container name {:?}", c->name));
    }
    (c->init ? t.pod.spec.init_containers : t.pod.spec.containers).push_back(*std::move(c));
  }
  if (t.pod.spec.containers.empty()) {
    return r.Error(containers, field + ".containers", "needs at least one app container");
  }
  t.pod.extended_requests = PodExtendedRequests(t.pod.spec);
  if (auto v = node["resizes"]) {
    if (auto st = r.CheckSequence(v, field + ".resizes"); !st.ok()) return st;
    for (size_t i = 0; i < v.size(); ++i) {
      auto e = ParseResize(r, v[i], fmt::format("{}.resizes[{}]", field, i), t.pod.spec);
      if (!e.ok()) return e.status();
      t.resizes.push_back(*std::move(e));
    }
  }
  return t;
}

// The affinity group of pod `index` of `t` ("" when the template has none).
std::string GroupOf(const PodTemplate& t, int index) {
  if (t.pod.spec.affinity_group.empty() || t.affinity_groups <= 1) {
    return t.pod.spec.affinity_group;
  }
  return fmt::format("{}-{}", t.pod.spec.affinity_group, index % t.affinity_groups);
}

// Whether some pod of `t` joins `group`.
bool JoinsGroup(const PodTemplate& t, const std::string& group) {
  const std::string& base = t.pod.spec.affinity_group;
  if (base.empty() || t.count == 0) return false;
  if (t.affinity_groups <= 1) return group == base;
  // "<base>-<k>" with k a decimal number below min(count, affinity_groups), no leading zero.
  if (group.size() <= base.size() + 1 || !group.starts_with(base + "-")) return false;
  const std::string k = group.substr(base.size() + 1);
  if (k.size() > 7 || (k.size() > 1 && k[0] == '0') ||
      !std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  return std::stoi(k) < std::min(t.count, t.affinity_groups);
}

// A group that pods of both `a` and `b` join, if any (GroupOf's names cannot collide
// otherwise: two templates dealing into groups with different bases never share a name).
std::optional<std::string> SharedGroup(const PodTemplate& a, const PodTemplate& b) {
  if (a.count == 0 || b.count == 0) return std::nullopt;
  if (a.affinity_groups <= 1 && JoinsGroup(b, a.pod.spec.affinity_group)) {
    return a.pod.spec.affinity_group;
  }
  if (b.affinity_groups <= 1 && JoinsGroup(a, b.pod.spec.affinity_group)) {
    return b.pod.spec.affinity_group;
  }
  if (a.affinity_groups > 1 && b.affinity_groups > 1 && !a.pod.spec.affinity_group.empty() &&
      a.pod.spec.affinity_group == b.pod.spec.affinity_group) {
    return GroupOf(a, 0);
  }
  return std::nullopt;
}

// The spec's `rebalance` block: {interval: DURATION, maxMoves: N, balance: BOOL}.
absl::StatusOr<RebalanceSettings> ParseRebalance(const YamlReader& r, const YAML::Node& node) {
  if (auto st = r.CheckMap(node, "rebalance", {"interval", "maxMoves", "balance"}); !st.ok()) {
    return st;
  }
  RebalanceSettings out;
  if (auto v = node["interval"]) {
    auto d = r.Duration(v, "rebalance.interval");
    if (!d.ok()) return d.status();
    if (*d <= 0) return r.Error(v, "rebalance.interval", "must be positive");
    out.interval_us = *d;
  }
  if (auto v = node["maxMoves"]) {
    auto n = r.Int(v, "rebalance.maxMoves", 0, 1000000);
    if (!n.ok()) return n.status();
    out.planner.max_moves = static_cast<int>(*n);
  }
  if (auto v = node["balance"]) {
    auto b = r.Bool(v, "rebalance.balance");
    if (!b.ok()) return b.status();
    out.planner.balance = *b;
  }
  return out;
}

int64_t DrawLifetime(const Lifetime& l, Random& rng) {
  switch (l.kind) {
    case Lifetime::Kind::kForever: return -1;
    case Lifetime::Kind::kFixed: return l.a_us;
    case Lifetime::Kind::kExponential:
      return static_cast<int64_t>(std::llround(rng.Exponential(static_cast<double>(l.a_us))));
    case Lifetime::Kind::kUniform:
      return l.a_us + static_cast<int64_t>(rng.Uniform01() * static_cast<double>(l.b_us - l.a_us));
  }
  return -1;
}

}  // namespace

Random::Random(uint64_t seed) : inc_((seed << 1u) | 1u) {
  Next32();
  state_ += 0x853c49e6748fea9bULL ^ seed;
  Next32();
}

uint32_t Random::Next32() {
  const uint64_t old = state_;
  state_ = old * 6364136223846793005ULL + inc_;
  const auto xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
  const auto rot = static_cast<uint32_t>(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

double Random::Uniform01() {
  const uint64_t hi = Next32() >> 5;  // 27 bits
  const uint64_t lo = Next32() >> 6;  // 26 bits
  return static_cast<double>((hi << 26) | lo) / 9007199254740992.0;
}

double Random::Exponential(double mean) { return -mean * std::log1p(-Uniform01()); }

absl::StatusOr<WorkloadSpec> ParseWorkloadSpec(std::string_view yaml,
                                               std::string_view file_name) {
  YamlReader r{std::string(file_name)};
  auto doc = r.Load(yaml);
  if (!doc.ok()) return doc.status();
  if (auto st = r.CheckMap(*doc, "workload", {"seed", "rebalance", "pods"}); !st.ok()) return st;
  WorkloadSpec spec;
  if (auto s = (*doc)["seed"]) {
    auto n = r.Int(s, "seed", 0, INT64_MAX);
    if (!n.ok()) return n.status();
    spec.seed = static_cast<uint64_t>(*n);
  }
  if (auto v = (*doc)["rebalance"]) {
    auto settings = ParseRebalance(r, v);
    if (!settings.ok()) return settings.status();
    spec.rebalance = *settings;
  }
  const YAML::Node pods = (*doc)["pods"];
  if (!pods) return r.Error(*doc, "pods", "required");
  if (auto st = r.CheckSequence(pods, "pods"); !st.ok()) return st;
  std::set<std::string> names;
  for (size_t i = 0; i < pods.size(); ++i) {
    const std::string field = fmt::format("pods[{}]", i);
    auto t = ParseTemplate(r, pods[i], field);
    if (!t.ok()) return t.status();
    if (!names.insert(t->name).second) {
      return r.Error(pods[i]["name"], field + ".name",
                     fmt::format("duplicate template name {:?}", t->name));
    }
    // One policy per group, whichever templates name it.
    for (const PodTemplate& other : spec.templates) {
      if (other.affinity_policy == t->affinity_policy) continue;
      const std::optional<std::string> group = SharedGroup(other, *t);
      if (!group) continue;
      const YAML::Node where = pods[i]["affinityPolicy"] ? pods[i]["affinityPolicy"]
                                                         : pods[i]["affinityGroup"];
      return r.Error(where, field + ".affinityPolicy",
                     fmt::format("group {:?} has policy {} in template {:?}, here {}", *group,
                                 ToString(other.affinity_policy), other.name,
                                 ToString(t->affinity_policy)));
    }
    spec.templates.push_back(*std::move(t));
  }
  return spec;
}

absl::StatusOr<WorkloadSpec> LoadWorkloadSpec(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseWorkloadSpec(*text, path);
}

std::vector<PodArrival> GenerateArrivals(const WorkloadSpec& spec, uint64_t seed) {
  std::vector<PodArrival> out;
  Random rng(seed);
  for (size_t ti = 0; ti < spec.templates.size(); ++ti) {
    const PodTemplate& t = spec.templates[ti];
    double now_us = static_cast<double>(t.start_us);
    for (int i = 0; i < t.count; ++i) {
      if (t.arrivals_per_second > 0) now_us += rng.Exponential(1e6 / t.arrivals_per_second);
      PodArrival a;
      a.arrival_us = static_cast<int64_t>(now_us);
      a.lifetime_us = DrawLifetime(t.lifetime, rng);
      a.pod = t.pod;
      a.pod.spec.name = fmt::format("{}-{}", t.name, i);
      a.pod.spec.uid = a.pod.spec.name;
      a.pod.spec.namespace_name = "default";
      a.source = static_cast<int>(ti);
      a.resizes = t.resizes;
      a.pod.spec.affinity_group = GroupOf(t, i);
      a.affinity_policy = t.affinity_policy;
      out.push_back(std::move(a));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const PodArrival& x, const PodArrival& y) {
    return x.arrival_us < y.arrival_us;
  });
  for (size_t i = 0; i < out.size(); ++i) out[i].pod.creation_index = static_cast<int64_t>(i);
  return out;
}

absl::StatusOr<std::vector<PodArrival>> ParseTrace(std::string_view csv,
                                                   std::string_view file_name,
                                                   const TraceOptions& options) {
  if (options.time_compression < 1) {
    return absl::InvalidArgumentError("trace time compression must be >= 1");
  }
  auto table = ParseCsv(csv, file_name);
  if (!table.ok()) return table.status();
  int col[6];
  const char* names[6] = {"name", "cpu_milli", "memory_mib", "qos", "creation_time",
                          "deletion_time"};
  for (int i = 0; i < 6; ++i) {
    auto c = table->Column(names[i]);
    if (!c.ok()) return c.status();
    col[i] = *c;
  }
  std::vector<PodArrival> out;
  for (const CsvTable::Row& row : table->rows) {
    if (options.max_pods > 0 && static_cast<int>(out.size()) >= options.max_pods) break;
    const std::string& name = row.fields[static_cast<size_t>(col[0])];
    if (name.empty()) return table->Error(row, "name", "empty");
    auto cpu = table->Int(row, col[1], kMaxCpuMilli);
    if (!cpu.ok()) return cpu.status();
    if (*cpu < 0) return table->Error(row, "cpu_milli", "negative");
    auto mib = table->Int(row, col[2], kMaxMemoryMib);
    if (!mib.ok()) return mib.status();
    if (*mib < 0) return table->Error(row, "memory_mib", "negative");
    const std::string& qos = row.fields[static_cast<size_t>(col[3])];
    auto created = table->Int(row, col[4], kMaxTraceSeconds);
    if (!created.ok()) return created.status();
    if (*created < 0) return table->Error(row, "creation_time", "negative");
    auto deleted = table->Int(row, col[5], kMaxTraceSeconds, /*allow_empty=*/true,
                                /*if_empty=*/-1);
    if (!deleted.ok()) return deleted.status();
    if (options.max_creation_seconds > 0 && *created >= options.max_creation_seconds) continue;

    bool exclusive_class;
    if (qos == "LS" || qos == "Guaranteed") {
      exclusive_class = true;
    } else if (qos == "BE" || qos == "Burstable") {
      exclusive_class = false;
    } else {
      return table->Error(row, "qos",
                          fmt::format("unknown class {:?} (LS, BE, Burstable, Guaranteed)", qos));
    }
    ContainerSpec c;
    c.name = "main";
    c.cpu_request_milli = *cpu;
    c.memory_request_bytes = *mib * 1024 * 1024;
    if (exclusive_class && *cpu > 0 &&
        (*cpu % 1000 == 0 || options.round_up_exclusive)) {
      c.cpu_request_milli = (*cpu + 999) / 1000 * 1000;
      c.cpu_limit_milli = c.cpu_request_milli;
      c.memory_limit_bytes = c.memory_request_bytes;
    }
    PodArrival a;
    a.arrival_us = *created * 1000000 / options.time_compression;
    a.lifetime_us = *deleted >= *created
                        ? (*deleted - *created) * 1000000 / options.time_compression
                        : -1;
    a.pod.spec.uid = name;
    a.pod.spec.name = name;
    a.pod.spec.namespace_name = "default";
    a.pod.spec.containers.push_back(std::move(c));
    a.source = row.line;
    out.push_back(std::move(a));
  }
  std::stable_sort(out.begin(), out.end(), [](const PodArrival& x, const PodArrival& y) {
    return x.arrival_us < y.arrival_us;
  });
  for (size_t i = 0; i < out.size(); ++i) out[i].pod.creation_index = static_cast<int64_t>(i);
  return out;
}

absl::StatusOr<std::vector<PodArrival>> LoadTrace(const std::string& path,
                                                  const TraceOptions& options) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseTrace(*text, path, options);
}

}  // namespace huygens::sim

#include "sched/pod.h"

#include <algorithm>
#include <cstring>

namespace huygens::sched {
namespace {

struct Amounts {
  int64_t cpu = 0, memory = 0, isolated = 0;
  Amounts& operator+=(const Amounts& o) {
    cpu += o.cpu;
    memory += o.memory;
    isolated += o.isolated;
    return *this;
  }
};

constexpr int64_t kDefaultMilliCpuRequest = 100;                 // kube-scheduler's, for scores
constexpr int64_t kDefaultMemoryRequest = int64_t{200} * 1024 * 1024;  // 200 MiB, the same

// A container's requests after API defaulting (EffectiveRequest, alloc/pod.h); with
// `non_zero`, a missing cpu or memory request takes kube-scheduler's scoring default.
Amounts RequestsOf(const ContainerSpec& c, bool non_zero) {
  Amounts a{EffectiveRequest(c.cpu_request_milli, c.cpu_limit_milli),
            EffectiveRequest(c.memory_request_bytes, c.memory_limit_bytes), c.isolated_cpus};
  if (non_zero && a.cpu == 0) a.cpu = kDefaultMilliCpuRequest;
  if (non_zero && a.memory == 0) a.memory = kDefaultMemoryRequest;
  return a;
}

Amounts Max(const Amounts& a, const Amounts& b) {
  return {std::max(a.cpu, b.cpu), std::max(a.memory, b.memory),
          std::max(a.isolated, b.isolated)};
}

// The containers' aggregate: max(app containers and sidecars, the largest init step).
Amounts ContainerAggregate(const PodSpec& pod, bool non_zero) {
  Amounts sum;
  for (const ContainerSpec& c : pod.containers) sum += RequestsOf(c, non_zero);
  // Init containers run in order; restartable ones (sidecars) keep running beside the rest.
  Amounts restartable, init_peak;
  for (const ContainerSpec& c : pod.init_containers) {
    const Amounts r = RequestsOf(c, non_zero);
    if (c.restartable) {
      sum += r;
      restartable += r;
      init_peak = Max(init_peak, restartable);
    } else {
      Amounts step = r;
      step += restartable;
      init_peak = Max(init_peak, step);
    }
  }
  return Max(sum, init_peak);
}

}  // namespace

// component-helpers' resource.PodRequests (v1.35): the containers' aggregate, then the pod-level
// requests where set (they replace the aggregate of their resource), then the overhead. The
// non-zero figures run the same steps with NonMissingContainerRequests, as kube-scheduler's
// NodeInfo does.
PodRequests ComputePodRequests(const Pod& p) {
  const PodSpec& pod = p.spec;
  const Amounts total = ContainerAggregate(pod, false);
  const Amounts non_zero = ContainerAggregate(pod, true);
  PodRequests out{total.cpu, total.memory, total.isolated, non_zero.cpu, non_zero.memory};
  auto set_cpu = [&](int64_t milli) { out.cpu_milli = out.non_zero_cpu_milli = milli; };
  if (pod.pod_cpu_request_milli > 0) set_cpu(pod.pod_cpu_request_milli);  // KEP-2837
  if (p.pod_cpu_request_milli.has_value()) set_cpu(*p.pod_cpu_request_milli);
  if (p.pod_memory_request_bytes.has_value()) out.memory_bytes = out.non_zero_memory_bytes = *p.pod_memory_request_bytes;
  out.cpu_milli += p.overhead_cpu_milli;
  out.non_zero_cpu_milli += p.overhead_cpu_milli;
  out.memory_bytes += p.overhead_memory_bytes;
  out.non_zero_memory_bytes += p.overhead_memory_bytes;
  return out;
}

const char* ToString(TaintEffect e) {
  switch (e) {
    case TaintEffect::kNoSchedule: return "NoSchedule";
    case TaintEffect::kPreferNoSchedule: return "PreferNoSchedule";
    case TaintEffect::kNoExecute: return "NoExecute";
  }
  return "?";
}

// Reminder for AppendEquivalenceKey: a changed Pod, PodSpec or ContainerSpec must be reviewed
// there (sizes on x86-64 with libstdc++).
static_assert(sizeof(void*) != 8 || sizeof(ContainerSpec) == 176,
              "ContainerSpec changed: review AppendEquivalenceKey");
static_assert(sizeof(void*) != 8 || sizeof(PodSpec) == 216,
              "PodSpec changed: review AppendEquivalenceKey");
static_assert(sizeof(void*) != 8 || sizeof(Pod) == 840,  // rebalance, resource_version, scheduling_gates: none
              "Pod changed: review AppendEquivalenceKey");

namespace {

// The key is binary: integers as their 8 raw bytes, text length-prefixed, so that no two
// different pods share a key. Nothing is formatted: the key is built on every attempt.
void Int(std::string& key, int64_t v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  key.append(bytes, sizeof v);
}

void Field(std::string& key, std::string_view text) {
  Int(key, static_cast<int64_t>(text.size()));
  key.append(text);
}

void Requirements(std::string& key, const std::vector<NodeSelectorRequirement>& requirements) {
  Int(key, static_cast<int64_t>(requirements.size()));
  for (const NodeSelectorRequirement& r : requirements) {
    Field(key, r.key);
    Int(key, static_cast<int64_t>(r.op));
    Int(key, static_cast<int64_t>(r.values.size()));
    for (const std::string& v : r.values) Field(key, v);
  }
}

void Term(std::string& key, const NodeSelectorTerm& term) {
  Requirements(key, term.match_expressions);
  Requirements(key, term.match_fields);
}

void Selector(std::string& key, const std::optional<LabelSelector>& s) {
  Int(key, s.has_value() ? static_cast<int64_t>(s->match_labels.size()) : -1);
  if (!s.has_value()) return;
  for (const auto& [k, v] : s->match_labels) {
    Field(key, k);
    Field(key, v);
  }
  Requirements(key, s->match_expressions);
}

void Strings(std::string& key, const std::vector<std::string>& values) {
  Int(key, static_cast<int64_t>(values.size()));
  for (const std::string& v : values) Field(key, v);
}

void AffinityTerm(std::string& key, const PodAffinityTerm& t) {
  Selector(key, t.label_selector);
  Strings(key, t.namespaces);
  Selector(key, t.namespace_selector);
  Field(key, t.topology_key);
  Strings(key, t.match_label_keys);
  Strings(key, t.mismatch_label_keys);
}

void AffinityTerms(std::string& key, const std::vector<PodAffinityTerm>& terms) {
  Int(key, static_cast<int64_t>(terms.size()));
  for (const PodAffinityTerm& t : terms) AffinityTerm(key, t);
}

void WeightedAffinityTerms(std::string& key, const std::vector<WeightedPodAffinityTerm>& terms) {
  Int(key, static_cast<int64_t>(terms.size()));
  for (const WeightedPodAffinityTerm& t : terms) {
    Int(key, t.weight);
    AffinityTerm(key, t.term);
  }
}

void SpreadConstraints(std::string& key, const std::vector<TopologySpreadConstraint>& constraints) {
  Int(key, static_cast<int64_t>(constraints.size()));
  for (const TopologySpreadConstraint& c : constraints) {
    Int(key, c.max_skew);
    Field(key, c.topology_key);
    Int(key, int64_t{c.hard});
    Selector(key, c.label_selector);
    Int(key, c.min_domains);
    Int(key, static_cast<int64_t>(c.node_affinity_policy) << 1 | static_cast<int64_t>(c.node_taints_policy));
    Strings(key, c.match_label_keys);
  }
}

void Containers(std::string& key, const std::vector<ContainerSpec>& containers) {
  Int(key, static_cast<int64_t>(containers.size()));
  for (const ContainerSpec& c : containers) {
    Field(key, c.name);
    Int(key, c.cpu_request_milli);
    Int(key, c.cpu_limit_milli);
    Int(key, c.memory_request_bytes);
    Int(key, c.memory_limit_bytes);
    Int(key, c.isolated_cpus);
    Int(key, static_cast<int64_t>(c.hugepages_request_bytes.size()));
    for (const auto& [resource, bytes] : c.hugepages_request_bytes) {
      Field(key, resource);
      Int(key, bytes);
    }
    Int(key, static_cast<int64_t>(c.extended_requests.size()));
    for (const auto& [resource, amount] : c.extended_requests) {
      Field(key, resource);
      Int(key, amount);
    }
    Int(key, int64_t{c.init} << 1 | int64_t{c.restartable});
  }
}

template <typename T>
int64_t OptionalInt(const std::optional<T>& v) {
  return v.has_value() ? static_cast<int64_t>(*v) : -1;
}

}  // namespace

void AppendEquivalenceKey(const Pod& pod, std::string& key) {
  const PodSpec& spec = pod.spec;
  Field(key, spec.namespace_name);
  Containers(key, spec.init_containers);
  Containers(key, spec.containers);
  Int(key, spec.pod_cpu_request_milli);
  Int(key, spec.pod_cpu_limit_milli);
  Int(key, OptionalInt(spec.cpu_policy));
  Int(key, OptionalInt(spec.topology_policy));
  Int(key, OptionalInt(spec.bind_policy));
  Field(key, spec.affinity_group);
  Int(key, static_cast<int64_t>(pod.node_selector.size()));
  for (const auto& [k, v] : pod.node_selector) {
    Field(key, k);
    Field(key, v);
  }
  Int(key, static_cast<int64_t>(pod.required_node_affinity.size()));
  for (const NodeSelectorTerm& t : pod.required_node_affinity) Term(key, t);
  Int(key, static_cast<int64_t>(pod.preferred_node_affinity.size()));
  for (const PreferredSchedulingTerm& t : pod.preferred_node_affinity) {
    Int(key, t.weight);
    Term(key, t.preference);
  }
  AffinityTerms(key, pod.pod_affinity.required);
  WeightedAffinityTerms(key, pod.pod_affinity.preferred);
  AffinityTerms(key, pod.pod_affinity.required_anti);
  WeightedAffinityTerms(key, pod.pod_affinity.preferred_anti);
  SpreadConstraints(key, pod.topology_spread_constraints);
  Strings(key, pod.container_images);
  Int(key, static_cast<int64_t>(pod.tolerations.size()));
  for (const Toleration& t : pod.tolerations) {
    Field(key, t.key);
    Field(key, t.value);
    Int(key, static_cast<int64_t>(t.op));
    Int(key, OptionalInt(t.effect));
    Int(key, t.toleration_seconds.value_or(-1));
  }
  Int(key, static_cast<int64_t>(pod.host_ports.size()));
  for (const HostPort& h : pod.host_ports) {
    Field(key, h.host_ip);
    Field(key, h.protocol);
    Int(key, h.port);
  }
  Int(key, static_cast<int64_t>(pod.extended_requests.size()));
  for (const auto& [name, amount] : pod.extended_requests) {
    Field(key, name);
    Int(key, amount);
  }
  Int(key, pod.pod_cpu_request_milli.value_or(-1));
  Int(key, pod.pod_memory_request_bytes.value_or(-1));
  Int(key, pod.overhead_cpu_milli);
  Int(key, pod.overhead_memory_bytes);
  Int(key, pod.priority);
  Field(key, pod.scheduler_name);
  Field(key, pod.node_name);
}

}  // namespace huygens::sched

#include "sched/pod.h"

#include <algorithm>
#include <iterator>

#include "fmt/format.h"

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

// A container's requests after API defaulting: a missing request defaults to the limit.
Amounts RequestsOf(const ContainerSpec& c) {
  return {c.cpu_request_milli > 0 ? c.cpu_request_milli : c.cpu_limit_milli,
          c.memory_request_bytes > 0 ? c.memory_request_bytes : c.memory_limit_bytes,
          c.isolated_cpus};
}

Amounts Max(const Amounts& a, const Amounts& b) {
  return {std::max(a.cpu, b.cpu), std::max(a.memory, b.memory),
          std::max(a.isolated, b.isolated)};
}

}  // namespace

PodRequests ComputePodRequests(const PodSpec& pod) {
  Amounts sum;
  for (const ContainerSpec& c : pod.containers) sum += RequestsOf(c);
  // Init containers run in order; restartable ones (sidecars) keep running beside the rest.
  Amounts restartable, init_peak;
  for (const ContainerSpec& c : pod.init_containers) {
    const Amounts r = RequestsOf(c);
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
  const Amounts total = Max(sum, init_peak);
  PodRequests out{total.cpu, total.memory, total.isolated};
  if (pod.pod_cpu_request_milli > 0) out.cpu_milli = pod.pod_cpu_request_milli;  // KEP-2837
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

const char* ToString(SelectorOperator op) {
  switch (op) {
    case SelectorOperator::kIn: return "In";
    case SelectorOperator::kNotIn: return "NotIn";
    case SelectorOperator::kExists: return "Exists";
    case SelectorOperator::kDoesNotExist: return "DoesNotExist";
    case SelectorOperator::kGt: return "Gt";
    case SelectorOperator::kLt: return "Lt";
  }
  return "?";
}

// Reminder for AppendEquivalenceKey: a changed Pod, PodSpec or ContainerSpec must be reviewed
// there (sizes on x86-64 with libstdc++).
static_assert(sizeof(void*) != 8 || sizeof(ContainerSpec) == 80,
              "ContainerSpec changed: review AppendEquivalenceKey");
static_assert(sizeof(void*) != 8 || sizeof(PodSpec) == 216,
              "PodSpec changed: review AppendEquivalenceKey");
static_assert(sizeof(void*) != 8 || sizeof(Pod) == 536,
              "Pod changed: review AppendEquivalenceKey");

namespace {

// Writes one length-prefixed field, so that no two different pods share a key.
void Field(std::string& key, std::string_view text) {
  fmt::format_to(std::back_inserter(key), "{}:{}|", text.size(), text);
}

void Requirements(std::string& key, const std::vector<NodeSelectorRequirement>& requirements) {
  fmt::format_to(std::back_inserter(key), "r{}|", requirements.size());
  for (const NodeSelectorRequirement& r : requirements) {
    Field(key, r.key);
    fmt::format_to(std::back_inserter(key), "{}/{}|", static_cast<int>(r.op), r.values.size());
    for (const std::string& v : r.values) Field(key, v);
  }
}

void Term(std::string& key, const NodeSelectorTerm& term) {
  Requirements(key, term.match_expressions);
  Requirements(key, term.match_fields);
}

void Containers(std::string& key, const std::vector<ContainerSpec>& containers) {
  fmt::format_to(std::back_inserter(key), "c{}|", containers.size());
  for (const ContainerSpec& c : containers) {
    Field(key, c.name);
    fmt::format_to(std::back_inserter(key), "{},{},{},{},{},{},{}|", c.cpu_request_milli,
                   c.cpu_limit_milli, c.memory_request_bytes, c.memory_limit_bytes,
                   c.isolated_cpus, c.init, c.restartable);
  }
}

template <typename T>
int OptionalInt(const std::optional<T>& v) {
  return v.has_value() ? static_cast<int>(*v) : -1;
}

}  // namespace

void AppendEquivalenceKey(const Pod& pod, std::string& key) {
  const PodSpec& spec = pod.spec;
  Field(key, spec.namespace_name);
  Containers(key, spec.init_containers);
  Containers(key, spec.containers);
  fmt::format_to(std::back_inserter(key), "{},{},{},{},{}|", spec.pod_cpu_request_milli,
                 spec.pod_cpu_limit_milli, OptionalInt(spec.cpu_policy),
                 OptionalInt(spec.topology_policy), OptionalInt(spec.bind_policy));
  Field(key, spec.affinity_group);
  fmt::format_to(std::back_inserter(key), "s{}|", pod.node_selector.size());
  for (const auto& [k, v] : pod.node_selector) {
    Field(key, k);
    Field(key, v);
  }
  fmt::format_to(std::back_inserter(key), "a{}|", pod.required_node_affinity.size());
  for (const NodeSelectorTerm& t : pod.required_node_affinity) Term(key, t);
  fmt::format_to(std::back_inserter(key), "p{}|", pod.preferred_node_affinity.size());
  for (const PreferredSchedulingTerm& t : pod.preferred_node_affinity) {
    fmt::format_to(std::back_inserter(key), "{}|", t.weight);
    Term(key, t.preference);
  }
  fmt::format_to(std::back_inserter(key), "t{}|", pod.tolerations.size());
  for (const Toleration& t : pod.tolerations) {
    Field(key, t.key);
    Field(key, t.value);
    fmt::format_to(std::back_inserter(key), "{},{},{}|", static_cast<int>(t.op),
                   OptionalInt(t.effect), t.toleration_seconds.value_or(-1));
  }
  fmt::format_to(std::back_inserter(key), "h{}|", pod.host_ports.size());
  for (const HostPort& h : pod.host_ports) {
    Field(key, h.host_ip);
    Field(key, h.protocol);
    fmt::format_to(std::back_inserter(key), "{}|", h.port);
  }
  fmt::format_to(std::back_inserter(key), "e{}|", pod.extended_requests.size());
  for (const auto& [name, amount] : pod.extended_requests) {
    Field(key, name);
    fmt::format_to(std::back_inserter(key), "{}|", amount);
  }
  fmt::format_to(std::back_inserter(key), "{}|", pod.priority);
  Field(key, pod.scheduler_name);
  Field(key, pod.node_name);
}

}  // namespace huygens::sched

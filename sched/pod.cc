#include "sched/pod.h"

#include <algorithm>

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

}  // namespace huygens::sched

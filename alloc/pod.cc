#include "alloc/pod.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "base/enum_names.h"

namespace huygens {
namespace {

constexpr std::array<std::pair<const char*, QosClass>, 3> kQosNames = {{
    {"Guaranteed", QosClass::kGuaranteed},
    {"Burstable", QosClass::kBurstable},
    {"BestEffort", QosClass::kBestEffort},
}};
constexpr std::array<std::pair<const char*, CpuPolicy>, 3> kCpuPolicyNames = {{
    {"exclusive", CpuPolicy::kExclusive},
    {"shared", CpuPolicy::kShared},
    {"none", CpuPolicy::kNone},
}};
constexpr std::array<std::pair<const char*, BindPolicy>, 3> kBindPolicyNames = {{
    {"packed", BindPolicy::kPacked},
    {"full-cores", BindPolicy::kFullCores},
    {"spread-cores", BindPolicy::kSpreadCores},
}};
constexpr std::array<std::pair<const char*, TopologyPolicy>, 4> kTopologyPolicyNames = {{
    {"none", TopologyPolicy::kNone},
    {"best-effort", TopologyPolicy::kBestEffort},
    {"restricted", TopologyPolicy::kRestricted},
    {"single-numa-node", TopologyPolicy::kSingleNumaNode},
}};
constexpr std::array<std::pair<const char*, TopologyScope>, 2> kScopeNames = {{
    {"container", TopologyScope::kContainer},
    {"pod", TopologyScope::kPod},
}};
constexpr std::array<std::pair<const char*, AffinityGroupPolicy>, 3> kAffinityGroupPolicyNames = {{
    {"same-numa", AffinityGroupPolicy::kSameNuma},
    {"nearest", AffinityGroupPolicy::kNearest},
    {"spread", AffinityGroupPolicy::kSpread},
}};

}  // namespace

std::string PodName(const PodSpec& pod) {
  if (pod.name.empty()) return fmt::format("pod {}", pod.uid);
  return fmt::format("pod {}/{} ({})", pod.namespace_name, pod.name, pod.uid);
}

int64_t EffectiveRequest(int64_t request, int64_t limit) { return request == 0 ? limit : request; }

std::map<std::string, int64_t> PodExtendedRequests(const PodSpec& pod) {
  using Amounts = std::map<std::string, int64_t>;
  auto add = [](Amounts& into, const Amounts& more) {
    for (const auto& [name, n] : more) into[name] += n;
  };
  auto max_into = [](Amounts& into, const Amounts& other) {
    for (const auto& [name, n] : other) into[name] = std::max(into[name], n);
  };
  Amounts sum, restartable, init_peak;
  for (const ContainerSpec& c : pod.containers) add(sum, c.extended_requests);
  for (const ContainerSpec& c : pod.init_containers) {
    if (c.restartable) {
      add(sum, c.extended_requests);
      add(restartable, c.extended_requests);
      max_into(init_peak, restartable);
    } else {
      Amounts step = c.extended_requests;
      add(step, restartable);
      max_into(init_peak, step);
    }
  }
  max_into(sum, init_peak);
  std::erase_if(sum, [](const auto& e) { return e.second == 0; });
  return sum;
}

QosClass QosOf(const PodSpec& pod) {
  // As kubelet's GetPodQOS, over cpu and memory of every init and app container: BestEffort
  // when nothing is requested or limited; Guaranteed when every container limits both cpu and
  // memory and requests equal limits; else Burstable.
  bool any_set = false;
  bool guaranteed = true;
  auto visit = [&](const ContainerSpec& c) {
    if (c.cpu_request_milli != 0 || c.cpu_limit_milli != 0 || c.memory_request_bytes != 0 ||
        c.memory_limit_bytes != 0) {
      any_set = true;
    }
    if (c.cpu_limit_milli == 0 || c.memory_limit_bytes == 0) {
      guaranteed = false;
      return;
    }
    if (EffectiveRequest(c.cpu_request_milli, c.cpu_limit_milli) != c.cpu_limit_milli ||
        EffectiveRequest(c.memory_request_bytes, c.memory_limit_bytes) != c.memory_limit_bytes) {
      guaranteed = false;
    }
  };
  for (const ContainerSpec& c : pod.init_containers) visit(c);
  for (const ContainerSpec& c : pod.containers) visit(c);
  if (!any_set) return QosClass::kBestEffort;
  return guaranteed ? QosClass::kGuaranteed : QosClass::kBurstable;
}

CpuPolicy EffectiveCpuPolicy(const PodSpec& pod) {
  if (pod.cpu_policy.has_value()) return *pod.cpu_policy;
  if (QosOf(pod) != QosClass::kGuaranteed) return CpuPolicy::kShared;
  auto whole = [](const ContainerSpec& c) {
    const int64_t request = EffectiveRequest(c.cpu_request_milli, c.cpu_limit_milli);
    return request > 0 && request % 1000 == 0;
  };
  for (const ContainerSpec& c : pod.init_containers) {
    if (!whole(c)) return CpuPolicy::kShared;
  }
  for (const ContainerSpec& c : pod.containers) {
    if (!whole(c)) return CpuPolicy::kShared;
  }
  return CpuPolicy::kExclusive;
}

int ExclusiveCpus(const PodSpec& pod, const ContainerSpec& container) {
  if (QosOf(pod) != QosClass::kGuaranteed) return 0;
  const int64_t request = EffectiveRequest(container.cpu_request_milli, container.cpu_limit_milli);
  if (request <= 0 || request % 1000 != 0) return 0;
  return static_cast<int>(request / 1000);
}

const char* ToString(QosClass q) { return NameOf(kQosNames, q); }
const char* ToString(CpuPolicy p) { return NameOf(kCpuPolicyNames, p); }
const char* ToString(BindPolicy p) { return NameOf(kBindPolicyNames, p); }
const char* ToString(TopologyPolicy p) { return NameOf(kTopologyPolicyNames, p); }
const char* ToString(TopologyScope s) { return NameOf(kScopeNames, s); }
const char* ToString(AffinityGroupPolicy p) { return NameOf(kAffinityGroupPolicyNames, p); }

std::optional<CpuPolicy> ParseCpuPolicy(const std::string& s) {
  return ParseName(kCpuPolicyNames, s);
}
std::optional<BindPolicy> ParseBindPolicy(const std::string& s) {
  return ParseName(kBindPolicyNames, s);
}
std::optional<TopologyPolicy> ParseTopologyPolicy(const std::string& s) {
  return ParseName(kTopologyPolicyNames, s);
}
std::optional<TopologyScope> ParseTopologyScope(const std::string& s) {
  return ParseName(kScopeNames, s);
}
std::optional<AffinityGroupPolicy> ParseAffinityGroupPolicy(const std::string& s) {
  return ParseName(kAffinityGroupPolicyNames, s);
}

}  // namespace huygens

#include "alloc/pod.h"

#include <algorithm>
#include <array>
#include <utility>

#include "fmt/format.h"

namespace huygens {
namespace {

// Kubernetes API defaulting: a container with a limit and no request gets request = limit.
int64_t EffectiveRequest(int64_t request, int64_t limit) { return request == 0 ? limit : request; }

template <typename Enum, size_t N>
std::optional<Enum> ParseName(const std::array<std::pair<const char*, Enum>, N>& names,
                              const std::string& s) {
  for (const auto& [name, value] : names) {
    if (s == name) return value;
  }
  return std::nullopt;
}

template <typename Enum, size_t N>
const char* NameOf(const std::array<std::pair<const char*, Enum>, N>& names, Enum value) {
  for (const auto& [name, v] : names) {
    if (v == value) return name;
  }
  return "unknown";
}

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

}  // namespace

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

absl::StatusOr<int64_t> ParseCpuMilli(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        fmt::format("{:?} is not a CPU quantity: {} (write CPUs such as \"4\" or \"2.5\", or "
                    "millicores such as \"500m\")",
                    std::string(text), why));
  };
  std::string_view rest = text;
  const bool milli = rest.ends_with('m');
  if (milli) rest.remove_suffix(1);
  const size_t dot = rest.find('.');
  const std::string_view whole = rest.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  const auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if ((whole.empty() && fraction.empty()) || !digits(whole) || !digits(fraction)) {
    return bad("not a non-negative decimal number");
  }
  // Millicores = whole * scale + the fraction's first digits; the rest must be zeros.
  const size_t kept = milli ? 0 : 3;
  for (size_t i = kept; i < fraction.size(); ++i) {
    if (fraction[i] != '0') return bad("finer than one millicore");
  }
  constexpr int64_t kMax = int64_t{1} << 53;
  int64_t value = 0;
  for (char c : whole) {
    value = value * 10 + (c - '0');
    if (value > kMax) return bad("too large");
  }
  if (milli) return value;
  int64_t frac = 0;
  for (size_t i = 0; i < kept; ++i) {
    frac = frac * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
  }
  if (value > kMax / 1000) return bad("too large");
  return value * 1000 + frac;
}

}  // namespace huygens

#include "alloc/static_policy.h"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "fmt/format.h"

namespace huygens {
namespace {

constexpr char kFullPcpusOnly[] = "full-pcpus-only";
constexpr char kDistributeAcrossNuma[] = "distribute-cpus-across-numa";
constexpr char kAlignBySocket[] = "align-by-socket";
constexpr char kDistributeAcrossCores[] = "distribute-cpus-across-cores";
constexpr char kStrictReservation[] = "strict-cpu-reservation";
constexpr char kPreferAlignByUncore[] = "prefer-align-cpus-by-uncorecache";

// Payload marking kubelet's SMTAlignmentError.
constexpr char kSmtAlignmentPayload[] = "huygens.io/smt-alignment-error";

// Go's strconv.ParseBool.
std::optional<bool> ParseGoBool(const std::string& s) {
  static const std::array<const char*, 6> kTrue = {"1", "t", "T", "TRUE", "true", "True"};
  static const std::array<const char*, 6> kFalse = {"0", "f", "F", "FALSE", "false", "False"};
  for (const char* t : kTrue) {
    if (s == t) return true;
  }
  for (const char* f : kFalse) {
    if (s == f) return false;
  }
  return std::nullopt;
}

absl::Status SmtAlignmentError(std::string message) {
  absl::Status status = absl::FailedPreconditionError(std::move(message));
  status.SetPayload(kSmtAlignmentPayload, absl::Cord("SMTAlignmentError"));
  return status;
}

// Whether the pod sets pod-level resources (KEP-2837), which kubelet's static policy does not
// support: such pods get no exclusive CPUs.
bool UsesPodLevelResources(const PodSpec& pod) {
  return pod.pod_cpu_request_milli != 0 || pod.pod_cpu_limit_milli != 0;
}

const ContainerSpec* FindContainer(const PodSpec& pod, const std::string& name) {
  for (const ContainerSpec& c : pod.init_containers) {
    if (c.name == name) return &c;
  }
  for (const ContainerSpec& c : pod.containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<StaticPolicyOptions> ParseStaticPolicyOptions(
    const std::map<std::string, std::string>& options) {
  StaticPolicyOptions opts;
  const std::array<std::pair<const char*, bool StaticPolicyOptions::*>, 6> fields = {{
      {kFullPcpusOnly, &StaticPolicyOptions::full_pcpus_only},
      {kDistributeAcrossNuma, &StaticPolicyOptions::distribute_cpus_across_numa},
      {kAlignBySocket, &StaticPolicyOptions::align_by_socket},
      {kDistributeAcrossCores, &StaticPolicyOptions::distribute_cpus_across_cores},
      {kStrictReservation, &StaticPolicyOptions::strict_cpu_reservation},
      {kPreferAlignByUncore, &StaticPolicyOptions::prefer_align_cpus_by_uncorecache},
  }};
  for (const auto& [name, value] : options) {
    bool StaticPolicyOptions::*field = nullptr;
    for (const auto& [known, member] : fields) {
      if (name == known) field = member;
    }
    if (field == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("unknown CPU Manager Policy option: {:?}", name));
    }
    const std::optional<bool> parsed = ParseGoBool(value);
    if (!parsed.has_value()) {
      return absl::InvalidArgumentError(fmt::format(
          "bad value for option {:?}: strconv.ParseBool: parsing {:?}: invalid syntax", name,
          value));
    }
    opts.*field = *parsed;
  }
  // kubelet's incompatible combinations, in kubelet's order of checking.
  const std::array<std::tuple<bool, const char*, const char*>, 4> conflicts = {{
      {opts.full_pcpus_only && opts.distribute_cpus_across_cores, kFullPcpusOnly,
       kDistributeAcrossCores},
      {opts.distribute_cpus_across_numa && opts.distribute_cpus_across_cores,
       kDistributeAcrossNuma, kDistributeAcrossCores},
      {opts.prefer_align_cpus_by_uncorecache && opts.distribute_cpus_across_cores,
       kPreferAlignByUncore, kDistributeAcrossCores},
      {opts.prefer_align_cpus_by_uncorecache && opts.distribute_cpus_across_numa,
       kPreferAlignByUncore, kDistributeAcrossNuma},
  }};
  for (const auto& [conflict, a, b] : conflicts) {
    if (conflict) {
      return absl::InvalidArgumentError(
          fmt::format("static policy options {} and {} can not be used at the same time", a, b));
    }
  }
  return opts;
}

bool IsSmtAlignmentError(const absl::Status& status) {
  return status.GetPayload(kSmtAlignmentPayload).has_value();
}

absl::StatusOr<StaticPolicy> StaticPolicy::Create(const CpuTopology& topo,
                                                  std::optional<CpuSet> reserved_cpus,
                                                  int num_reserved_cpus,
                                                  StaticPolicyOptions options) {
  if (num_reserved_cpus < 0) {
    return absl::InvalidArgumentError(
        fmt::format("num_reserved_cpus {} is negative", num_reserved_cpus));
  }
  StaticPolicy policy(topo, options);
  if (options.align_by_socket &&
      policy.index_.NumSockets() > policy.index_.NumNumaNodes()) {
    return absl::InvalidArgumentError(
        "Align by socket is not compatible with hardware where number of sockets are more than "
        "number of NUMA");
  }
  const CpuSet online = topo.OnlineCpus();
  CpuSet reserved;
  if (reserved_cpus.has_value() && !reserved_cpus->Empty()) {
    if (!reserved_cpus->IsSubsetOf(online)) {
      return absl::InvalidArgumentError(
          fmt::format("reserved cpus {:?} are not all online CPUs of the machine ({:?})",
                      reserved_cpus->ToString(), online.ToString()));
    }
    reserved = *reserved_cpus;
    if (num_reserved_cpus == 0) num_reserved_cpus = reserved.Size();
  } else {
    if (num_reserved_cpus == 0) {
      return absl::InvalidArgumentError(
          "the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than "
          "zero");
    }
    // kubelet: the policy's own takeByTopology over all CPUs (options apply).
    absl::StatusOr<CpuSet> taken = policy.Take(online, num_reserved_cpus);
    if (taken.ok()) reserved = *taken;
  }
  if (reserved.Size() != num_reserved_cpus) {
    return absl::InvalidArgumentError(fmt::format(
        "[cpumanager] unable to reserve the required amount of CPUs (size of {} did not equal "
        "{})",
        reserved.ToString(), num_reserved_cpus));
  }
  CpuSet::Builder physical;
  for (int cpu : reserved) physical.Add(topo.SiblingsOf(cpu));
  policy.reserved_ = reserved;
  policy.reserved_physical_ = physical.Build();
  return policy;
}

CpuManagerState StaticPolicy::InitialState() const {
  CpuManagerState state;
  state.default_cpu_set = topo_.OnlineCpus();
  if (options_.strict_cpu_reservation) {
    state.default_cpu_set = state.default_cpu_set.Difference(reserved_);
  }
  return state;
}

CpuSet StaticPolicy::AvailableCpus(const CpuManagerState& state) const {
  return state.default_cpu_set.Difference(reserved_);
}

CpuSet StaticPolicy::ReusableCpus(const CpuManagerState& state, const PodSpec& pod) const {
  auto pod_it = state.assignments.find(pod.uid);
  if (pod_it == state.assignments.end()) return CpuSet();
  const std::map<std::string, CpuSet>& held = pod_it->second;
  auto cpus_of = [&](const ContainerSpec& c) {
    auto it = held.find(c.name);
    return it == held.end() ? CpuSet() : it->second;
  };
  std::vector<CpuSet> reusable, kept;
  for (const ContainerSpec& c : pod.init_containers) {
    (c.restartable ? kept : reusable).push_back(cpus_of(c));
  }
  for (const ContainerSpec& c : pod.containers) kept.push_back(cpus_of(c));
  return CpuSet::UnionAll(reusable).Difference(CpuSet::UnionAll(kept));
}

absl::StatusOr<CpuSet> StaticPolicy::Take(const CpuSet& available, int num_cpus) const {
  TakeOptions take;
  take.whole_units_by_average_size = true;  // as kubelet, also on hybrid machines
  if (options_.distribute_cpus_across_cores) {
    take.cpu_sorting_strategy = CpuSortingStrategy::kSpread;
  }
  if (options_.distribute_cpus_across_numa) {
    const int group = options_.full_pcpus_only ? index_.CpusPerCore() : 1;
    return TakeByTopologyNumaDistributed(index_, available, num_cpus, group, take);
  }
  take.prefer_align_by_uncore_cache = options_.prefer_align_cpus_by_uncorecache;
  return TakeByTopology(index_, available, num_cpus, take);
}

absl::StatusOr<CpuSet> StaticPolicy::Allocate(CpuManagerState& state, const PodSpec& pod,
                                              const std::string& container_name,
                                              const std::optional<TopologyHint>& affinity) const {
  const ContainerSpec* container = FindContainer(pod, container_name);
  if (container == nullptr) {
    return absl::NotFoundError(fmt::format("pod {:?} ({}): no container {:?}", pod.name,
                                           pod.uid, container_name));
  }
  const int num_cpus = ExclusiveCpus(pod, *container);
  // Shared pool: not Guaranteed, fractional or no request, or pod-level resources (kubelet
  // 1.34 skips exclusive allocation for those).
  if (num_cpus == 0 || UsesPodLevelResources(pod)) return state.default_cpu_set;

  // A container already assigned keeps its CPUs, before any full-pcpus-only check: its CPUs are
  // no longer in the default set, so counting free physical CPUs would refuse the re-admission
  // (after a kubelet restart) of what it already holds. This follows kubernetes PR 129079,
  // merged upstream after v1.35; kubelet v1.35.4 still checks first (docs/allocate.md).
  if (auto pod_it = state.assignments.find(pod.uid); pod_it != state.assignments.end()) {
    if (auto it = pod_it->second.find(container_name); it != pod_it->second.end()) {
      return it->second;  // kubelet: already present in state, skipping
    }
  }
  if (options_.full_pcpus_only) {
    const int per_core = index_.CpusPerCore();
    if (num_cpus % per_core != 0) {
      return SmtAlignmentError(fmt::format(
          "SMT Alignment Error: requested {} cpus not multiple cpus per core = {}", num_cpus,
          per_core));
    }
    // kubelet counts the siblings of reserved CPUs as unavailable here.
    const int physical = state.default_cpu_set.Difference(reserved_physical_).Size();
    if (num_cpus > physical) {
      return SmtAlignmentError(fmt::format(
          "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = {}, "
          "requested CPUs = {}, CPUs per core = {}",
          physical, num_cpus, per_core));
    }
  }
  const CpuSet allocatable = AvailableCpus(state).Union(ReusableCpus(state, pod));
  static const std::vector<int> kNoAffinity;
  absl::StatusOr<CpuSet> taken = TakeAligned(
      topo_, allocatable, num_cpus, affinity.has_value() ? affinity->numa_nodes : kNoAffinity,
      options_.align_by_socket,
      [this](const CpuSet& available, int n) { return Take(available, n); });
  if (!taken.ok()) return taken.status();
  const CpuSet result = *taken;
  state.default_cpu_set = state.default_cpu_set.Difference(result);
  state.assignments[pod.uid][container_name] = result;
  return result;
}

void StaticPolicy::RemoveContainer(CpuManagerState& state, const std::string& pod_uid,
                                   const std::string& container_name) const {
  auto pod_it = state.assignments.find(pod_uid);
  if (pod_it == state.assignments.end()) return;
  auto it = pod_it->second.find(container_name);
  if (it == pod_it->second.end()) return;
  CpuSet release = it->second;
  pod_it->second.erase(it);
  // CPUs still held by another container of the pod (reused from an init container) stay out
  // of the shared pool.
  for (const auto& [name, cpus] : pod_it->second) release = release.Difference(cpus);
  if (pod_it->second.empty()) state.assignments.erase(pod_it);
  state.default_cpu_set = state.default_cpu_set.Union(release);
}

}  // namespace huygens

#include "agent/reconciler.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "agent/pod.h"
#include "base/status.h"
#include "fmt/format.h"
#include "kube/resource.h"
#include "spdlog/spdlog.h"

namespace huygens::agent {
namespace {

using nlohmann::json;

bool Same(const cri::CpusetResources& a, const CpuSet& cpus, const CpuSet& mems) {
  return a.cpus == cpus && a.mems == mems;
}

}  // namespace

// A Huygens pod admitted into this pass's NodeState.
struct Reconciler::Admitted {
  const NodePod* pod = nullptr;
  PodAllocation allocation;
  std::optional<std::string> error;               // a container failed to apply
  std::map<std::string, std::string> observed;    // container -> cpus seen/applied
  std::set<std::string> running;                  // containers with a live runtime container
};

absl::StatusOr<std::unique_ptr<Reconciler>> Reconciler::Create(ReconcilerOptions options,
                                                               cri::ContainerRuntime* runtime,
                                                               kube::Client* client,
                                                               Clock* clock) {
  NodeConfig config;
  config.name = options.node_name;
  config.mode = options.mode;
  config.system_cpus = options.system_cpus;
  config.memory_manager = options.memory_manager;
  absl::StatusOr<NodeState> empty = NodeState::Create(options.topology, config);
  if (!empty.ok()) return empty.status();
  std::unique_ptr<Reconciler> r(
      new Reconciler(std::move(options), runtime, client, clock, std::move(*empty)));
  if (!r->options_.checkpoint_path.empty()) {
    r->checkpoint_file_.emplace(r->options_.checkpoint_path, CheckpointHooks{
        .now = [clock] {
          return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                          clock->Now().time_since_epoch())
                                          .count());
        }});
    absl::StatusOr<CheckpointFile::LoadResult> loaded = r->checkpoint_file_->Load();
    if (!loaded.ok()) return loaded.status();
    switch (loaded->state) {
      case CheckpointFile::LoadResult::State::kLoaded:
        for (const auto& [spec, allocation] : loaded->checkpoint.pods) {
          r->applied_pods_[spec.uid] = allocation;
        }
        r->last_checkpoint_ = loaded->checkpoint;
        break;
      case CheckpointFile::LoadResult::State::kCorrupt:
        r->pending_warnings_.push_back(fmt::format("checkpoint {} was corrupt ({}); moved to {}",
                                                   r->options_.checkpoint_path, loaded->error,
                                                   loaded->moved_to));
        break;
      case CheckpointFile::LoadResult::State::kMissing:
        break;
    }
  }
  return r;
}

Reconciler::Reconciler(ReconcilerOptions options, cri::ContainerRuntime* runtime,
                       kube::Client* client, Clock* clock, NodeState empty)
    : options_(std::move(options)),
      runtime_(runtime),
      client_(client),
      clock_(clock),
      events_(client, clock),
      empty_(std::move(empty)) {}

// What one pass works out, step by step (Reconcile).
struct Reconciler::Pass {
  std::vector<NodePod> pods;                          // this node's live pods, as listed
  std::map<std::string, const NodePod*> by_uid;       // into `pods`
  NodeState state;                                    // the desired state
  std::map<std::string, AllocationStatus> refused;    // uid -> conflict / failed
  std::map<std::string, Admitted> admitted;           // uid -> admitted Huygens pod
};

ReconcileReport Reconciler::Reconcile(const ReconcileInput& input) {
  ReconcileReport report;
  report.warnings = std::move(pending_warnings_);
  pending_warnings_.clear();
  Pass pass{.state = empty_};
  CollectPods(input, pass, report);
  AdmitPods(input, pass, report);
  ConvergeContainers(pass, report);
  ReportStatuses(pass, report);
  if (report.runtime_ok) SaveCheckpoint(pass, report);
  return report;
}

// The pods of this node: decoded (a pod that does not decode is a warning), terminal ones left
// out.
void Reconciler::CollectPods(const ReconcileInput& input, Pass& pass, ReconcileReport& report) {
  std::vector<NodePod>& pods = pass.pods;
  for (const json& object : input.pods) {
    absl::StatusOr<NodePod> pod = kube::DecodePod(object);
    if (!pod.ok()) {
      report.warnings.push_back(Msg(pod.status()));
      continue;
    }
    if (pod->node_name != options_.node_name || pod->terminal()) continue;
    pods.push_back(std::move(*pod));
  }
  std::map<std::string, const NodePod*>& by_uid = pass.by_uid;
  for (const NodePod& p : pods) by_uid[p.spec.uid] = &p;
}

// Desired state: kubelet's pods first, then Huygens pods in admission order (rule 2).
void Reconciler::AdmitPods(const ReconcileInput& input, Pass& pass, ReconcileReport& report) {
  NodeState& state = pass.state;
  if (input.kubelet.has_value()) {
    for (std::string& v : ImportKubeletCpus(state, *input.kubelet)) {
      report.warnings.push_back("kubelet checkpoint: " + v);
    }
  }
  std::vector<std::pair<const NodePod*, PodAllocation>> candidates;
  std::map<std::string, AllocationStatus>& refused = pass.refused;
  for (const NodePod& p : pass.pods) {
    if (!p.allocation.has_value()) continue;
    absl::StatusOr<PodAllocation> a = AllocationFromJson(*p.allocation, p.spec.uid);
    if (!a.ok()) {
      refused[p.spec.uid] = {.state = AllocationState::kFailed, .reason = Msg(a.status())};
      continue;
    }
    candidates.emplace_back(&p, std::move(*a));
  }
  const auto rank = [&](const std::pair<const NodePod*, PodAllocation>& c) {
    auto it = applied_pods_.find(c.first->spec.uid);
    const bool applied = it != applied_pods_.end() && it->second == c.second;
    return std::tuple(!applied, c.first->creation_timestamp, c.first->spec.uid);
  };
  std::sort(candidates.begin(), candidates.end(),
            [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  std::map<std::string, Admitted>& admitted = pass.admitted;
  for (auto& [pod, allocation] : candidates) {
    const std::string& uid = pod->spec.uid;
    if (state.OwnerOf(uid) == Owner::kKubelet && state.Pods().contains(uid)) {
      refused[uid] = {.state = AllocationState::kConflict,
                      .reason = "the pod also holds CPUs in kubelet's checkpoint"};
      continue;
    }
    absl::Status s = state.Assume(pod->spec, allocation);
    if (!s.ok()) {
      const bool conflict = s.code() == absl::StatusCode::kFailedPrecondition;
      refused[uid] = {.state = conflict ? AllocationState::kConflict : AllocationState::kFailed,
                      .reason = Msg(s)};
      continue;
    }
    spdlog::debug("pod {}/{}: allocation admitted: {}", pod->spec.namespace_name, pod->spec.name,
                  DescribeAllocation(allocation));
    admitted[uid] = Admitted{.pod = pod, .allocation = std::move(allocation)};
  }
  for (const auto& [uid, status] : refused) {
    const NodePod& p = *pass.by_uid.at(uid);
    spdlog::debug("pod {}/{}: allocation not admitted ({}): {}", p.spec.namespace_name, p.spec.name,
                  ToString(status.state), status.reason);
  }
  report.exclusive = state.ExclusiveCpus();
  if (const MemoryManagerState* memory = state.Memory()) {
    for (const auto& [numa, node] : memory->machine) {
      for (const auto& [resource, table] : node.memory_map) {
        if (table.reserved > 0) report.memory_held[numa][resource] = table.reserved;
      }
    }
  }
}

// Actual state and convergence (rule 3): every running container of a known pod to its target.
void Reconciler::ConvergeContainers(Pass& pass, ReconcileReport& report) {
  NodeState& state = pass.state;
  const std::map<std::string, const NodePod*>& by_uid = pass.by_uid;
  const std::map<std::string, AllocationStatus>& refused = pass.refused;
  std::map<std::string, Admitted>& admitted = pass.admitted;
  absl::StatusOr<std::vector<cri::ContainerInfo>> containers = runtime_->ListContainers();
  if (!containers.ok()) {
    report.runtime_ok = false;
    spdlog::error("runtime {}: cannot list containers: {}", runtime_->Name(),
                  Msg(containers.status()));
    for (auto& [uid, a] : admitted) {
      a.error = fmt::format("runtime {}: {}", runtime_->Name(), Msg(containers.status()));
    }
  } else {
    CpuSet default_mems;
    for (const NumaNode& n : options_.topology->NumaNodes()) {
      if (n.memory_bytes > 0) default_mems = default_mems.Union(CpuSet{n.id});
    }
    if (default_mems.Empty()) {
      for (int id : options_.topology->NumaNodeIds()) default_mems = default_mems.Union(CpuSet{id});
    }
    CpuSet shared = options_.mode == NodeMode::kAllocatable
                        ? state.SharedPool()
                        : options_.topology->OnlineCpus()
                              .Difference(state.UserPool())
                              .Difference(state.SystemPool());
    // Exclusive pods took every user CPU: shared containers share the system pool (as kubelet's
    // shared pool always keeps its reserved CPUs), never an exclusive CPU.
    if (shared.Empty()) shared = state.SystemPool();
    const auto listed = [](const std::vector<std::string>& namespaces, const std::string& ns) {
      return std::find(namespaces.begin(), namespaces.end(), ns) != namespaces.end();
    };
    for (const cri::ContainerInfo& c : *containers) {
      if (c.pod_uid.empty()) continue;
      if (c.state != cri::ContainerState::kRunning && c.state != cri::ContainerState::kCreated) {
        continue;
      }
      // Nothing runs on an exclusive CPU but its owner: a container Huygens does not pin (a pod
      // not in the pod list yet, a refused allocation, cpu-policy none outside the namespaces
      // that may opt out) runs in the shared pool.
      auto pod_it = by_uid.find(c.pod_uid);
      const NodePod* pod = pod_it == by_uid.end() ? nullptr : pod_it->second;
      const std::string uid = c.pod_uid;
      if (state.OwnerOf(uid) == Owner::kKubelet && state.Pods().contains(uid)) {
        continue;  // kubelet's static policy owns it
      }
      Desired want{.cpus = shared, .mems = default_mems};
      auto adm = admitted.find(uid);
      if (adm != admitted.end()) {
        adm->second.running.insert(c.container_name);
        const ContainerAllocation* ca = adm->second.allocation.Find(c.container_name);
        if (ca != nullptr && ca->exclusive) want.cpus = ca->cpuset;
        if (ca != nullptr && !ca->mems.Empty()) want.mems = ca->mems;
      } else if (listed(options_.system_namespaces, c.pod_namespace)) {
        if (state.SystemPool().Empty()) continue;
        want.cpus = state.SystemPool();
      } else if (pod != nullptr && !refused.contains(uid) && pod->spec.cpu_policy == CpuPolicy::kNone &&
                 listed(options_.cpu_policy_none_namespaces, c.pod_namespace)) {
        continue;  // opted out where the operator allows it
      }
      if (want.cpus.Empty()) {
        spdlog::warn("pod {}/{} container {}: target pool is empty; left alone", c.pod_namespace, c.pod_name,
                     c.container_name);
        continue;
      }
      CpuSet observed;
      absl::Status s = Converge(c, want, report, observed);
      if (adm == admitted.end()) continue;
      if (!s.ok()) {
        if (!adm->second.error.has_value()) {
          adm->second.error = fmt::format("container {:?}: {}", c.container_name, Msg(s));
        }
      } else {
        adm->second.observed[c.container_name] = observed.ToString();
      }
    }
    // Forget containers that are gone.
    std::set<std::string> live;
    for (const cri::ContainerInfo& c : *containers) live.insert(c.id);
    std::erase_if(set_by_us_, [&](const auto& kv) { return !live.contains(kv.first); });
  }
}

// Statuses: refused, admitted and kubelet-bound pods, sorted by uid.
void Reconciler::ReportStatuses(const Pass& pass, ReconcileReport& report) {
  const NodeState& state = pass.state;
  const std::map<std::string, const NodePod*>& by_uid = pass.by_uid;
  for (const auto& [uid, status] : pass.refused) {
    const NodePod& p = *by_uid.at(uid);
    Report(p.spec.namespace_name, p.spec.name, uid, p.allocation_status, status, report);
  }
  for (const auto& [uid, a] : pass.admitted) {
    AllocationStatus status;
    status.observed = a.observed;
    if (a.error.has_value()) {
      status.state = AllocationState::kFailed;
      status.reason = *a.error;
    } else {
      std::vector<std::string> missing;
      for (const ContainerAllocation& ca : a.allocation.containers) {
        if (ca.init && !ca.restartable) continue;  // runs to completion before the others
        if (!a.running.contains(ca.name)) missing.push_back(ca.name);
      }
      if (missing.empty()) {
        status.state = AllocationState::kApplied;
      } else {
        status.state = AllocationState::kPending;
        status.reason = fmt::format("waiting for container(s) {} to run", fmt::join(missing, ", "));
      }
    }
    Report(a.pod->spec.namespace_name, a.pod->spec.name, uid, a.pod->allocation_status, status,
           report);
  }
  for (const auto& [uid, allocation] : state.Pods()) {
    if (state.OwnerOf(uid) != Owner::kKubelet) continue;
    auto it = by_uid.find(uid);
    if (it == by_uid.end()) continue;
    AllocationStatus status{.state = AllocationState::kApplied,
                            .reason = "bound by kubelet's static CPU manager policy",
                            .owner = "kubelet"};
    for (const ContainerAllocation& ca : allocation.containers) {
      status.observed[ca.name] = ca.cpuset.ToString();
    }
    Report(it->second->spec.namespace_name, it->second->spec.name, uid, it->second->allocation_status,
           status, report);
  }
  std::sort(report.pods.begin(), report.pods.end(),
            [](const PodOutcome& a, const PodOutcome& b) { return a.uid < b.uid; });
}

// Local checkpoint: the admitted Huygens pods. REQUIRES: the runtime answered this pass.
void Reconciler::SaveCheckpoint(const Pass& pass, ReconcileReport& report) {
  NodeCheckpoint checkpoint{.node = options_.node_name};
  applied_pods_.clear();
  for (const auto& [uid, a] : pass.admitted) {
    checkpoint.pods.emplace_back(a.pod->spec, a.allocation);
    applied_pods_[uid] = a.allocation;
  }
  WriteCheckpoint(checkpoint, report);
}

absl::Status Reconciler::Converge(const cri::ContainerInfo& c, const Desired& want,
                                  ReconcileReport& report, CpuSet& observed) {
  const std::string who = fmt::format("pod {}/{} container {} ({})", c.pod_namespace, c.pod_name,
                                      c.container_name, c.id.substr(0, 12));
  absl::StatusOr<cri::CpusetResources> actual = runtime_->ReadCpuset(c);
  if (!actual.ok()) {
    if (actual.status().code() == absl::StatusCode::kNotFound) {
      observed = CpuSet();
      return absl::OkStatus();  // gone between list and read; the next pass sees it
    }
    ++report.update_failures;
    spdlog::warn("{}: cannot read its cpuset: {}", who, Msg(actual.status()));
    return actual.status();
  }
  const auto key = std::pair(c.pod_uid, c.container_name);
  if (Same(*actual, want.cpus, want.mems)) {
    spdlog::debug("{}: has cpus {} mems {} as wanted; nothing to write", who, want.cpus.ToString(),
                  want.mems.ToString());
    observed = actual->cpus;
    set_by_us_[c.id] = cri::CpusetResources{want.cpus, want.mems};
    known_containers_[key] = c.id;
    return absl::OkStatus();
  }
  auto mine = set_by_us_.find(c.id);
  const bool drift = mine != set_by_us_.end() && Same(mine->second, want.cpus, want.mems);
  auto known = known_containers_.find(key);
  const bool restart = !drift && known != known_containers_.end() && known->second != c.id;
  spdlog::debug("{}: setting cpus {} -> {}, mems {} -> {} through runtime {}{}", who, actual->cpus.ToString(),
                want.cpus.ToString(), actual->mems.ToString(), want.mems.ToString(), runtime_->Name(),
                drift ? " (drift)" : restart ? " (restarted container)" : "");
  const Clock::TimePoint start = clock_->Now();
  absl::Status s = runtime_->UpdateCpuset(c, want.cpus, want.mems);
  if (!s.ok()) {
    ++report.update_failures;
    spdlog::warn("{}: cannot set cpus {} mems {} (has cpus {}): {}", who, want.cpus.ToString(),
                 want.mems.ToString(), actual->cpus.ToString(), Msg(s));
    return s;
  }
  report.apply_latency_seconds.push_back(
      std::chrono::duration<double>(clock_->Now() - start).count());
  ++report.containers_applied;
  if (drift) ++report.drift_corrections;
  if (restart) ++report.restarts_reapplied;
  spdlog::info("{}: cpus {} -> {}, mems {} -> {}{}", who, actual->cpus.ToString(),
               want.cpus.ToString(), actual->mems.ToString(), want.mems.ToString(),
               drift ? " (drift corrected)" : restart ? " (restarted container)" : "");
  set_by_us_[c.id] = cri::CpusetResources{want.cpus, want.mems};
  known_containers_[key] = c.id;
  observed = want.cpus;
  return absl::OkStatus();
}

void Reconciler::Report(const std::string& ns, const std::string& name, const std::string& uid,
                        const std::optional<std::string>& current, const AllocationStatus& status,
                        ReconcileReport& report) {
  PodOutcome outcome{.uid = uid, .ns = ns, .name = name, .status = status};
  if (status.state == AllocationState::kConflict) ++report.conflicts;
  if (status.state == AllocationState::kFailed) ++report.failed;
  const std::string text = StatusToJson(status);
  if (current != text) {
    const json patch = {{"metadata", {{"annotations", {{kAllocationStatusAnnotation, text}}}}}};
    absl::StatusOr<json> patched = client_->MergePatch(kube::Pods(), ns, name, patch);
    if (!patched.ok()) {
      spdlog::warn("pod {}/{}: cannot write {}: {}", ns, name, kAllocationStatusAnnotation,
                   Msg(patched.status()));
    } else {
      outcome.patched = true;
      ++report.status_patches;
      spdlog::info("pod {}/{}: allocation {}{}{}", ns, name, ToString(status.state),
                   status.reason.empty() ? "" : ": ", status.reason);
      if (status.state == AllocationState::kConflict ||
          status.state == AllocationState::kFailed) {
        kube::EventRecord event{.ns = ns,
                                .name = name,
                                .uid = uid,
                                .type = "Warning",
                                .reason = status.state == AllocationState::kConflict
                                              ? "CpusetConflict"
                                              : "CpusetFailed",
                                .action = "ApplyCpuset",
                                .note = status.reason,
                                .reporting_controller = "huygens.io/agent",
                                .reporting_instance = options_.node_name};
        if (absl::Status e = events_.Record(event); !e.ok()) {
          spdlog::warn("pod {}/{}: cannot record event: {}", ns, name, Msg(e));
        }
      }
    }
  }
  report.pods.push_back(std::move(outcome));
}

void Reconciler::WriteCheckpoint(const NodeCheckpoint& checkpoint, ReconcileReport& report) {
  if (!checkpoint_file_.has_value() || last_checkpoint_ == checkpoint) return;
  if (absl::Status s = checkpoint_file_->Write(checkpoint); !s.ok()) {
    report.warnings.push_back(Msg(s));
    spdlog::error("{}", Msg(s));
    return;
  }
  last_checkpoint_ = checkpoint;
}

}  // namespace huygens::agent

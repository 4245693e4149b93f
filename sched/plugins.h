// The plugin registry: every plugin Huygens ships, constructed by name.
//
// What it is: one factory per plugin (each plugin lives in its own file, sched/plugin_*.cc)
// and NewPlugin, which maps a kube-scheduler-style name to its factory. Plugin semantics and
// reason strings are documented in docs/scheduler.md and in each factory's comment.
//
// Thread-safety: factories are pure; the plugins they return belong to one scheduler thread.
#ifndef HUYGENS_SCHED_PLUGINS_H_
#define HUYGENS_SCHED_PLUGINS_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/profile.h"

namespace huygens::sched {

// ---- kube-scheduler's default plugins (same semantics and reason strings) ------------------
// Filter: rejects a node with spec.unschedulable unless the pod tolerates the taint
// node.kubernetes.io/unschedulable:NoSchedule. Reason "node(s) were unschedulable"
// (UnschedulableAndUnresolvable).
std::unique_ptr<Plugin> NewNodeUnschedulable();
// Filter: a pod with spec.nodeName fits only that node. Reason "node(s) didn't match the
// requested node name" (UnschedulableAndUnresolvable).
std::unique_ptr<Plugin> NewNodeName();
// Filter: every NoSchedule / NoExecute taint must be tolerated. Reason "node(s) had
// untolerated taint {key: value}" (UnschedulableAndUnresolvable). Score: the number of
// PreferNoSchedule taints the pod does not tolerate, normalised reversed (fewer is better).
std::unique_ptr<Plugin> NewTaintToleration();
// Filter: nodeSelector and required node affinity. Reason "node(s) didn't match Pod's node
// affinity/selector" (UnschedulableAndUnresolvable). Score: sum of weights of the matching
// preferred terms, normalised to 0..100.
std::unique_ptr<Plugin> NewNodeAffinity();
// NodeAffinity's Filter as a predicate: the node carries the pod's spec.nodeSelector and matches
// one of its required node affinity terms (kube-scheduler's GetRequiredNodeAffinity(pod).Match).
bool MatchesRequiredNodeAffinity(const Pod& pod, const Node& node);
// Filter: the pod's host ports must be free on the node. Reason "node(s) didn't have free
// ports for the requested pod ports" (Unschedulable).
std::unique_ptr<Plugin> NewNodePorts();
// PreFilter + Filter: cpu, memory, pods, huygens.io/isolated-cpu and extended resources, the
// pod's as ComputePodRequests counts them (pod-level requests and overhead included).
// Reasons "Too many pods", "Insufficient cpu", "Insufficient memory", "Insufficient <name>"
// (Unschedulable; every failing resource is listed). Score: `scoring` over cpu and memory
// (weights 1 each), 0..100.
std::unique_ptr<Plugin> NewNodeResourcesFit(ResourceScoring scoring);
// Score: kube-scheduler v1.35.4's NodeResourcesBalancedAllocation over cpu and memory: (1 - the
// standard deviation of the node's requested shares with the pod) * 100; skipped for a pod that
// requests neither.
std::unique_ptr<Plugin> NewBalancedAllocation();
// Score: kube-scheduler v1.35.4's ImageLocality: the sizes of the pod's container images
// (Pod::container_images) present on the node (Node::images), each scaled by the share of the
// cache's nodes that have it, clamped to [23 MiB, 1000 MiB * containers] and mapped to 0..100.
// REQUIRES: `cache` outlives the plugin.
std::unique_ptr<Plugin> NewImageLocality(const ClusterCache* cache);
// A container image's name as ImageLocality matches it against the nodes' image names:
// ":latest" appended when the last ':' does not come after the last '/' ("nginx" ->
// "nginx:latest", "registry:5000/app" -> "registry:5000/app:latest"; "app@sha256:..." is kept).
std::string NormalizedImageName(std::string_view image);
// PreFilter + Filter + Score: inter-pod affinity and anti-affinity (kube-scheduler v1.35.4's
// InterPodAffinity, hardPodAffinityWeight 1), topology domains from the node labels named by
// each term's topologyKey, pods counted from `cache` (bound and assumed) at PreFilter. Filter,
// first failure wins: the pod's required affinity terms (a node lacking a topology key, or a
// domain with no pod matching all terms, unless no pod matches anywhere and the pod matches
// its own terms): "node(s) didn't match pod affinity rules" (UnschedulableAndUnresolvable); a
// domain holding a pod its required anti-affinity selects: "node(s) didn't match pod
// anti-affinity rules" (Unschedulable); a domain holding a pod whose required anti-affinity
// selects it: "node(s) didn't satisfy existing pods anti-affinity rules" (Unschedulable).
// Score: per domain, + weight of the pod's preferred affinity terms and - weight of its
// preferred anti-affinity terms for each pod they select, the same for existing pods' preferred
// terms selecting the pod, + 1 per existing pod's required affinity term selecting it;
// normalised min-max to 0..100. A namespaceSelector reads ClusterCache::NamespaceLabels: a
// namespace the cache does not know has no labels. Sets CycleState::skip_equivalence_cache
// when any of this applies to the pod. REQUIRES: `cache` outlives the plugin.
std::unique_ptr<Plugin> NewInterPodAffinity(const ClusterCache* cache);
// PreFilter + Filter + PreScore + Score: the pod's spec.topologySpreadConstraints (kube-scheduler
// v1.35.4's PodTopologySpread; the algorithm is at its definition), pods counted from `cache`
// (bound and assumed, in the pod's namespace). Filter, per DoNotSchedule constraint: a node
// without the topology key: "node(s) didn't match pod topology spread constraints (missing
// required label)" (UnschedulableAndUnresolvable); a domain whose count with the pod would
// exceed the global minimum by more than maxSkew (minDomains, nodeAffinityPolicy,
// nodeTaintsPolicy and matchLabelKeys honoured): "node(s) didn't match pod topology spread
// constraints" (Unschedulable). Score: ScheduleAnyway constraints, emptier domains higher,
// 0..100. Sets CycleState::skip_equivalence_cache for a pod with constraints. Not modelled: the
// cluster default constraints (kube-scheduler's system defaults spread pods selected by a
// Service, ReplicaSet, StatefulSet or ReplicationController; huygens-scheduler does not watch
// those) and terminating pods (counted until they are gone). REQUIRES: `cache` outlives the
// plugin.
std::unique_ptr<Plugin> NewPodTopologySpread(const ClusterCache* cache);

// ---- Huygens plugins -------------------------------------------------------------------
// PreFilter: refuses a pod that asks for what huygens-scheduler cannot honour yet
// (spec.resourceClaims, persistentVolumeClaim or ephemeral volumes), so that it waits instead of being placed as
// if it had not asked. Reason "pod asks for <features>, which huygens-scheduler does not support
// yet" (UnschedulableAndUnresolvable).
std::unique_ptr<Plugin> NewUnsupportedFeatures();
// Filter: would the node's topology manager admit the pod (its topology policy and scope,
// judged on NodeState's per-NUMA counters through alloc/hints + alloc/merge), and can the
// pod's bind policy be met there. Reasons e.g. "NUMA: no single NUMA node fits 24 CPUs",
// "NUMA: no preferred NUMA set fits 40 CPUs", "NUMA: not enough free whole cores for 8 CPUs",
// "NUMA: not enough free exclusive CPUs for 8 CPUs" (Unschedulable). On nodes that model
// memory (NodeConfig::memory_manager), for pods whose memory kubelet's memory manager places:
// some NUMA set that can hold the pod's memory and hugepages (kubelet's memory hints; one
// NUMA node under single-numa-node) must offer its exclusive CPUs; under kubelet's Static
// policy that set is the one kubelet picks. Reasons "NUMA: no NUMA node has 6Gi of free
// memory", "NUMA: kubelet puts its memory on NUMA node(s) 0, which lack 4 free CPUs". On nodes
// with NUMA-affine devices (NodeConfig::devices), for pods that request some: kubelet's
// topology manager must admit the merge of the device hints (with the memory hints under
// Static), and under single-numa-node or restricted the NUMA set where kubelet puts the devices
// must offer the exclusive CPUs. Reasons "NUMA: kubelet's topology manager (single-numa-node)
// would refuse its devices", "NUMA: kubelet puts its devices on NUMA node(s) 1, which lack 4
// free CPUs". A node whose agent is silent (Node::agent_silent) refuses every pod with
// exclusive CPUs: kAgentSilentReason (UnschedulableAndUnresolvable).
std::unique_ptr<Plugin> NewNumaFit();
inline constexpr char kAgentSilentReason[] = "NUMA: the node's Huygens agent has stopped reporting";
// Score: fewer NUMA nodes for the pod's exclusive CPUs is better; then pack or spread over the
// node's NUMA nodes (the node's NodeConfig::numa_strategy: most-allocated packs,
// least-allocated spreads); affinity-group
// members prefer nodes and NUMA nodes where their group runs, or the nearest by distance.
std::unique_ptr<Plugin> NewNumaScore(const ClusterCache* cache);
// Score: the pod's bind policy fits without splitting cores: full-cores needs free whole
// cores, spread-cores needs cores with a free thread; more headroom scores higher.
std::unique_ptr<Plugin> NewSmtScore();
// Reserve: computes the exact cpusets with NodeState::AllocatePod on the cache's CPU state of
// the node (near the NUMA nodes where the pod's affinity group runs there) and puts them in
// CycleState::allocation; the scheduler then assumes the pod with them. Unreserve releases the
// CPUs if the cache does not hold the pod (a forgotten assume already released them). Nodes
// without CPU state get no cpusets. A failed allocation is Unschedulable with reason
// "NUMA: <the allocator's reason>".
std::unique_ptr<Plugin> NewNumaReserve(ClusterCache* cache);
// ---- scheduler-plugins ------------------------------------------------------------------
// NodeResourceTopologyMatch: models scheduler-plugins' plugin of that name
// (pkg/noderesourcetopology) at commit 903da7df82cb8794dda8f2d510ba1156111662dd, reading each
// node's Node::nrt (NodeTopology); nodes without one pass the Filter and score 0. Filter: only
// for a node whose policy is single-numa-node and a pod that is not BestEffort; scope
// `container`: every init container must fit one zone, then every app container in turn must
// fit one zone and is taken from the lowest-numbered zone that fits; scope `pod`: the pod's
// effective request (the larger of the app containers' sum and the largest init container, per
// resource) must fit one zone. Only Guaranteed pods are measured against a zone's cpu and memory
// (other QoS classes fit any zone). Reasons "cannot align init container", "cannot align sidecar
// container", "cannot align container", "cannot align pod" (Unschedulable). Score: `scoring`
// (see ScoreNrtZones in plugin_nrt_match.cc and docs/simulate.md); every pod that is not
// Guaranteed scores kMaxNodeScore.
std::unique_ptr<Plugin> NewNodeResourceTopologyMatch(NrtScoring scoring);

// Bind: binds in the cache at once (AddPod confirms the assume). The simulator's binder.
std::unique_ptr<BindPlugin> NewCacheBind(ClusterCache* cache);

// The plugin called `name` (as listed in sched/profile.h), built for `profile` over `cache`.
// Errors: InvalidArgument for an unknown name.
absl::StatusOr<std::unique_ptr<Plugin>> NewPlugin(std::string_view name, const Profile& profile,
                                                  ClusterCache* cache);

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_PLUGINS_H_

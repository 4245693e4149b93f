// The chaos run (issue 19): two huygens-scheduler replicas (processes of the built binary,
// standalone mode, leader election on a 3 s Lease) against the real kube-apiserver of the
// testbed (label `cluster`, HUYGENS_TESTBED_DIR), under a seeded random stream of events: pods
// created (Guaranteed, 1-8 CPUs, and best-effort) and deleted, the leader killed with SIGKILL and
// started again, a replica hung with SIGSTOP (until the other took over, when it led) and resumed
// with SIGCONT, the node agent of node agent-node (this machine's CPUs; no container runtime,
// so it reports each of its pods failed) killed with SIGKILL and started again, a replica's
// connections to the apiserver frozen (each replica reaches it through
// a kube/testing/tcp_proxy.h of its own: a network partition; until the other took over, when it
// led) and thawed, a concurrent writer changing pods (their resourceVersion moves under the
// schedulers' preconditions: 409s), Nodes added and removed, etcd compacted, the apiserver
// restarted (rarely; once in the middle of every run).
//
// Invariants, checked about once a second while the events run and again at the end:
//   - no two pods hold one CPU of a node, and every bound pod's allocation names its node
//     (test_cluster.h CheckCluster, on the real server's pods);
//   - every bound Guaranteed pod carries a `huygens.io/allocation`, and a bound pod's node and
//     allocation never change afterwards;
// and at the end:
//   - never two leaders binding: from the apiserver's audit log (each replica runs as a
//     ServiceAccount of its own), every Binding reached the server from the replica holding
//     the Lease, or from the deposed holder before the new holder's first Binding of its term
//     (CheckLeadership), and no pod was bound twice;
//   - progress: within kProgressLimit, every pending pod that fits (a NUMA node of a live node
//     with as many CPUs no pod holds) is bound;
//   - nothing lost by the agent's kills: within kAgentLimit, the agent's NodeResourceTopology
//     counts as exclusive exactly the CPUs the pods bound to agent-node hold, and each of those
//     pods carries a huygens.io/allocation-status.
// A failure names the seed and the event index of the first sight of each problem.
//
// Partitions found a fault (docs/testbed.md, "Chaos run"): a leader's Binding that passed the
// lease check (PodWriter's may_bind) but sat in the frozen connection reached the apiserver
// after the thaw, when the next leader may have given its CPUs to another pod. The apiserver now
// fences it: each Binding carries the pod's resourceVersion as a precondition, and a new leader
// writes every pending pod before it binds (scheduler/scheduling_loop.h), so the late Binding
// gets 409. Partitions are part of the default mix since.
//
// Size and seed: HUYGENS_CHAOS_EVENTS (default kDefaultEvents, about 65 s on the 2-core CI
// machine) and HUYGENS_CHAOS_SEED (default 1). The figures of a run are printed at the
// end; docs/testbed.md ("Chaos run") records those of a 10,000-event run.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "fmt/chrono.h"
#include "fmt/ranges.h"
#include "gtest/gtest.h"
#include "kube/api_error.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/meta_time.h"
#include "kube/rest_client.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/tcp_proxy.h"
#include "scheduler/test_cluster.h"
#include "scheduler/testbed_install.h"

namespace huygens::scheduler {
namespace {

using kube::testing::FakeApiServer;
using kube::testing::Process;
using kube::testing::Slurp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kDefaultEvents = 400;
constexpr int kNodeCpus = 32;         // sim::ShapeForCpuCount: 2 sockets, 2 NUMA nodes of 16
constexpr int kInitialNodes = 4;
constexpr int kMinNodes = 2;
constexpr int kMaxNodes = 8;
constexpr std::size_t kMaxLivePods = 60;  // a create beyond this deletes instead
constexpr char kLeaseResource[] = "leases.coordination.k8s.io";
constexpr char kLeaseNamespace[] = "kube-system";
constexpr char kLeaseName[] = "huygens-scheduler";
constexpr auto kTakeoverLimit = std::chrono::seconds(30);
constexpr auto kProgressLimit = std::chrono::seconds(120);
constexpr auto kAgentLimit = std::chrono::seconds(30);
constexpr char kAgentNode[] = "agent-node";

// What one event does. Weights are per 1,000 events.
enum class Kind {
  kGuaranteedPod,
  kBestEffortPod,
  kDeletePod,
  kKillLeader,
  kKillAgent,
  kStopReplica,
  kPartitionReplica,
  kConcurrentWrite,
  kAddNode,
  kRemoveNode,
  kCompactEtcd,
  kRestartApiServer,
};
struct KindInfo {
  Kind kind;
  const char* name;
  int weight;
};
constexpr KindInfo kKinds[] = {
    {Kind::kGuaranteedPod, "create Guaranteed pod", 400},
    {Kind::kBestEffortPod, "create best-effort pod", 150},
    {Kind::kDeletePod, "delete pod", 329},
    {Kind::kKillLeader, "SIGKILL leader + restart", 15},
    {Kind::kKillAgent, "SIGKILL agent + restart", 15},
    {Kind::kStopReplica, "SIGSTOP/SIGCONT replica", 10},
    {Kind::kPartitionReplica, "partition replica (freeze)", 10},
    {Kind::kConcurrentWrite, "concurrent pod write", 30},
    {Kind::kAddNode, "add node", 15},
    {Kind::kRemoveNode, "remove node", 15},
    {Kind::kCompactEtcd, "etcd compaction", 10},
    {Kind::kRestartApiServer, "restart apiserver", 1},
};

// The integer value of environment variable `name`, or `fallback` when it is unset or empty.
long long EnvOr(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : std::atoll(v);
}

// One audit event of cluster.sh's policy, reduced to what CheckLeadership reads.
struct AuditRecord {
  std::string time;  // RFC 3339 with microseconds (UTC): compares as text
  std::string user;
  bool lease_write = false;  // else a Binding
  std::string pod;           // the Binding's pod
};

// The successful Lease writes (create/update/patch of kLeaseNamespace/kLeaseName, at the time
// the server finished them) and Bindings (at the time the server received them) among `events`
// (audit.k8s.io/v1 Event objects), in time order.
std::vector<AuditRecord> LeadershipRecords(const std::vector<json>& events) {
  std::vector<AuditRecord> out;
  for (const json& e : events) {
    const json ref = e.value("objectRef", json::object());
    const int code = e.value("responseStatus", json::object()).value("code", 0);
    if (code < 200 || code >= 300) continue;
    const std::string verb = e.value("verb", "");
    const std::string user = e.value("user", json::object()).value("username", "");
    if (ref.value("resource", "") == "leases" && ref.value("namespace", "") == kLeaseNamespace &&
        ref.value("name", "") == kLeaseName && (verb == "create" || verb == "update" || verb == "patch")) {
      out.push_back({e.value("stageTimestamp", ""), user, true, ""});
    } else if (ref.value("resource", "") == "pods" && ref.value("subresource", "") == "binding" && verb == "create") {
      out.push_back({e.value("requestReceivedTimestamp", ""), user, false, ref.value("name", "")});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const AuditRecord& a, const AuditRecord& b) { return a.time < b.time; });
  return out;
}

// What the audit log says about leadership.
struct LeadershipCheck {
  int bindings = 0;
  // Bindings by a replica that no longer held the Lease which landed before the new holder's
  // first Binding of its term: sent before the sender's term ended and held up on the wire, they
  // land before the new holder's takeover fence (whose writes all come before its first Binding;
  // scheduling_loop.h) and the fence puts them in its cache before it reuses a CPU.
  int admitted = 0;
  // (the server's time, what): a Binding by a non-holder after the holder bound; a pod bound twice.
  std::vector<std::pair<std::string, std::string>> problems;
};

// Never two leaders binding, as the apiserver saw it. A term starts at the first successful
// Lease write by a user other than the last writer. A Binding from someone other than the
// term's holder is admitted while the holder has bound nothing in that term (see
// LeadershipCheck::admitted); after the holder's first Binding it is a problem (two replicas
// binding at once), and so is a pod bound twice.
LeadershipCheck CheckLeadership(const std::vector<AuditRecord>& records) {
  LeadershipCheck check;
  std::string holder, since, holder_bound;  // the term's holder, its start, its first Binding
  std::map<std::string, std::string> bound_at;  // pod -> time
  for (const AuditRecord& r : records) {
    if (r.lease_write) {
      if (r.user != holder) {
        holder = r.user;
        since = r.time;
        holder_bound.clear();
      }
      continue;
    }
    ++check.bindings;
    if (r.user == holder) {
      if (holder_bound.empty()) holder_bound = r.time;
    } else if (holder_bound.empty()) {
      ++check.admitted;
    } else {
      check.problems.emplace_back(
          r.time, fmt::format("pod {} bound by {} at {} while {} held the Lease (since {}) and had bound at {}", r.pod,
                              r.user, r.time, holder.empty() ? "nobody" : holder, since, holder_bound));
    }
    auto [it, fresh] = bound_at.emplace(r.pod, r.time);
    if (!fresh) check.problems.emplace_back(r.time, fmt::format("pod {} bound twice: at {} and {}", r.pod, it->second, r.time));
  }
  return check;
}

// The whole CPUs a Guaranteed pod's first container asks (its `cpu` request; 0 when none).
int RequestedCpus(const json& pod) {
  const json& containers = pod["spec"]["containers"];
  if (containers.empty()) return 0;
  json requests = containers[0].value("resources", json::object()).value("requests", json::object());
  return requests.contains("cpu") ? std::atoi(requests["cpu"].get<std::string>().c_str()) : 0;
}

// The exclusive CPUs of `pod`'s huygens.io/allocation (the union over its containers); nullopt
// when it has none or one that does not parse (CheckCluster reports that).
std::optional<CpuSet> ExclusiveCpus(const json& pod) {
  auto annotations = pod["metadata"].value("annotations", json::object());
  if (!annotations.contains(kAllocationAnnotation)) return std::nullopt;
  auto a = AllocationFromJson(annotations[kAllocationAnnotation].get<std::string>(), "");
  if (!a.ok()) return std::nullopt;
  CpuSet cpus;
  for (const ContainerAllocation& c : a->containers) {
    if (c.exclusive) cpus = cpus.Union(c.cpuset);
  }
  return cpus;
}

// The pending pods of `pods` that fit now on `nodes` (live Node names, each a `topology`): one
// asking CPUs when some NUMA node of a live node has that many CPUs that no bound pod's
// allocation holds exclusively (single-numa-node, packed), one asking none when a node exists.
std::vector<std::string> PendingThatFit(const std::vector<json>& pods, const std::set<std::string>& nodes,
                                        const CpuTopology& topology) {
  std::map<std::string, CpuSet> held;
  for (const json& pod : pods) {
    const std::string node = pod["spec"].value("nodeName", "");
    if (auto cpus = ExclusiveCpus(pod); cpus && !node.empty()) held[node] = held[node].Union(*cpus);
  }
  std::vector<std::string> fit;
  for (const json& pod : pods) {
    if (!pod["spec"].value("nodeName", "").empty()) continue;
    const int cpus = RequestedCpus(pod);
    bool fits = false;
    for (const std::string& node : nodes) {
      for (int numa : topology.NumaNodeIdsWithCpus()) {
        fits = fits || topology.CpusInNumaNode(numa).Difference(held[node]).Size() >= cpus;
      }
    }
    if (fits) fit.push_back(pod["metadata"].value("name", ""));
  }
  return fit;
}

// The problems of the current state beyond CheckCluster's: a bound Guaranteed pod ("g-" names)
// without an allocation, and a bound pod whose node or allocation differs from what
// `first_seen` (pod uid -> "node allocation" when first seen bound; updated here) recorded.
std::vector<std::string> PlacementProblems(const std::vector<json>& pods, std::map<std::string, std::string>& first_seen) {
  std::vector<std::string> problems;
  for (const json& pod : pods) {
    const std::string name = pod["metadata"].value("name", "");
    const std::string node = pod["spec"].value("nodeName", "");
    if (node.empty()) continue;
    const std::string allocation =
        pod["metadata"].value("annotations", json::object()).value(kAllocationAnnotation, "");
    if (name.starts_with("g-") && allocation.empty()) {
      problems.push_back(fmt::format("pod {}: bound to {} without an allocation", name, node));
    }
    const std::string placement = node + " " + allocation;
    auto [it, fresh] = first_seen.emplace(pod["metadata"].value("uid", ""), placement);
    if (!fresh && it->second != placement) {
      problems.push_back(fmt::format("pod {}: placement changed from {} to {}", name, it->second, placement));
    }
  }
  return problems;
}

// What the agent of `node` has not caught up with, from its NodeResourceTopology `nrt` (nullopt
// when there is none) and the pods: the CPUs its huygens.io/pools annotation counts as exclusive
// must be those the allocations of the pods bound to `node` hold, and each of those pods must
// carry a huygens.io/allocation-status. Empty when it has.
std::vector<std::string> AgentProblems(const std::optional<json>& nrt, const std::vector<json>& pods,
                                       const std::string& node) {
  if (!nrt.has_value()) return {fmt::format("{}: no NodeResourceTopology", node)};
  std::vector<std::string> problems;
  CpuSet held;
  for (const json& pod : pods) {
    if (pod["spec"].value("nodeName", "") != node) continue;
    const auto cpus = ExclusiveCpus(pod);
    if (!cpus) continue;
    held = held.Union(*cpus);
    if (!pod["metadata"].value("annotations", json::object()).contains(kAllocationStatusAnnotation)) {
      problems.push_back(fmt::format("pod {} on {}: no {}", pod["metadata"].value("name", ""), node,
                                     kAllocationStatusAnnotation));
    }
  }
  const std::string pools = (*nrt)["metadata"].value("annotations", json::object()).value(kPoolsAnnotation, "");
  const json parsed = json::parse(pools, nullptr, false);
  auto exclusive = CpuSet::Parse(parsed.is_object() ? parsed.value("exclusive", "?") : "?");
  if (!exclusive.ok()) {
    problems.push_back(fmt::format("{}: NodeResourceTopology {} unreadable: {}", node, kPoolsAnnotation, pools));
  } else if (*exclusive != held) {
    problems.push_back(fmt::format("{}: the agent counts CPUs {} exclusive, the bound pods hold {}", node,
                                   exclusive->ToString(), held.ToString()));
  }
  return problems;
}

// One scheduler replica: a ServiceAccount of its own (so the audit log tells the replicas
// apart) and the process now running for it, one at a time; each incarnation has its own
// identity ("a-0", "a-1", ...) and log.
struct Replica {
  std::string slot;
  std::string kubeconfig;
  int generation = -1;
  std::unique_ptr<Process> process;
  std::vector<std::string> logs;
  bool stopped = false;  // SIGSTOPped
  // Every connection of the replica to the apiserver goes through it (kPartitionReplica).
  std::unique_ptr<kube::testing::TcpProxy> proxy;

  std::string identity() const { return fmt::format("{}-{}", slot, generation); }
};

// The chaos run over one testbed: its clients, replicas, figures and violations.
class ChaosRun {
 public:
  ChaosRun(testing::Testbed bed, FakeApiServer& server, std::unique_ptr<kube::Client> admin, uint64_t seed)
      : bed_(std::move(bed)), s_(server), admin_(std::move(admin)), rng_(seed), seed_(seed) {
    server_url_ = Slurp((bed_.dir() / "server").string());
    while (!server_url_.empty() && server_url_.back() == '\n') server_url_.pop_back();
    config_ = (bed_.dir() / "chaos-scheduler.yaml").string();
    std::ofstream(config_) << "profiles:\n- defaultBindPolicy: packed\n"
                           << "leaderElection: {leaderElect: true, leaseDuration: 3s, renewDeadline: 2s, "
                              "retryPeriod: 250ms}\n";
    auto shape = sim::ShapeForCpuCount(kNodeCpus);
    topology_ = shape.ok() ? shape->topology : nullptr;
  }

  // Makes the ServiceAccounts chaos-a and chaos-b (cluster-admin) and their token kubeconfigs,
  // adds the first nodes, starts both replicas. Errors: the first failed step.
  absl::Status SetUp() {
    if (topology_ == nullptr) return absl::InternalError("no machine of 32 CPUs");
    const std::string rbac = (bed_.dir() / "chaos-rbac.yaml").string();
    std::ofstream out(rbac);
    for (const char* slot : {"a", "b", "agent"}) {
      out << fmt::format(R"(apiVersion: v1
kind: ServiceAccount
metadata: {{name: chaos-{0}, namespace: default}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: huygens-chaos-{0}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
subjects: [{{kind: ServiceAccount, name: chaos-{0}, namespace: default}}]
---
)",
                         slot);
    }
    out.close();
    std::string output;
    if (bed_.Kubectl(fmt::format("kubectl apply -f '{}'", rbac), bed_.dir().string(), &output) != 0) {
      return absl::FailedPreconditionError("kubectl apply: " + output);
    }
    for (const char* slot : {"a", "b"}) {
      auto kubeconfig = bed_.ServiceAccountKubeconfig("default", std::string("chaos-") + slot);
      if (!kubeconfig.ok()) return kubeconfig.status();
      auto proxy = kube::testing::TcpProxy::Start(std::stoi(server_url_.substr(server_url_.rfind(':') + 1)));
      if (!proxy.ok()) return proxy.status();
      replicas_.push_back({.slot = slot, .kubeconfig = *kubeconfig, .proxy = *std::move(proxy)});
    }
    for (int i = 0; i < kInitialNodes; ++i) {
      if (!AddNode()) return absl::InternalError("adding a node failed");
    }
    // The agent's node: this machine (CPU 0 the system pool, the rest its user CPUs); its NRT
    // is the agent's.
    const int host_cpus = static_cast<int>(std::thread::hardware_concurrency());
    if (host_cpus < 2) return absl::FailedPreconditionError("the agent's node needs 2 CPUs or more");
    if (!testing::CreateReadyNode(s_, testing::NodeObject(kAgentNode, host_cpus))) {
      return absl::InternalError("creating the agent's Node failed");
    }
    auto agent_kubeconfig = bed_.ServiceAccountKubeconfig("default", "chaos-agent");
    if (!agent_kubeconfig.ok()) return agent_kubeconfig.status();
    agent_.kubeconfig = *agent_kubeconfig;
    agent_.config = (bed_.dir() / "chaos-agent.yaml").string();
    std::ofstream(agent_.config) << fmt::format(
        "nodeName: {}\nsystemCpus: \"0\"\nruntime: {{endpoint: \"unix://{}\", timeout: 500ms}}\n"
        "kubeletCheckpoint: \"\"\ncheckpoint: {}\nmetricsAddress: \"\"\nresyncPeriod: 1s\nnrtMinInterval: 1s\n",
        kAgentNode, (bed_.dir() / "chaos-no-runtime.sock").string(), (bed_.dir() / "chaos-agent-checkpoint.json").string());
    std::filesystem::remove(bed_.dir() / "chaos-agent-checkpoint.json");
    StartAgent();
    if (!kube::testing::WaitFor([&] { return s_.Get(testing::kNrtResource, "", kAgentNode).has_value(); },
                                std::chrono::seconds(30))) {
      return absl::DeadlineExceededError("the agent published no NodeResourceTopology within 30 s: " +
                                         Slurp(agent_.logs.back()));
    }
    audit_mark_ = bed_.AuditMark();
    for (Replica& r : replicas_) Start(r);
    return absl::OkStatus();
  }

  // Applies `events` events, then waits for progress and checks the end state; records every
  // violation.
  void Run(int events) {
    std::thread monitor([this] { Monitor(); });
    const auto start = Clock::now();
    for (int i = 0; i < events; ++i) {
      event_ = i;
      event_started_.push_back(AuditTimeNow());
      Kind kind = i == events / 2 ? Kind::kRestartApiServer : Draw();
      kind = Apply(kind);
      ++applied_[kind];
      if ((i + 1) % 1000 == 0) {
        std::cout << fmt::format("chaos: {} of {} events, {:.0f} s\n", i + 1, events,
                                 std::chrono::duration<double>(Clock::now() - start).count())
                  << std::flush;
      }
    }
    event_ = events;
    events_seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
    done_ = true;
    monitor.join();
    Finish();
  }

  // The figures of the run, for the log and docs/testbed.md.
  std::string Figures() const {
    std::string out = fmt::format("chaos run: seed {}, {} events in {:.1f} s ({:.1f} s per 1,000 events)\n", seed_,
                                  event_, events_seconds_, events_seconds_ * 1000 / std::max(1, event_.load()));
    for (const KindInfo& k : kKinds) {
      auto it = applied_.find(k.kind);
      out += fmt::format("  {:<26} {}\n", k.name, it == applied_.end() ? 0 : it->second);
    }
    double max = 0, sum = 0;
    for (double t : takeovers_) {
      max = std::max(max, t);
      sum += t;
    }
    out += fmt::format(
        "pods created {}, pods bound {} (Bindings in the audit log; {} by a deposed leader before the new one's first "
        "Binding), leader changes {}, takeovers after a leader fault {}: max {:.2f} s, mean {:.2f} s; progress at the "
        "end {:.1f} s, the agent caught up in {:.1f} s; violations {}\n",
        created_, bindings_, admitted_, leader_changes_, takeovers_.size(), max, takeovers_.empty() ? 0 : sum / static_cast<double>(takeovers_.size()),
        progress_seconds_, agent_seconds_, violations_.size());
    return out;
  }

  // Every problem seen, each with the event index at its first sight.
  std::vector<std::string> Violations() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [problem, event] : violations_) out.push_back(fmt::format("event {}: {}", event, problem));
    return out;
  }

 private:
  // Records `problem` (once) at `event` (default: the current one).
  void Violation(const std::string& problem, int event = -1) {
    std::lock_guard lock(mu_);
    violations_.emplace(problem, event < 0 ? event_.load() : event);
  }

  // The UTC time now as the audit log writes it ("2026-12-02T18:07:40.502622Z").
  static std::string AuditTimeNow() { return kube::MicroTime(std::chrono::system_clock::now()); }

  // The index of the event that was running at audit time `time` (0 before the first).
  int EventAt(const std::string& time) const {
    auto it = std::upper_bound(event_started_.begin(), event_started_.end(), time);
    return std::max(0, static_cast<int>(it - event_started_.begin()) - 1);
  }

  // The weight of `k` in this run.
  static int Weight(const KindInfo& k) { return k.weight; }

  Kind Draw() {
    int total = 0;
    for (const KindInfo& k : kKinds) total += Weight(k);
    int pick = std::uniform_int_distribution<int>(0, total - 1)(rng_);
    for (const KindInfo& k : kKinds) {
      if (pick < Weight(k)) return k.kind;
      pick -= Weight(k);
    }
    return Kind::kDeletePod;
  }

  // A uniform integer in [lo, hi].
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // Does `kind` (or what it turns into at the bounds: a create beyond kMaxLivePods deletes, a
  // delete with no pod creates, a node removal at kMinNodes adds and an addition at kMaxNodes
  // removes). Returns what it did.
  Kind Apply(Kind kind) {
    if ((kind == Kind::kGuaranteedPod || kind == Kind::kBestEffortPod) && pods_.size() >= kMaxLivePods) {
      kind = Kind::kDeletePod;
    } else if ((kind == Kind::kDeletePod || kind == Kind::kConcurrentWrite) && pods_.empty()) {
      kind = Kind::kGuaranteedPod;
    } else if (kind == Kind::kRemoveNode && nodes_.size() <= kMinNodes) {
      kind = Kind::kAddNode;
    } else if (kind == Kind::kAddNode && nodes_.size() >= kMaxNodes) {
      kind = Kind::kRemoveNode;
    }
    switch (kind) {
      case Kind::kGuaranteedPod:
      case Kind::kBestEffortPod: {
        const std::string name = fmt::format("{}-{}", kind == Kind::kGuaranteedPod ? "g" : "be", event_.load());
        json pod = testing::GuaranteedPod(name, Uniform(1, 8));
        if (kind == Kind::kBestEffortPod) pod["spec"]["containers"][0].erase("resources");
        Expect(s_.Create("pods", pod).status(), "create pod " + name);
        pods_.push_back(name);
        ++created_;
        break;
      }
      case Kind::kDeletePod: {
        const std::size_t i = static_cast<std::size_t>(Uniform(0, static_cast<int>(pods_.size()) - 1));
        DeleteNow(fmt::format("/api/v1/namespaces/default/pods/{}", pods_[i]));
        pods_.erase(pods_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      case Kind::kKillLeader: {
        Replica* leader = Leader();
        Replica& victim = leader != nullptr ? *leader : replicas_[static_cast<std::size_t>(Uniform(0, 1))];
        const std::string old = victim.identity();
        const auto at = Clock::now();
        victim.process->Kill();
        Start(victim);
        if (leader != nullptr) AwaitTakeover(old, at);
        break;
      }
      case Kind::kKillAgent:
        agent_.process->Kill();
        StartAgent();
        break;
      case Kind::kStopReplica:
        // The hung leader, resumed, finds its renew deadline passed and gives up at once.
        HoldOut(
            [](Replica& r) {
              ::kill(r.process->pid(), SIGSTOP);
              r.stopped = true;
            },
            [](Replica& r) {
              ::kill(r.process->pid(), SIGCONT);
              r.stopped = false;
            },
            "resumed after losing the Lease");
        break;
      case Kind::kPartitionReplica:
        // A partitioned leader cannot renew: it gave up within its renew deadline.
        HoldOut([](Replica& r) { r.proxy->Freeze(); }, [](Replica& r) { r.proxy->Thaw(); },
                "thawed after a partition that lost it the Lease");
        break;
      case Kind::kConcurrentWrite: {
        // Another writer labels a pod: its resourceVersion moves under any precondition a
        // scheduler holds (409 Conflict); the pod may be gone (404).
        const std::string& name = pods_[static_cast<std::size_t>(Uniform(0, static_cast<int>(pods_.size()) - 1))];
        auto patched = s_.MergePatch("pods", "default", name,
                                     {{"metadata", {{"labels", {{"chaos-touch", std::to_string(event_.load())}}}}}});
        if (!patched.ok() && !absl::IsNotFound(patched.status())) Expect(patched.status(), "label pod " + name);
        break;
      }
      case Kind::kAddNode:
        Expect(AddNode() ? absl::OkStatus() : absl::InternalError("failed"), "add node");
        break;
      case Kind::kRemoveNode:
        RemoveNode();
        break;
      case Kind::kCompactEtcd:
        s_.Compact();
        break;
      case Kind::kRestartApiServer:
        s_.RestartApiServer();
        break;
    }
    return kind;
  }

  // Records a failed harness step as a violation.
  void Expect(const absl::Status& status, const std::string& what) {
    if (!status.ok()) Violation(fmt::format("{}: {}", what, status.ToString()));
  }

  // DELETE `path` with gracePeriodSeconds=0 (no kubelet finishes a graceful deletion); a 404 is
  // fine (the object is gone).
  void DeleteNow(const std::string& path) {
    auto answer = admin_->rest().Send({.verb = "DELETE", .path = path, .query = {{"gracePeriodSeconds", "0"}}});
    if (!answer.ok() && !kube::IsApiNotFound(answer.status())) Expect(answer.status(), "delete " + path);
  }

  // Adds node n<k> (the next k) with its NodeResourceTopology. Returns false on error.
  bool AddNode() {
    const std::string name = fmt::format("n{}", next_node_++);
    if (!testing::AddMachine(s_, name, kNodeCpus)) return false;
    nodes_.insert(name);
    return true;
  }

  // Removes a random node as a drain would: its NodeResourceTopology and Node, then its pods.
  void RemoveNode() {
    auto it = nodes_.begin();
    std::advance(it, Uniform(0, static_cast<int>(nodes_.size()) - 1));
    const std::string node = *it;
    nodes_.erase(it);
    DeleteNow("/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/" + node);
    DeleteNow("/api/v1/nodes/" + node);
    for (const json& pod : s_.List("pods", "default")) {
      if (pod["spec"].value("nodeName", "") != node) continue;
      const std::string name = pod["metadata"].value("name", "");
      DeleteNow(fmt::format("/api/v1/namespaces/default/pods/{}", name));
      pods_.erase(std::remove(pods_.begin(), pods_.end(), name), pods_.end());
    }
  }

  // Starts the next incarnation of the agent (its log: huygens-chaos-agent-<k>.log).
  void StartAgent() {
    agent_.logs.push_back(fmt::format("{}/huygens-chaos-agent-{}.log", ::testing::TempDir(), agent_.logs.size()));
    agent_.process = std::make_unique<Process>(
        std::vector<std::string>{HUYGENS_AGENT_BIN, "--config", agent_.config, "--kubeconfig", agent_.kubeconfig,
                                 "--log-level", "info"},
        agent_.logs.back());
  }

  // Starts the next incarnation of `r`.
  void Start(Replica& r) {
    ++r.generation;
    r.logs.push_back(fmt::format("{}/huygens-chaos-{}.log", ::testing::TempDir(), r.identity()));
    r.process = testing::StartScheduler(HUYGENS_SCHEDULER_BIN, fmt::format("https://127.0.0.1:{}", r.proxy->port()),
                                        r.logs.back(),
                                        {"--kubeconfig", r.kubeconfig, "--identity", r.identity(), "--config", config_,
                                         "--log-level", "info"},
                                        true);
  }

  // The Lease's holderIdentity ("" when none or unreadable).
  std::string Holder() const {
    auto lease = s_.Get(kLeaseResource, kLeaseNamespace, kLeaseName);
    return lease ? (*lease)["spec"].value("holderIdentity", "") : "";
  }

  // Takes a replica (the Lease holder, else a random one) out with `hold`; when it held the
  // Lease, waits for the other to take over; keeps it out a little longer and puts it back with
  // `release`. A holder that believed it led must then say within 5 s that it stopped leading
  // (a violation "<identity>: <what>, still believes it leads after 5 s").
  void HoldOut(const std::function<void(Replica&)>& hold, const std::function<void(Replica&)>& release,
               const std::string& what) {
    Replica* leader = Leader();
    Replica& victim = leader != nullptr ? *leader : replicas_[static_cast<std::size_t>(Uniform(0, 1))];
    const auto at = Clock::now();
    const int gave_up = Count(victim.logs.back(), "stopped leading");
    const bool believed = BelievesItLeads(victim);
    hold(victim);
    if (leader != nullptr) AwaitTakeover(victim.identity(), at);
    std::this_thread::sleep_for(std::chrono::milliseconds(Uniform(leader != nullptr ? 0 : 1000, 3000)));
    release(victim);
    if (leader != nullptr && believed &&
        !kube::testing::WaitFor([&] { return Count(victim.logs.back(), "stopped leading") > gave_up; },
                                std::chrono::seconds(5))) {
      Violation(fmt::format("{}: {}, still believes it leads after 5 s", victim.identity(), what));
    }
  }

  // Whether `r`'s running incarnation believes it leads (its log says it started leading more
  // often than it stopped). The Lease may name a replica that does not: its write of the Lease
  // landed but the answer timed out, so it never started.
  static bool BelievesItLeads(const Replica& r) {
    return Count(r.logs.back(), "started leading") > Count(r.logs.back(), "stopped leading");
  }

  // The replica whose running incarnation holds the Lease, or nullptr.
  Replica* Leader() {
    const std::string holder = Holder();
    for (Replica& r : replicas_) {
      if (r.identity() == holder) return &r;
    }
    return nullptr;
  }

  // Waits until the Lease names a holder other than `old` (the leader hit by a fault at `at`)
  // and records the time to that takeover; a violation after kTakeoverLimit.
  void AwaitTakeover(const std::string& old, Clock::time_point at) {
    if (kube::testing::WaitFor(
            [&] {
              const std::string h = Holder();
              return !h.empty() && h != old;
            },
            kTakeoverLimit)) {
      takeovers_.push_back(std::chrono::duration<double>(Clock::now() - at).count());
    } else {
      Violation(fmt::format("no replica took over from {} within {} s", old, kTakeoverLimit.count()));
    }
  }

  // Lines of the log at `path` that contain `text`.
  static int Count(const std::string& path, const std::string& text) {
    std::istringstream in(Slurp(path));
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
    return n;
  }

  // The state invariants of the pods of namespace default now.
  std::vector<std::string> StateProblems() {
    testing::ClusterCheck check = testing::CheckCluster(s_, "default");
    std::vector<std::string> problems = check.problems;
    for (std::string& p : PlacementProblems(s_.List("pods", "default"), first_seen_)) problems.push_back(std::move(p));
    return problems;
  }

  // Checks the state about once a second until the events are done.
  void Monitor() {
    while (!done_) {
      for (const std::string& p : StateProblems()) Violation(p);
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }

  // Resumes nothing (no replica is left stopped), waits for progress, checks the end state,
  // stops the replicas and reads the audit log and the replicas' logs.
  void Finish() {
    const auto start = Clock::now();
    std::vector<std::string> waiting;
    kube::testing::WaitFor(
        [&] {
          waiting = PendingThatFit(s_.List("pods", "default"), nodes_, *topology_);
          return waiting.empty();
        },
        kProgressLimit, std::chrono::seconds(1));
    progress_seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
    if (!waiting.empty()) {
      Violation(fmt::format("{} pods that fit still pending after {} s: {}\n{}", waiting.size(), kProgressLimit.count(),
                            fmt::join(waiting, ", "), testing::UnboundPods(s_, "default")));
    }
    for (const std::string& p : StateProblems()) Violation(p);
    std::vector<std::string> agent_problems;
    const auto agent_start = Clock::now();
    kube::testing::WaitFor(
        [&] {
          agent_problems = AgentProblems(s_.Get(testing::kNrtResource, "", kAgentNode), s_.List("pods", "default"), kAgentNode);
          return agent_problems.empty();
        },
        kAgentLimit, std::chrono::seconds(1));
    agent_seconds_ = std::chrono::duration<double>(Clock::now() - agent_start).count();
    for (const std::string& p : agent_problems) Violation(fmt::format("after {} s: {}", kAgentLimit.count(), p));
    if (int rc = agent_.process->Stop(); rc != 0) Violation(fmt::format("the agent exited {} on SIGTERM", rc));
    for (Replica& r : replicas_) {
      if (int rc = r.process->Stop(); rc != 0) Violation(fmt::format("{} exited {} on SIGTERM", r.identity(), rc));
    }
    std::vector<json> audit;
    for (const Replica& r : replicas_) {
      for (json& e : bed_.Audit(audit_mark_, "system:serviceaccount:default:chaos-" + r.slot)) audit.push_back(std::move(e));
    }
    LeadershipCheck leadership = CheckLeadership(LeadershipRecords(audit));
    bindings_ = leadership.bindings;
    admitted_ = leadership.admitted;
    for (const auto& [time, p] : leadership.problems) Violation(p, EventAt(time));
    int acquisitions = 0;
    for (const Replica& r : replicas_) {
      for (const std::string& log : r.logs) acquisitions += Count(log, "started leading");
    }
    leader_changes_ = std::max(0, acquisitions - 1);
  }

  testing::Testbed bed_;
  FakeApiServer& s_;
  std::unique_ptr<kube::Client> admin_;
  std::mt19937_64 rng_;
  uint64_t seed_;
  std::string server_url_;
  std::string config_;
  std::shared_ptr<const CpuTopology> topology_;
  std::vector<Replica> replicas_;
  // The node agent of kAgentNode: its token kubeconfig (ServiceAccount chaos-agent), its
  // configuration file, the process now running and the log of each incarnation.
  struct {
    std::string kubeconfig;
    std::string config;
    std::unique_ptr<Process> process;
    std::vector<std::string> logs;
  } agent_;
  std::uintmax_t audit_mark_ = 0;
  std::set<std::string> nodes_;
  int next_node_ = 0;
  std::vector<std::string> pods_;  // live pods of the run
  std::map<std::string, std::string> first_seen_;  // monitor thread only
  std::atomic<int> event_{0};
  std::vector<std::string> event_started_;  // audit time at the start of each event
  std::atomic<bool> done_{false};
  mutable std::mutex mu_;
  std::map<std::string, int> violations_;  // problem -> event of its first sight; guarded by mu_
  // Figures.
  std::map<Kind, int> applied_;
  int created_ = 0;
  int bindings_ = 0;
  int admitted_ = 0;  // LeadershipCheck::admitted
  int leader_changes_ = 0;
  std::vector<double> takeovers_;  // seconds
  double events_seconds_ = 0;
  double progress_seconds_ = 0;
  double agent_seconds_ = 0;  // until the agent's NRT and statuses matched the pods at the end
};

// The admin client of the testbed's real apiserver.
absl::StatusOr<std::unique_ptr<kube::Client>> AdminClient(const testing::Testbed& bed) {
  auto config = kube::LoadKubeconfig(bed.admin_kubeconfig());
  if (!config.ok()) return config.status();
  auto rest = kube::RestClient::Create(*config);
  if (!rest.ok()) return rest.status();
  return std::make_unique<kube::Client>(*std::move(rest));
}

// FakeApiServer in upstream mode on the testbed (it empties the cluster first): the test's
// admin handle (objects, etcd compaction, apiserver restart). The replicas talk to the real
// apiserver directly.
absl::StatusOr<std::unique_ptr<FakeApiServer>> UpstreamOf(const testing::Testbed& bed) {
  kube::testing::FakeApiServerOptions options;
  std::string etcd = Slurp((bed.dir() / "etcd-url").string());
  while (!etcd.empty() && etcd.back() == '\n') etcd.pop_back();
  options.upstream = kube::testing::UpstreamOptions{
      .kubeconfig = bed.admin_kubeconfig(), .etcd_url = etcd, .restart_command = (bed.dir() / "restart-apiserver").string()};
  return FakeApiServer::Start(options);
}

TEST(Chaos, TwoReplicasUnderSeededFaultsNeverShareACpuNeverBindAsTwoLeadersAndLoseNoPod) {
  auto bed = testing::Testbed::FromEnvironment();
  if (!bed) GTEST_SKIP() << "no testbed (HUYGENS_TESTBED_DIR; CMake option HUYGENS_CLUSTER_TESTS)";
  const int events = static_cast<int>(EnvOr("HUYGENS_CHAOS_EVENTS", kDefaultEvents));
  const uint64_t seed = static_cast<uint64_t>(EnvOr("HUYGENS_CHAOS_SEED", 1));
  SCOPED_TRACE(fmt::format("reproduce: HUYGENS_CHAOS_SEED={} HUYGENS_CHAOS_EVENTS={} HUYGENS_TESTBED_DIR={} {} "
                           "--gtest_filter=Chaos.*",
                           seed, events, bed->dir().string(), ::testing::internal::GetArgvs()[0]));
  auto server = UpstreamOf(*bed);
  ASSERT_TRUE(server.ok()) << server.status();
  auto admin = AdminClient(*bed);
  ASSERT_TRUE(admin.ok()) << admin.status();
  ChaosRun run(*bed, **server, *std::move(admin), seed);
  ASSERT_TRUE(run.SetUp().ok());
  run.Run(events);
  std::cout << run.Figures();
  const std::vector<std::string> violations = run.Violations();
  EXPECT_TRUE(violations.empty()) << violations.size() << " violations, seed " << seed << ":\n"
                                  << fmt::format("{}", fmt::join(violations, "\n"));
}

// The checks fail when the invariant breaks: a Binding by the replica that lost the Lease after
// the new holder bound, and a pod bound twice; one that lands before the new holder's first
// Binding is admitted and counted.
TEST(ChaosChecks, ABindingByTheReplicaThatLostTheLeaseAndADoubleBindingAreSeen) {
  auto audit = [](const std::string& time, const std::string& user, const std::string& resource,
                  const std::string& name) {
    const bool binding = resource == "binding";
    json ref = {{"resource", binding ? "pods" : "leases"},
                {"namespace", binding ? "default" : kLeaseNamespace},
                {"name", name}};
    if (binding) ref["subresource"] = "binding";
    return json{{"verb", binding ? "create" : "update"},
                {"user", {{"username", user}}},
                {"objectRef", ref},
                {"responseStatus", {{"code", binding ? 201 : 200}}},
                {"requestReceivedTimestamp", time},
                {"stageTimestamp", time}};
  };
  std::vector<json> clean = {audit("2026-01-01T00:00:00.000001Z", "a", "lease", kLeaseName),
                             audit("2026-01-01T00:00:00.100000Z", "a", "binding", "p1"),
                             audit("2026-01-01T00:00:03.000000Z", "b", "lease", kLeaseName),
                             audit("2026-01-01T00:00:03.100000Z", "b", "binding", "p2")};
  EXPECT_THAT(CheckLeadership(LeadershipRecords(clean)).problems, ::testing::IsEmpty());
  EXPECT_EQ(CheckLeadership(LeadershipRecords(clean)).bindings, 2);

  std::vector<json> late = clean;  // a's Binding sent in its term lands after b took the Lease
  late.push_back(audit("2026-01-01T00:00:03.050000Z", "a", "binding", "p0"));
  late.push_back(audit("2026-01-01T00:00:04.000000Z", "b", "lease", kLeaseName));  // a renew: same term
  EXPECT_THAT(CheckLeadership(LeadershipRecords(late)).problems, ::testing::IsEmpty());
  EXPECT_EQ(CheckLeadership(LeadershipRecords(late)).admitted, 1);

  std::vector<json> hung = late;
  hung.push_back(audit("2026-01-01T00:00:04.200000Z", "a", "binding", "p3"));  // a, resumed, binds on
  hung.push_back(audit("2026-01-01T00:00:04.300000Z", "b", "binding", "p2"));
  const LeadershipCheck check = CheckLeadership(LeadershipRecords(hung));
  EXPECT_THAT(check.problems,
              ::testing::ElementsAre(::testing::Pair("2026-01-01T00:00:04.200000Z", ::testing::HasSubstr("pod p3 bound by a")),
                                     ::testing::Pair("2026-01-01T00:00:04.300000Z", ::testing::HasSubstr("pod p2 bound twice"))));
  EXPECT_EQ(check.admitted, 1);
}

// The agent check sees an agent that counts other CPUs exclusive than the bound pods hold, and a
// pod it has not reported on; it passes once both agree.
TEST(ChaosChecks, AnAgentBehindItsPodsIsSeen) {
  const std::string allocation = R"({"version":1,"node":"agent-node","numaNodes":[0],"containers":[{"name":"app","cpuset":"1","mems":"0"}]})";
  json pod = testing::GuaranteedPod("g-1", 1);
  pod["metadata"]["uid"] = "u1";
  pod["spec"]["nodeName"] = kAgentNode;
  pod["metadata"]["annotations"] = {{kAllocationAnnotation, allocation}};
  json elsewhere = pod;
  elsewhere["metadata"]["name"] = "g-2";
  elsewhere["spec"]["nodeName"] = "n0";
  auto nrt = [](const std::string& exclusive) {
    return json{{"metadata",
                 {{"name", kAgentNode},
                  {"annotations",
                   {{kPoolsAnnotation, json{{"version", 1}, {"system", "0"}, {"user", "1"}, {"exclusive", exclusive},
                                            {"mode", "allocatable"}}.dump()}}}}}};
  };
  EXPECT_THAT(AgentProblems(std::nullopt, {pod}, kAgentNode), ::testing::ElementsAre("agent-node: no NodeResourceTopology"));
  EXPECT_THAT(AgentProblems(nrt(""), {pod, elsewhere}, kAgentNode),
              ::testing::ElementsAre("pod g-1 on agent-node: no huygens.io/allocation-status",
                                     "agent-node: the agent counts CPUs  exclusive, the bound pods hold 1"));
  pod["metadata"]["annotations"][kAllocationStatusAnnotation] = R"({"state":"failed"})";
  EXPECT_THAT(AgentProblems(nrt("1"), {pod, elsewhere}, kAgentNode), ::testing::IsEmpty());
}

// The state check sees two bound pods holding one CPU (written by the test itself, as a broken
// scheduler would) and a bound Guaranteed pod without an allocation.
TEST(ChaosChecks, TwoPodsBoundOnOneCpuAndABoundPodWithoutAllocationAreSeen) {
  auto bed = testing::Testbed::FromEnvironment();
  if (!bed) GTEST_SKIP() << "no testbed (HUYGENS_TESTBED_DIR; CMake option HUYGENS_CLUSTER_TESTS)";
  auto server = UpstreamOf(*bed);
  ASSERT_TRUE(server.ok()) << server.status();
  FakeApiServer& s = **server;
  auto admin = AdminClient(*bed);
  ASSERT_TRUE(admin.ok()) << admin.status();
  ASSERT_TRUE(testing::AddMachine(s, "n0", kNodeCpus));
  const std::string allocation = R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"2-3","mems":"0"}]})";
  for (const char* name : {"g-1", "g-2", "g-3"}) {
    auto pod = s.Create("pods", testing::GuaranteedPod(name, 2));
    ASSERT_TRUE(pod.ok()) << pod.status();
    std::map<std::string, std::string> annotations;
    if (std::string(name) != "g-3") annotations[kAllocationAnnotation] = allocation;
    ASSERT_TRUE((*admin)->Bind("default", name, "n0", "", annotations).ok());
  }
  EXPECT_THAT(testing::CheckCluster(s, "default").problems, ::testing::Contains(::testing::HasSubstr("cpu 2: held by g-1 and g-2")));
  std::map<std::string, std::string> first_seen;
  EXPECT_THAT(PlacementProblems(s.List("pods", "default"), first_seen),
              ::testing::ElementsAre("pod g-3: bound to n0 without an allocation"));
}

}  // namespace
}  // namespace huygens::scheduler

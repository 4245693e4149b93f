// Huygens installed as documented on the real testbed cluster (label `cluster`; docs/testbed.md):
// the `kubectl apply` lines of the README and the component docs, run with the pinned kubectl,
// then huygens-scheduler and huygens-agent as local processes with the ServiceAccount tokens and
// RBAC those manifests define, talking to the real kube-apiserver directly.
//
// Install.AsDocumentedWithLeastPrivilege: the standalone scheduler and the agent; the audit log
// shows no refused call, and the roles grant exactly the permissions the components used.
// Install.ExtenderModeWithKubeScheduler: the real kube-scheduler, configured from
// deploy/kube-scheduler/extender-config.yaml, calls huygens-scheduler in extender mode; every
// pod is bound with a valid, disjoint allocation and kube-scheduler's own filters (taints,
// nodeSelector, node affinity) hold.
//
// The test's own reads and writes (Nodes, NRTs, pods, checks) go through FakeApiServer's
// upstream mode as the admin; it also empties the cluster at the start.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/extender_opt_in.h"
#include "base/quantity.h"
#include "base/wire_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/resource.h"
#include "kube/rest_client.h"
#include "kube/testing/fake_apiserver.h"
#include "scheduler/test_cluster.h"
#include "scheduler/testbed_install.h"
#include "yaml-cpp/yaml.h"

namespace huygens::scheduler {
namespace {

namespace fs = std::filesystem;
using kube::testing::FakeApiServer;
using nlohmann::json;
using testing::Permission;

constexpr char kSchedulerUser[] = "system:serviceaccount:huygens-system:huygens-scheduler";
constexpr char kAgentUser[] = "system:serviceaccount:huygens-system:huygens-agent";
const std::string kSource = HUYGENS_SOURCE_DIR;

// The text of the `file` key of the ConfigMap document in a deploy manifest.
std::string ConfigMapFile(const std::string& manifest, const std::string& file) {
  for (const YAML::Node& d : YAML::LoadAll(testing::Slurp(kSource + "/" + manifest))) {
    if (d["kind"].as<std::string>() == "ConfigMap") return d["data"][file].as<std::string>();
  }
  return "";
}

std::string Emit(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return out.c_str();
}

class Install : public ::testing::Test {
 protected:
  void SetUp() override {
    auto testbed = testing::Testbed::FromEnvironment();
    if (!testbed) GTEST_SKIP() << "no testbed (HUYGENS_TESTBED_DIR; CMake option HUYGENS_CLUSTER_TESTS)";
    bed_ = *testbed;
    work_ = bed_.dir() / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(work_);
    fs::create_directories(work_);
    kube::testing::FakeApiServerOptions options;
    options.upstream = kube::testing::UpstreamOptions{.kubeconfig = bed_.admin_kubeconfig()};
    auto server = FakeApiServer::Start(options);  // empties the cluster
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    mark_ = bed_.AuditMark();
    ApplyAsDocumented();
  }

  void TearDown() override {
    if (!server_) return;
    // The manifests' controllers would keep making pods for the next test: remove them (and
    // wait for their pods) before the next test empties the cluster.
    bed_.Kubectl("kubectl delete --wait --cascade=foreground --ignore-not-found -n huygens-system "
                 "deployment/huygens-scheduler deployment/huygens-extender",
                 kSource);
    // The agents' token pods (ServiceAccountKubeconfig) are on nodes without a kubelet, which
    // would never confirm a graceful deletion: removed at once.
    bed_.Kubectl("kubectl delete pods --all -n huygens-system --grace-period=0 --force", kSource);
    bed_.Kubectl("kubectl delete --wait --ignore-not-found namespace huygens-system", kSource);
  }

  // Every `kubectl apply` line of the README's and the components' docs, in order, from the
  // repository root as a user would type it; each must succeed. Every manifest under deploy/
  // is applied by some line, and the folders that hold no API objects by none.
  void ApplyAsDocumented() {
    std::vector<std::string> commands;
    for (const char* doc : {"README.md", "docs/agent.md", "docs/scheduler-service.md"}) {
      for (const std::string& c : testing::DocumentedApplyCommands(testing::Slurp(kSource + "/" + doc))) {
        if (std::find(commands.begin(), commands.end(), c) == commands.end()) commands.push_back(c);
      }
    }
    ASSERT_FALSE(commands.empty());
    std::set<std::string> applied;
    for (const std::string& c : commands) {
      std::string output;
      ASSERT_EQ(bed_.Kubectl(c, kSource, &output), 0) << c << "\n" << output;
      for (const std::string& path : testing::AppliedPaths(c)) {
        ASSERT_FALSE(path.starts_with("deploy/prometheus") || path.starts_with("deploy/kube-scheduler") ||
                     path.starts_with("deploy/helm"))
            << c;
        fs::path p = fs::path(kSource) / path;
        if (fs::is_directory(p)) {
          for (const auto& f : fs::directory_iterator(p)) applied.insert(fs::relative(f.path(), kSource).string());
        } else {
          applied.insert(path);
        }
      }
    }
    for (const auto& f : fs::recursive_directory_iterator(fs::path(kSource) / "deploy")) {
      const std::string rel = fs::relative(f.path(), kSource).string();
      // Not API objects for kubectl: rule files, kube-scheduler's configuration, the Helm chart
      // (deploy/helm_install_test.sh installs it), the scripts and CMake file beside them.
      if (!f.is_regular_file() || !rel.ends_with(".yaml") || rel.starts_with("deploy/prometheus/") ||
          rel.starts_with("deploy/kube-scheduler/") || rel.starts_with("deploy/helm/")) {
        continue;
      }
      EXPECT_TRUE(applied.contains(rel)) << rel << " is applied by no documented kubectl command";
    }
    std::string output;
    ASSERT_EQ(bed_.Kubectl("kubectl wait --for condition=established --timeout=60s crd/noderesourcetopologies.topology.node.k8s.io", kSource, &output), 0) << output;
  }

  // huygens-scheduler with the given configuration text and the scheduler's token.
  std::unique_ptr<testing::Process> StartScheduler(const std::string& config_yaml, const std::string& name) {
    auto kubeconfig = bed_.ServiceAccountKubeconfig("huygens-system", "huygens-scheduler");
    EXPECT_TRUE(kubeconfig.ok()) << kubeconfig.status();
    scheduler_kubeconfig_ = kubeconfig.value_or("");
    std::ofstream(work_ / (name + ".yaml")) << config_yaml;
    metrics_port_ = testing::FreePort();
    return std::make_unique<testing::Process>(
        std::vector<std::string>{HUYGENS_SCHEDULER_BIN, "--config", (work_ / (name + ".yaml")).string(),
                                 "--kubeconfig", kubeconfig.value_or(""), "--identity", name, "--metrics-address",
                                 fmt::format("127.0.0.1:{}", metrics_port_), "--log-level", "info"},
        (work_ / (name + ".log")).string());
  }

  // Waits until huygens-scheduler's /readyz answers 200 (every informer listed).
  bool SchedulerReady() {
    httplib::Client http("127.0.0.1", metrics_port_);
    return testing::WaitFor([&] {
      auto r = http.Get("/readyz");
      return r && r->status == 200;
    });
  }

  // No request of `user` since SetUp was refused, and there were some.
  void ExpectNothingRefused(const std::string& user) {
    std::vector<json> events = bed_.Audit(mark_, user);
    EXPECT_FALSE(events.empty()) << user << " made no request";
    for (const json& e : events) {
      EXPECT_NE(e["responseStatus"].value("code", 0), 403)
          << user << " was refused " << testing::ToString(testing::PermissionOf(e)) << " " << e["requestURI"];
    }
  }

  // The resource permissions `user` used since SetUp (from the audit log; non-resource URLs
  // such as /api are not RBAC rules of the roles under test).
  std::set<Permission> Used(const std::string& user) {
    std::set<Permission> used;
    for (const json& e : bed_.Audit(mark_, user)) {
      if (e.contains("objectRef")) used.insert(testing::PermissionOf(e));
    }
    return used;
  }

  testing::Testbed bed_;
  fs::path work_;
  std::unique_ptr<FakeApiServer> server_;
  std::uintmax_t mark_ = 0;
  int metrics_port_ = 0;
  // After a run: every call of the scheduler and the agent was allowed, their roles hold exactly
  // what they used, and what neither needs is denied.
  void ExpectRolesHoldExactlyWhatWasUsed(const std::string& agent_kubeconfig) {
    // Every call was allowed, and the roles hold exactly what was used.
    ExpectNothingRefused(kSchedulerUser);
    ExpectNothingRefused(kAgentUser);
    for (const auto& [user, ns, sa, kubeconfig] :
         {std::tuple{kSchedulerUser, "huygens-system", "huygens-scheduler", scheduler_kubeconfig_},
          std::tuple{kAgentUser, "huygens-system", "huygens-agent", agent_kubeconfig}}) {
      auto granted = testing::GrantedPermissions(kubeconfig, ns);
      ASSERT_TRUE(granted.ok()) << granted.status();
      // A watch is audited when its stream ends, a moment after the process is gone.
      std::set<Permission> used;
      testing::WaitFor([&] {
        used = Used(user);
        return std::includes(used.begin(), used.end(), granted->begin(), granted->end());
      }, std::chrono::seconds(10));
      for (const Permission& p : *granted) {
        // Rules for a path a clean run does not take, each with the reason it is needed.
        static const std::map<std::pair<std::string, Permission>, const char*> kFailurePaths = {
            {{"huygens-scheduler", {"", "pods", "get"}}, "a Binding answered 409: did an earlier attempt of ours land?"},
            {{"huygens-scheduler", {"", "pods/status", "patch"}},
             "a pod that cannot be placed, or is gated, says why in its PodScheduled condition"},
            {{"huygens-agent", {"events.k8s.io", "events", "patch"}},
             "the same event again within 6 minutes counts in the first one's series (kube/event_recorder.h)"},
        };
        if (kFailurePaths.contains({sa, p}) && !used.contains(p)) continue;
        EXPECT_TRUE(used.contains(p)) << sa << " holds " << testing::ToString(p) << " but never used it";
      }
      for (const Permission& p : used) {
        if (std::get<0>(p) == "authorization.k8s.io") continue;  // GrantedPermissions' own review
        EXPECT_TRUE(granted->contains(p)) << sa << " used " << testing::ToString(p) << " without a rule";
      }
    }

    // And what neither component needs is denied (kubectl auth can-i, impersonating each).
    for (const auto& [as, what] : std::vector<std::pair<std::string, std::string>>{
             {kSchedulerUser, "delete pods"},
             {kSchedulerUser, "update nodes"},
             {kSchedulerUser, "get secrets -n huygens-system"},
             {kSchedulerUser, "update leases/kube-scheduler -n kube-system"},
             {kSchedulerUser, "create noderesourcetopologies.topology.node.k8s.io"},
             {kAgentUser, "create pods/binding"},
             {kAgentUser, "delete noderesourcetopologies.topology.node.k8s.io"},
             {kAgentUser, "update nodes"},
             {kAgentUser, "get secrets -n huygens-system"}}) {
      std::string output;
      EXPECT_NE(bed_.Kubectl(fmt::format("kubectl auth can-i {} --as={}", what, as), kSource, &output), 0)
          << as << " may " << what << ": " << output;
    }
  }

  // The admission policy confines the agent of agent-node (its token in `agent_kubeconfig`).
  void ExpectTheAdmissionPolicyConfinesTheAgent(const std::string& agent_kubeconfig) {
    // What RBAC cannot say, the admission policy does: agent-node's agent may not touch another
    // node's pods, NRT or Node, nor anything of its own pods but the allocation status.
    auto config = kube::LoadKubeconfig(agent_kubeconfig);
    ASSERT_TRUE(config.ok()) << config.status();
    auto rest = kube::RestClient::Create(*config);
    ASSERT_TRUE(rest.ok()) << rest.status();
    kube::Client as_agent(std::move(*rest));
    const json status_patch = {{"metadata", {{"annotations", {{"huygens.io/allocation-status", R"({"state":"applied"})"}}}}}};
    auto elsewhere = as_agent.MergePatch(kube::Pods(), "default", "p0", status_patch);
    ASSERT_FALSE(elsewhere.ok()) << "agent-node's agent patched p0 of another node";
    EXPECT_THAT(std::string(elsewhere.status().message()), ::testing::HasSubstr("may not change pod p0"));
    auto label = as_agent.MergePatch(kube::Pods(), "default", "on-agent-node", json{{"metadata", {{"labels", {{"x", "y"}}}}}});
    ASSERT_FALSE(label.ok()) << "the agent changed a label";
    EXPECT_THAT(std::string(label.status().message()), ::testing::HasSubstr("only a pod's huygens.io/allocation-status"));
    auto own = as_agent.MergePatch(kube::Pods(), "default", "on-agent-node", status_patch);
    EXPECT_TRUE(own.ok()) << own.status();
    auto other_nrt = as_agent.Get(kube::NodeResourceTopologies(), "", "n1");
    ASSERT_TRUE(other_nrt.ok()) << other_nrt.status();
    (*other_nrt)["metadata"]["annotations"]["huygens.io/pools"] = R"({"exclusive":""})";
    auto nrt_write = as_agent.Update(kube::NodeResourceTopologies(), *other_nrt);
    ASSERT_FALSE(nrt_write.ok()) << "agent-node's agent rewrote n1's NodeResourceTopology";
    EXPECT_THAT(std::string(nrt_write.status().message()), ::testing::HasSubstr("may not write the NodeResourceTopology n1"));
  }

  std::string scheduler_kubeconfig_;  // the last StartScheduler's
};

// The `exclusive` cpu-list of the huygens.io/pools annotation of `node`'s NRT.
std::string ExclusiveCpus(FakeApiServer& server, const std::string& node) {
  auto nrt = server.Get(testing::kNrtResource, "", node);
  if (!nrt) return "(no NRT)";
  auto annotations = (*nrt)["metadata"].value("annotations", json::object());
  return json::parse(annotations.value("huygens.io/pools", "{}"), nullptr, false).value("exclusive", "");
}

// The state of a pod's huygens.io/allocation-status ("" when it has none).
std::string PodState(const json& pod) {
  auto annotations = pod["metadata"].value("annotations", json::object());
  if (!annotations.contains("huygens.io/allocation-status")) return "";
  return json::parse(annotations["huygens.io/allocation-status"].get<std::string>(), nullptr, false).value("state", "");
}

TEST_F(Install, AsDocumentedWithLeastPrivilege) {
  // This machine is the agent's node: a Node object without a kubelet, its NRT published by
  // the agent. Its CPU 0 is the system pool, so it has user CPUs only with 2 or more CPUs.
  const int host_cpus = static_cast<int>(std::thread::hardware_concurrency());
  ASSERT_GE(host_cpus, 2);
  ASSERT_TRUE(testing::CreateReadyNode(*server_, testing::NodeObject("agent-node", host_cpus)));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(testing::AddMachine(*server_, fmt::format("n{}", i), 16));

  // The agent, with deploy/agent/configmap.yaml's configuration, pointed at this test's files
  // and at a container runtime that is not there (no kubelet runs the pods).
  // Each agent's token is bound to a pod on its node, as the DaemonSet's are (the admission
  // policy of deploy/agent/02-admission-policy.yaml lets an agent write only its own node's).
  auto agent_kubeconfig = bed_.ServiceAccountKubeconfig("huygens-system", "huygens-agent", "agent-node");
  ASSERT_TRUE(agent_kubeconfig.ok()) << agent_kubeconfig.status();
  auto isolated_kubeconfig = bed_.ServiceAccountKubeconfig("huygens-system", "huygens-agent", "agent-isolated");
  ASSERT_TRUE(isolated_kubeconfig.ok()) << isolated_kubeconfig.status();
  YAML::Node agent_config = YAML::Load(ConfigMapFile("deploy/agent/configmap.yaml", "agent.yaml"));
  agent_config.remove("kubeletConfig");
  agent_config["systemCpus"] = "0";
  agent_config["runtime"]["endpoint"] = "unix://" + (work_ / "no-runtime.sock").string();
  agent_config["runtime"]["timeout"] = "500ms";
  agent_config["kubeletCheckpoint"] = "";
  agent_config["checkpoint"] = (work_ / "agent-checkpoint.json").string();
  agent_config["metricsAddress"] = "";
  agent_config["resyncPeriod"] = "1s";
  std::ofstream(work_ / "agent.yaml") << Emit(agent_config);
  auto agent = [&](const std::string& node, const std::string& config, bool once) {
    std::vector<std::string> argv = {HUYGENS_AGENT_BIN, "--config", (work_ / config).string(), "--kubeconfig",
                                     node == "agent-isolated" ? *isolated_kubeconfig : *agent_kubeconfig,
                                     "--node-name", node};
    if (once) argv.push_back("--once");
    return std::make_unique<testing::Process>(argv, (work_ / (node + (once ? "-once.log" : ".log"))).string());
  };
  // First pass: publishes the NRT (no runtime: exit 1, but the NRT is written).
  EXPECT_EQ(agent("agent-node", "agent.yaml", true)->Wait(), 1);
  ASSERT_TRUE(server_->Get(testing::kNrtResource, "", "agent-node").has_value())
      << testing::Slurp(work_ / "agent-node-once.log");
  // Allocatable mode publishes the opt-in of extender mode, huygens.io/exclusive, on the Node.
  EXPECT_EQ(ParseMemoryBytes(server_->Get("nodes", "", "agent-node")
                                 ->at("status")
                                 .at("allocatable")
                                 .value(kExclusiveResource, std::string())).value_or(0),
            kExclusiveResourceCapacity)
      << testing::Slurp(work_ / "agent-node-once.log");
  // Isolated mode publishes huygens.io/isolated-cpu on the Node status (this machine has no
  // isolated CPUs: 0).
  ASSERT_TRUE(testing::CreateReadyNode(*server_, testing::NodeObject("agent-isolated", host_cpus)));
  agent_config["mode"] = "isolated";
  agent_config["checkpoint"] = (work_ / "agent-isolated-checkpoint.json").string();
  std::ofstream(work_ / "agent-isolated.yaml") << Emit(agent_config);
  agent("agent-isolated", "agent-isolated.yaml", true)->Wait();
  auto isolated = server_->Get("nodes", "", "agent-isolated");
  ASSERT_TRUE(isolated.has_value());
  EXPECT_TRUE(isolated->at("status").at("allocatable").contains("huygens.io/isolated-cpu"))
      << testing::Slurp(work_ / "agent-isolated-once.log");
  EXPECT_FALSE(isolated->at("status").at("allocatable").contains(kExclusiveResource));

  // The standalone scheduler with deploy/scheduler/configmap.yaml's configuration (leader
  // election on, as deployed), its rebalancer's interval shortened so that it runs rounds
  // within the test. A NumaAffinityGroup (deploy/crd) gets its status from those rounds.
  YAML::Node scheduler_config = YAML::Load(ConfigMapFile("deploy/scheduler/configmap.yaml", "config.yaml"));
  scheduler_config["rebalancer"]["interval"] = "1s";
  ASSERT_TRUE(server_
                  ->Create("numaaffinitygroups.huygens.io",
                           {{"apiVersion", "huygens.io/v1alpha1"},
                            {"kind", "NumaAffinityGroup"},
                            {"metadata", {{"name", "web"}, {"namespace", "default"}}},
                            {"spec", {{"selector", {{"matchLabels", {{"app", "web"}}}}}}}})
                  .ok());
  // A pod pending when the scheduler starts leading: its takeover fence writes it (pods patch).
  // Its allocation annotation (written by the admin, whom the admission policy lets through)
  // names a node that is not there: it holds nothing, and the pod is scheduled like any other.
  json stale = testing::GuaranteedPod("stale-allocation", 2);
  stale["metadata"]["annotations"] = {
      {kAllocationAnnotation,
       R"({"version":1,"node":"gone","numaNodes":[0],"containers":[{"name":"app","cpuset":"2-3","mems":"0"}]})"}};
  ASSERT_TRUE(server_->Create("pods", stale).ok());
  auto scheduler = StartScheduler(Emit(scheduler_config), "scheduler");
  ASSERT_TRUE(SchedulerReady()) << testing::Slurp(work_ / "scheduler.log");

  // Whole cores (deploy/scheduler/configmap.yaml binds full-cores; n0-n3 are SMT2): 2 and 4
  // CPUs, 48 of n0-n3's 56 user CPUs. None fits agent-node (one user CPU) but its own pod.
  constexpr int kPods = 20;
  for (int i = 0; i < kPods; ++i) {
    ASSERT_TRUE(server_->Create("pods", testing::GuaranteedPod(fmt::format("p{}", i), i % 5 == 4 ? 4 : 2)).ok());
  }
  json on_agent = testing::GuaranteedPod("on-agent-node", 1);
  on_agent["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "agent-node"}};
  ASSERT_TRUE(server_->Create("pods", on_agent).ok());
  // One pod no node can take: its FailedScheduling event is written.
  ASSERT_TRUE(server_->Create("pods", testing::GuaranteedPod("too-big", 64)).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return testing::CheckCluster(*server_, "default").bound == kPods + 2; }, std::chrono::seconds(60)))
      << testing::UnboundPods(*server_, "default") << testing::Slurp(work_ / "scheduler.log");
  testing::ClusterCheck check = testing::CheckCluster(*server_, "default");
  EXPECT_EQ(check.annotated, kPods + 2);
  EXPECT_THAT(check.problems, ::testing::IsEmpty());
  // The leader renews its Lease (leases update) every retryPeriod: wait for one renewal.
  EXPECT_TRUE(testing::WaitFor([&] {
    auto lease = server_->Get("leases.coordination.k8s.io", "huygens-system", "huygens-scheduler");
    return lease && lease->at("spec").value("renewTime", "") != lease->at("spec").value("acquireTime", "");
  }, std::chrono::seconds(20))) << "the scheduler's Lease was never renewed";

  // The agent's loop on its node: watches its pods, reports the allocation it cannot apply
  // without a runtime (failed, with a CpusetFailed event), publishes the CPU as held.
  {
    auto loop = agent("agent-node", "agent.yaml", false);
    EXPECT_TRUE(testing::WaitFor([&] {
      auto pod = server_->Get("pods", "default", "on-agent-node");
      return pod && PodState(*pod) == "failed";
    })) << testing::Slurp(work_ / "agent-node.log");
    EXPECT_TRUE(testing::WaitFor([&] { return ExclusiveCpus(*server_, "agent-node") == "1"; })) << ExclusiveCpus(*server_, "agent-node");
    bool event = testing::WaitFor([&] {
      for (const json& e : server_->List("events.events.k8s.io", "default")) {
        if (e.value("reason", "") == "CpusetFailed") return true;
      }
      return false;
    });
    EXPECT_TRUE(event) << "no CpusetFailed event";
    EXPECT_EQ(loop->Stop(), 0);
  }
  // The rebalancer wrote the group's status (it selects no pod here: nothing to align).
  EXPECT_TRUE(testing::WaitFor([&] {
    auto group = server_->Get("numaaffinitygroups.huygens.io", "default", "web");
    return group.has_value() && group->contains("status") && (*group)["status"].value("memberCount", -1) == 0;
  })) << testing::Slurp(work_ / "scheduler.log");
  EXPECT_EQ(scheduler->Stop(), 0) << "clean exit on SIGTERM (releases the Lease)";

  ExpectRolesHoldExactlyWhatWasUsed(*agent_kubeconfig);
  ExpectTheAdmissionPolicyConfinesTheAgent(*agent_kubeconfig);
}

// A kube::Client that talks to the testbed's apiserver with `kubeconfig`'s credentials.
std::unique_ptr<kube::Client> ClientAs(const std::string& kubeconfig) {
  auto config = kube::LoadKubeconfig(kubeconfig);
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return nullptr;
  auto rest = kube::RestClient::Create(*config);
  EXPECT_TRUE(rest.ok()) << rest.status();
  return rest.ok() ? std::make_unique<kube::Client>(std::move(*rest)) : nullptr;
}

// Only Huygens decides allocations: the admission policy of deploy/scheduler/admission-policy.yaml
// refuses huygens.io/allocation and huygens.io/scheduler-fence from a user who may otherwise
// create, patch and bind pods in her namespace, and lets huygens-scheduler's ServiceAccount write
// them.
TEST_F(Install, OnlyTheSchedulerSetsAPodsAllocationOrFence) {
  const fs::path author = work_ / "pod-author.yaml";
  std::ofstream(author) << R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: pod-author, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-author, namespace: default}
rules:
- apiGroups: [""]
  resources: ["pods", "pods/status", "pods/binding"]
  verbs: ["create", "get", "patch", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pod-author, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-author}
subjects:
- {kind: ServiceAccount, name: pod-author, namespace: default}
)";
  std::string output;
  ASSERT_EQ(bed_.Kubectl("kubectl apply -f " + author.string(), kSource, &output), 0) << output;
  auto author_kubeconfig = bed_.ServiceAccountKubeconfig("default", "pod-author");
  ASSERT_TRUE(author_kubeconfig.ok()) << author_kubeconfig.status();
  auto as_author = ClientAs(*author_kubeconfig);
  auto scheduler_kubeconfig = bed_.ServiceAccountKubeconfig("huygens-system", "huygens-scheduler");
  ASSERT_TRUE(scheduler_kubeconfig.ok()) << scheduler_kubeconfig.status();
  auto as_scheduler = ClientAs(*scheduler_kubeconfig);
  ASSERT_TRUE(as_author && as_scheduler);
  const std::string allocation =
      R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"0-15","mems":"0"}]})";
  const auto refused = [](const auto& result, const char* what) {
    ASSERT_FALSE(result.ok()) << what << " was let through";
    EXPECT_THAT(std::string(result.status().message()),
                ::testing::HasSubstr("pod-author may not set or change huygens.io/allocation"))
        << what;
  };

  json claiming = testing::GuaranteedPod("claiming", 1);
  claiming["metadata"]["annotations"] = {{kAllocationAnnotation, allocation}};
  refused(as_author->Create(kube::Pods(), "default", claiming), "creating a pod with an allocation");
  auto plain = as_author->Create(kube::Pods(), "default", testing::GuaranteedPod("plain", 1));
  ASSERT_TRUE(plain.ok()) << plain.status();
  refused(as_author->MergePatch(kube::Pods(), "default", "plain",
                                json{{"metadata", {{"annotations", {{kAllocationAnnotation, allocation}}}}}}),
          "patching an allocation onto a pod");
  refused(as_author->MergePatch(kube::Pods(), "default", "plain",
                                json{{"metadata", {{"annotations", {{kSchedulerFenceAnnotation, "mine"}}}}}}),
          "patching a fence onto a pod");
  const absl::Status bound = as_author->Bind("default", "plain", "n0", "", {{kAllocationAnnotation, allocation}});
  ASSERT_FALSE(bound.ok()) << "a Binding with an allocation was let through";
  EXPECT_THAT(std::string(bound.message()), ::testing::HasSubstr("may not set or change huygens.io/allocation"));
  // Everything else stays hers to change.
  auto labelled = as_author->MergePatch(kube::Pods(), "default", "plain", json{{"metadata", {{"labels", {{"tier", "db"}}}}}});
  EXPECT_TRUE(labelled.ok()) << labelled.status();
  // The scheduler's ServiceAccount writes both (the fence, and a rebalancer's move).
  auto fenced = as_scheduler->MergePatch(kube::Pods(), "default", "plain",
                                         json{{"metadata", {{"annotations", {{kSchedulerFenceAnnotation, "t1"}}}}}});
  EXPECT_TRUE(fenced.ok()) << fenced.status();
  // And once it is there, she may not remove or rewrite it.
  refused(as_author->MergePatch(kube::Pods(), "default", "plain",
                                json{{"metadata", {{"annotations", {{kSchedulerFenceAnnotation, nullptr}}}}}}),
          "removing the fence");
  bed_.Kubectl("kubectl delete --ignore-not-found -f " + author.string(), kSource);
}

// A pod as kube-scheduler sees it: Guaranteed, `cpus` whole CPUs, default scheduler; `patch`
// (a JSON merge patch) adds nodeSelector, affinity, tolerations.
// A Guaranteed pod of kube-scheduler asking `cpus` whole CPUs; with `opt_in` it requests
// huygens.io/exclusive (1, in limits and requests), so kube-scheduler sends it through the
// extender (managedResources of deploy/kube-scheduler/extender-config.yaml).
json DefaultScheduledPod(const std::string& name, int cpus, const json& patch = json::object(), bool opt_in = true) {
  json pod = testing::GuaranteedPod(name, cpus, "default-scheduler");
  if (opt_in) {
    for (const char* list : {"requests", "limits"}) {
      pod["spec"]["containers"][0]["resources"][list][kExclusiveResource] = "1";
    }
  }
  pod.merge_patch(patch);
  return pod;
}

TEST_F(Install, ExtenderModeWithKubeScheduler) {
  // Eight nodes: zone a (n0-n3) and zone b (n4-n7); n3 and n7 are tainted dedicated=infra and
  // labelled for it.
  const json taint = {{"spec", {{"taints", {{{"key", "dedicated"}, {"value", "infra"}, {"effect", "NoSchedule"}}}}}}};
  for (int i = 0; i < 8; ++i) {
    json patch = {{"metadata", {{"labels", {{"zone", i < 4 ? "a" : "b"}}}}}};
    if (i % 4 == 3) {
      patch.merge_patch(taint);
      patch["metadata"]["labels"]["dedicated"] = "infra";
    }
    // 24 CPUs: zone a's untainted nodes (72 CPUs) hold every pod that may go there (the 40
    // CPUs of the unconstrained pods and the 16 of the zone-a pods), so the order kube-scheduler
    // meets the pods in cannot leave a zone-a pod without room: Huygens' scores pack, and may
    // put every unconstrained pod in zone a (with 16-CPU nodes one zone-a pod was left out).
    ASSERT_TRUE(testing::AddMachine(*server_, fmt::format("n{}", i), 24, {}, patch));
    // What the agent advertises on an allocatable-mode node: the opt-in resource.
    ASSERT_EQ(bed_.Kubectl(fmt::format("kubectl patch node n{} --subresource=status --type=merge -p "
                                       "'{{\"status\":{{\"capacity\":{{\"{}\":\"{}\"}},\"allocatable\":{{\"{}\":\"{}\"}}}}}}'",
                                       i, kExclusiveResource, kExclusiveResourceCapacity, kExclusiveResource,
                                       kExclusiveResourceCapacity),
                           kSource),
              0);
  }

  // huygens-scheduler in extender mode with deploy/scheduler/extender.yaml's configuration, on a
  // free loopback port; its TLS files are the testbed's: the apiserver's serving certificate (for
  // 127.0.0.1) and the CA of every client certificate here, kube-scheduler's included.
  const int extender_port = testing::FreePort();
  YAML::Node config = YAML::Load(ConfigMapFile("deploy/scheduler/extender.yaml", "config.yaml"));
  ASSERT_TRUE(config["extender"]["enabled"].as<bool>());
  config["extender"]["address"] = fmt::format("127.0.0.1:{}", extender_port);
  ASSERT_TRUE(config["extender"]["tls"]) << "the shipped extender serves HTTPS";
  const fs::path pki = bed_.dir() / "pki";
  config["extender"]["tls"]["certFile"] = (pki / "apiserver.crt").string();
  config["extender"]["tls"]["keyFile"] = (pki / "apiserver.key").string();
  config["extender"]["tls"]["clientCAFile"] = (pki / "ca.crt").string();
  auto extender = StartScheduler(Emit(config), "extender");
  ASSERT_TRUE(SchedulerReady()) << testing::Slurp(work_ / "extender.log");

  // kube-scheduler with deploy/kube-scheduler/extender-config.yaml, its urlPrefix pointed at the
  // local extender, the testbed's kube-scheduler identity and no leader election.
  YAML::Node ks = YAML::LoadFile(kSource + "/deploy/kube-scheduler/extender-config.yaml");
  ASSERT_TRUE(ks["extenders"][0]["enableHTTPS"].as<bool>());
  ks["extenders"][0]["urlPrefix"] = fmt::format("https://127.0.0.1:{}", extender_port);
  ks["extenders"][0]["tlsConfig"]["certFile"] = (pki / "scheduler.crt").string();
  ks["extenders"][0]["tlsConfig"]["keyFile"] = (pki / "scheduler.key").string();
  ks["extenders"][0]["tlsConfig"]["caFile"] = (pki / "ca.crt").string();
  ks["clientConnection"]["kubeconfig"] = (bed_.dir() / "scheduler.kubeconfig").string();
  ks["leaderElection"]["leaderElect"] = false;
  std::ofstream(work_ / "kube-scheduler.yaml") << Emit(ks);
  testing::Process kube_scheduler(
      {bed_.kube_bin("kube-scheduler"), "--config", (work_ / "kube-scheduler.yaml").string(),
       "--authentication-kubeconfig", (bed_.dir() / "scheduler.kubeconfig").string(),
       "--authorization-kubeconfig", (bed_.dir() / "scheduler.kubeconfig").string(),
       "--bind-address", "127.0.0.1", "--secure-port", "0", "--v", "2"},
      (work_ / "kube-scheduler.log").string());

  // 40 pods: 16 without constraints, 8 that need zone a (nodeSelector), 8 that must avoid it
  // (required node affinity), 8 that tolerate the taint and need the infra nodes.
  const json in_zone_a = {{"spec", {{"nodeSelector", {{"zone", "a"}}}}}};
  const json not_zone_a = {{"spec", {{"affinity", {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution",
      {{"nodeSelectorTerms", {{{"matchExpressions", {{{"key", "zone"}, {"operator", "NotIn"}, {"values", {"a"}}}}}}}}}}}}}}}}};
  const json infra = {{"spec", {{"nodeSelector", {{"dedicated", "infra"}}},
                                {"tolerations", {{{"key", "dedicated"}, {"operator", "Equal"}, {"value", "infra"}, {"effect", "NoSchedule"}}}}}}};
  std::map<std::string, std::string> kind;  // pod -> which constraint
  for (int i = 0; i < 40; ++i) {
    const std::string name = fmt::format("p{}", i);
    const int cpus = i % 10 == 0 ? 4 : 2;  // whole cores of the SMT2 nodes (full-cores); 88 CPUs
    json patch = json::object();
    if (i % 5 == 1) {
      patch = in_zone_a;
      kind[name] = "zone-a";
    } else if (i % 5 == 2) {
      patch = not_zone_a;
      kind[name] = "not-zone-a";
    } else if (i % 5 == 3) {
      patch = infra;
      kind[name] = "infra";
    }
    ASSERT_TRUE(server_->Create("pods", DefaultScheduledPod(name, cpus, patch)).ok());
  }
  ASSERT_TRUE(testing::WaitFor([&] { return testing::CheckCluster(*server_, "default").bound == 40; }, std::chrono::seconds(90)))
      << testing::CheckCluster(*server_, "default").bound << " of 40 bound\n" << testing::Slurp(work_ / "extender.log");
  testing::ClusterCheck check = testing::CheckCluster(*server_, "default");
  EXPECT_EQ(check.annotated, 40) << "every pod bound through Huygens' bind verb";
  EXPECT_THAT(check.problems, ::testing::IsEmpty());

  // kube-scheduler's filters held for what Huygens bound.
  std::map<std::string, json> nodes;
  for (const json& n : server_->List("nodes")) nodes[n["metadata"]["name"].get<std::string>()] = n;
  std::set<std::string> used_nodes;
  for (const json& pod : server_->List("pods", "default")) {
    const std::string name = pod["metadata"]["name"];
    const std::string node = pod["spec"].value("nodeName", "");
    ASSERT_TRUE(nodes.contains(node)) << name << " on " << node;
    used_nodes.insert(node);
    const json labels = nodes[node]["metadata"]["labels"];
    const bool tainted = nodes[node]["spec"].contains("taints");
    const std::string k = kind.contains(name) ? kind[name] : "";
    EXPECT_EQ(tainted, k == "infra") << name << " (" << k << ") on " << node;
    if (k == "zone-a") {
      EXPECT_EQ(labels.value("zone", ""), "a") << name << " on " << node;
    } else if (k == "not-zone-a") {
      EXPECT_NE(labels.value("zone", ""), "a") << name << " on " << node;
    }
  }
  EXPECT_GE(used_nodes.size(), 4u) << "the pods spread over several nodes";

  // The extender's calls were all allowed (it runs as huygens-scheduler, no Lease).
  EXPECT_EQ(extender->Stop(), 0);
  ExpectNothingRefused(kSchedulerUser);

  // With the extender down, a pod that does not opt in is scheduled by kube-scheduler alone (no
  // allocation); one that opts in waits for the extender (ignorable: false).
  ASSERT_TRUE(server_->Create("pods", DefaultScheduledPod("plain", 2, json::object(), /*opt_in=*/false)).ok());
  ASSERT_TRUE(server_->Create("pods", DefaultScheduledPod("opted-in", 2)).ok());
  const auto node_of = [&](const char* name) {
    return server_->Get("pods", "default", name)->at("spec").value("nodeName", "");
  };
  ASSERT_TRUE(testing::WaitFor([&] { return !node_of("plain").empty(); }, std::chrono::seconds(60)))
      << testing::Slurp(work_ / "kube-scheduler.log");
  EXPECT_FALSE(server_->Get("pods", "default", "plain")->at("metadata").value("annotations", json::object())
                   .contains(kAllocationAnnotation));
  std::this_thread::sleep_for(std::chrono::seconds(5));  // kube-scheduler tried the opted-in pod meanwhile
  EXPECT_EQ(node_of("opted-in"), "") << "an opted-in pod was bound without the extender";
}

}  // namespace
}  // namespace huygens::scheduler

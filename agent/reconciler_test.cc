#include "agent/reconciler.h"

#include <filesystem>
#include <functional>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agent/pod.h"
#include "cri/testing/fake_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/test_client.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "topology/testing/machines.h"

namespace huygens::agent {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using cri::testing::FakeRuntime;

// DualSocketHTWithOffline: 24 CPUs, NUMA 0 = 0-5,12-17, NUMA 1 = 6-11,18-23, siblings n/n+12;
// CPUs 5, 17, 18 offline. System pool {0,12} (core 0), so the user pool is
// 1-4,6-11,13-16,19-23.
const CpuSet kSystem{0, 12};
CpuSet Cpus(const char* list) { return CpuSet::Parse(list).value(); }

struct PodArgs {
  std::string uid;
  std::string ns = "default";
  std::vector<std::string> containers{"app"};
  std::optional<std::string> allocation;
  std::string created = "2026-01-01T00:00:00Z";
  std::string cpu_policy;
  std::string cpu = "2";  // each container's request and limit
};

// Pods as listed, with metadata.uid and creationTimestamp as MakePod wrote them (kept in the
// label huygens-test/uid and the annotation huygens-test/created).
std::vector<json> AsReported(std::vector<json> pods) {
  for (json& pod : pods) {
    json& meta = pod["metadata"];
    meta["uid"] = meta["labels"]["huygens-test/uid"];
    meta["creationTimestamp"] = meta["annotations"]["huygens-test/created"];
  }
  return pods;
}

json MakePod(const PodArgs& a, const std::string& node = "n1") {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", a.uid + "-pod"},
                {"namespace", a.ns},
                {"uid", a.uid},
                {"labels", {{"huygens-test/uid", a.uid}}},
                {"annotations", {{"huygens-test/created", a.created}}}}},
              {"spec", {{"nodeName", node}, {"containers", json::array()}}},
              {"status", {{"phase", "Running"}}}};
  for (const std::string& c : a.containers) {
    pod["spec"]["containers"].push_back(
        {{"name", c}, {"resources", {{"requests", {{"cpu", a.cpu}, {"memory", "1Gi"}}},
                                     {"limits", {{"cpu", a.cpu}, {"memory", "1Gi"}}}}}});
  }
  if (a.allocation) pod["metadata"]["annotations"][kAllocationAnnotation] = *a.allocation;
  if (!a.cpu_policy.empty()) pod["metadata"]["annotations"]["huygens.io/cpu-policy"] = a.cpu_policy;
  return pod;
}

std::string Allocation(const std::string& cpus, const std::string& mems = "0",
                       const std::string& container = "app") {
  return json{{"version", 1},
              {"node", "n1"},
              {"numaNodes", json::array({0})},
              {"containers", json::array({{{"name", container}, {"cpuset", cpus}, {"mems", mems}}})}}
      .dump();
}

class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    topology_ = std::make_shared<const CpuTopology>(huygens::testing::DualSocketHTWithOffline());
    runtime_ = std::make_unique<FakeRuntime>(topology_->OnlineCpus(), CpuSet{0, 1});
    auto server = kube::testing::FakeApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = kube::testing::ClientFor(*server_, &clock_);
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    reconciler_ = NewReconciler();
  }

  std::unique_ptr<Reconciler> NewReconciler() {
    auto r = Reconciler::Create({.node_name = "n1",
                                 .topology = topology_,
                                 .system_cpus = kSystem,
                                 .system_namespaces = {"kube-system", "monitoring"},
                                 .cpu_policy_none_namespaces = {"batch"},
                                 .checkpoint_path = (dir_ / "agent.json").string()},
                                runtime_.get(), client_.get(), &clock_);
    EXPECT_TRUE(r.ok()) << r.status();
    return std::move(*r);
  }

  // Creates the pod in the API and returns its app container(s) in the runtime.
  cri::ContainerInfo AddPod(const PodArgs& a) {
    EXPECT_TRUE(server_->Create("pods", MakePod(a)).ok());
    cri::ContainerInfo first;
    for (const std::string& c : a.containers) {
      auto info = runtime_->AddPodContainer(a.uid, a.ns, a.uid + "-pod", c);
      if (first.id.empty()) first = info;
    }
    return first;
  }

  // The fake API server assigns uid and creationTimestamp itself; the tests give each pod the
  // uid and creation time of PodArgs, as the API would report them.
  ReconcileReport Pass(std::optional<KubeletCpuCheckpoint> kubelet = std::nullopt) {
    return reconciler_->Reconcile({.pods = AsReported(server_->List("pods")), .kubelet = std::move(kubelet)});
  }

  // The huygens.io/allocation-status of a pod, parsed.
  json StatusOf(const std::string& uid, const std::string& ns = "default") {
    auto pod = server_->Get("pods", ns, uid + "-pod");
    if (!pod) return json();
    const json& annotations = (*pod)["metadata"]["annotations"];
    if (!annotations.contains(kAllocationStatusAnnotation)) return json();
    return json::parse(annotations[kAllocationStatusAnnotation].get<std::string>());
  }

  CpuSet CpusOf(const cri::ContainerInfo& c) { return runtime_->CpusetOf(c.id)->cpus; }
  CpuSet MemsOf(const cri::ContainerInfo& c) { return runtime_->CpusetOf(c.id)->mems; }

  std::shared_ptr<const CpuTopology> topology_;
  std::unique_ptr<FakeRuntime> runtime_;
  huygens::testing::FakeClock clock_;
  std::unique_ptr<kube::testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::filesystem::path dir_;
  std::unique_ptr<Reconciler> reconciler_;
};

const CpuSet kUserPool = Cpus("1-4,6-11,13-16,19-23");

TEST_F(ReconcilerTest, EachContainerGetsItsPoolAndTheExclusivePodIsApplied) {
  auto app = AddPod({.uid = "p1", .allocation = Allocation("1-2,13-14"), .cpu = "4"});
  auto web = AddPod({.uid = "web", .containers = {"nginx"}});
  auto proxy = AddPod({.uid = "proxy", .ns = "kube-system", .containers = {"kube-proxy"}});
  auto exporter = AddPod({.uid = "exp", .ns = "monitoring", .containers = {"node-exporter"}});
  auto free = AddPod({.uid = "free", .containers = {"batch"}, .cpu_policy = "none"});
  auto opted_out = AddPod({.uid = "opted-out", .ns = "batch", .containers = {"batch"}, .cpu_policy = "none"});

  ReconcileReport r = Pass();
  EXPECT_EQ(CpusOf(app), Cpus("1-2,13-14"));
  EXPECT_EQ(MemsOf(app), CpuSet{0});
  EXPECT_EQ(CpusOf(web), kUserPool.Difference(Cpus("1-2,13-14")));
  EXPECT_EQ(MemsOf(web), (CpuSet{0, 1}));
  EXPECT_EQ(CpusOf(proxy), kSystem);
  EXPECT_EQ(CpusOf(exporter), kSystem);
  EXPECT_EQ(CpusOf(free), CpusOf(web)) << "cpu-policy none outside cpuPolicyNoneNamespaces runs shared";
  EXPECT_EQ(CpusOf(opted_out), topology_->OnlineCpus()) << "cpu-policy none is honoured in namespace batch";
  EXPECT_EQ(r.containers_applied, 5);
  EXPECT_EQ(r.exclusive, Cpus("1-2,13-14"));
  EXPECT_EQ(StatusOf("p1")["state"], "applied");
  EXPECT_EQ(StatusOf("p1")["observed"]["containers"]["app"], "1-2,13-14");
  EXPECT_TRUE(StatusOf("web").is_null()) << "pods without an allocation get no status";
}

TEST_F(ReconcilerTest, ASecondPassWithNothingNewWritesNothing) {
  AddPod({.uid = "p1", .allocation = Allocation("3-4")});
  AddPod({.uid = "web", .containers = {"nginx"}});
  ASSERT_EQ(Pass().status_patches, 1);
  runtime_->ClearUpdates();
  const int patches = server_->RequestCount("patch", "pods");
  ReconcileReport r = Pass();
  EXPECT_EQ(r.containers_applied, 0);
  EXPECT_EQ(r.status_patches, 0);
  EXPECT_TRUE(runtime_->Updates().empty());
  EXPECT_EQ(server_->RequestCount("patch", "pods"), patches);
}

TEST_F(ReconcilerTest, ARestartedContainerIsSetAgain) {
  auto app = AddPod({.uid = "p1", .allocation = Allocation("3-4")});
  Pass();
  auto restarted = runtime_->RestartContainer(app.id);
  ASSERT_TRUE(restarted.ok());
  ASSERT_EQ(CpusOf(*restarted), topology_->OnlineCpus());
  ReconcileReport r = Pass();
  EXPECT_EQ(CpusOf(*restarted), Cpus("3-4"));
  EXPECT_EQ(r.restarts_reapplied, 1);
  EXPECT_EQ(r.drift_corrections, 0);
  EXPECT_EQ(StatusOf("p1")["state"], "applied");
}

TEST_F(ReconcilerTest, DriftIsCorrected) {
  auto app = AddPod({.uid = "p1", .allocation = Allocation("3-4")});
  auto web = AddPod({.uid = "web", .containers = {"nginx"}});
  Pass();
  ASSERT_TRUE(runtime_->SetCpusetBehindTheAgentsBack(app.id, Cpus("1-4"), CpuSet{0, 1}));
  ASSERT_TRUE(runtime_->SetCpusetBehindTheAgentsBack(web.id, Cpus("3-4"), CpuSet{0, 1}));
  ReconcileReport r = Pass();
  EXPECT_EQ(r.drift_corrections, 2);
  EXPECT_EQ(CpusOf(app), Cpus("3-4"));
  EXPECT_EQ(MemsOf(app), CpuSet{0});
  EXPECT_EQ(CpusOf(web), kUserPool.Difference(Cpus("3-4")));
}

TEST_F(ReconcilerTest, ACpuHeldByAnotherPodIsAConflictAndItsPodRunsInTheSharedPool) {
  auto first = AddPod({.uid = "a", .allocation = Allocation("3-4"),
                       .created = "2026-01-01T00:00:00Z"});
  auto second = AddPod({.uid = "b", .allocation = Allocation("4,6"),
                        .created = "2026-01-01T00:01:00Z"});
  ReconcileReport r = Pass();
  EXPECT_EQ(r.conflicts, 1);
  EXPECT_EQ(StatusOf("a")["state"], "applied");
  const json b = StatusOf("b");
  EXPECT_EQ(b["state"], "conflict");
  EXPECT_THAT(b["reason"].get<std::string>(), HasSubstr("cpus 4 are held by pod(s) a"));
  EXPECT_EQ(CpusOf(second), kUserPool.Difference(Cpus("3-4")))
      << "the loser runs in the shared pool, never on the winner's CPUs";
  // A conflict is also an event.
  EXPECT_EQ(server_->RequestCount("create", "events"), 1);
}

// What `run` logs through spdlog's default logger at `level`.
std::string LogOf(spdlog::level::level_enum level, const std::function<void()>& run) {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  const spdlog::level::level_enum before = spdlog::get_level();
  spdlog::default_logger()->sinks().push_back(sink);
  spdlog::set_level(level);
  run();
  spdlog::set_level(before);
  spdlog::default_logger()->sinks().pop_back();
  return log.str();
}

TEST_F(ReconcilerTest, DebugLogsNameThePodTheContainerTheCpusetsTheRuntimeAndTheRefusal) {
  auto app = AddPod({.uid = "p1", .allocation = Allocation("3-4"), .created = "2026-01-01T00:00:00Z"});
  AddPod({.uid = "b", .allocation = Allocation("4,6"), .created = "2026-01-01T00:01:00Z"});
  const std::string log = LogOf(spdlog::level::debug, [&] { Pass(); });
  EXPECT_THAT(log, HasSubstr("pod default/p1-pod: allocation admitted: NUMA node 0, cpuset 3-4 (app 3-4)\n"));
  EXPECT_THAT(log, HasSubstr("pod default/b-pod: allocation not admitted (conflict): "));
  EXPECT_THAT(log, HasSubstr("pod default/p1-pod container app (" + app.id.substr(0, 12) + "): setting cpus " +
                                 topology_->OnlineCpus().ToString() + " -> 3-4, mems 0-1 -> 0 through runtime fake\n"));
  // A second pass finds it right.
  const std::string again = LogOf(spdlog::level::debug, [&] { Pass(); });
  EXPECT_THAT(again, HasSubstr("pod default/p1-pod container app (" + app.id.substr(0, 12) +
                                   "): has cpus 3-4 mems 0 as wanted; nothing to write\n"));
}

TEST_F(ReconcilerTest, AtInfoLevelTheApplyStepsAreNotLogged) {
  AddPod({.uid = "p1", .allocation = Allocation("3-4")});
  const std::string log = LogOf(spdlog::level::info, [&] { Pass(); });
  EXPECT_THAT(log, HasSubstr("pod default/p1-pod container app"));  // the info line of the change
  EXPECT_THAT(log, ::testing::Not(HasSubstr("admitted")));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("setting cpus")));
}

TEST_F(ReconcilerTest, AConflictReportedAgainCountsInTheFirstEventsSeries) {
  AddPod({.uid = "a", .allocation = Allocation("3-4"), .created = "2026-01-01T00:00:00Z"});
  AddPod({.uid = "b", .allocation = Allocation("4,6"), .created = "2026-01-01T00:01:00Z"});
  Pass();
  // Someone clears b's status: the next pass reports the same conflict, and records it again.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(server_->MergePatch("pods", "default", "b-pod",
                                    {{"metadata", {{"annotations", {{kAllocationStatusAnnotation, nullptr}}}}}})
                    .ok());
    clock_.Advance(std::chrono::minutes(1));
    Pass();
  }
  auto events = server_->List("events.events.k8s.io", "default");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["reason"], "CpusetConflict");
  EXPECT_EQ(events[0]["regarding"]["name"], "b-pod");
  EXPECT_EQ(events[0]["series"]["count"], 3);
}

TEST_F(ReconcilerTest, OfflineAndSystemCpusAreConflicts) {
  AddPod({.uid = "off", .allocation = Allocation("5-6")});
  AddPod({.uid = "sys", .allocation = Allocation("0-1")});
  Pass();
  EXPECT_EQ(StatusOf("off")["state"], "conflict");
  EXPECT_THAT(StatusOf("off")["reason"].get<std::string>(), HasSubstr("cpus 5 are offline"));
  EXPECT_EQ(StatusOf("sys")["state"], "conflict");
  EXPECT_THAT(StatusOf("sys")["reason"].get<std::string>(), HasSubstr("system pool"));
}

TEST_F(ReconcilerTest, AMalformedAnnotationFailsWithTheParsersReason) {
  auto bad = AddPod({.uid = "bad", .allocation = std::string(R"({"version":1,"node":"n1","numaNodes":[0],)"
                                                             R"("containers":[{"name":"app",)"
                                                             R"("cpuset":"4-","mems":"0"}]})")});
  auto wrong_node = AddPod({.uid = "elsewhere",
                            .allocation = json{{"version", 1},
                                               {"node", "n2"},
                                               {"numaNodes", json::array()},
                                               {"containers", json::array()}}
                                              .dump()});
  ReconcileReport r = Pass();
  EXPECT_EQ(r.failed, 2);
  EXPECT_EQ(StatusOf("bad")["state"], "failed");
  EXPECT_THAT(StatusOf("bad")["reason"].get<std::string>(),
              HasSubstr("huygens.io/allocation: containers[0].cpuset"));
  EXPECT_THAT(StatusOf("elsewhere")["reason"].get<std::string>(), HasSubstr("not this node"));
  EXPECT_EQ(CpusOf(bad), kUserPool) << "an allocation that does not decode pins nothing: shared pool";
  EXPECT_EQ(CpusOf(wrong_node), kUserPool);
}

// An allocation the pod's request does not give (a user's, or a bug's) is refused: more CPUs
// than a Guaranteed container asks for, or any exclusive CPU for a Burstable one. The pod runs
// in the shared pool and its CPUs stay free for the pods that own them.
TEST_F(ReconcilerTest, AnAllocationBeyondThePodsRequestFailsAndThePodRunsShared) {
  auto grown = AddPod({.uid = "grown", .allocation = Allocation("1-4")});  // asks 2
  json burstable = MakePod({.uid = "burstable", .allocation = Allocation("6-7")});
  burstable["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "4";  // requests 2: Burstable
  ASSERT_TRUE(server_->Create("pods", burstable).ok());
  auto burstable_app = runtime_->AddPodContainer("burstable", "default", "burstable-pod", "app");
  ReconcileReport r = Pass();
  EXPECT_EQ(r.failed, 2);
  EXPECT_EQ(StatusOf("grown")["state"], "failed");
  EXPECT_THAT(StatusOf("grown")["reason"].get<std::string>(),
              HasSubstr("container \"app\": exclusive cpuset 1-4 has 4 CPUs, but the container's request gives it 2"));
  EXPECT_THAT(StatusOf("burstable")["reason"].get<std::string>(), HasSubstr("gives it 0 exclusive CPUs"));
  EXPECT_EQ(r.exclusive, CpuSet());
  EXPECT_EQ(CpusOf(grown), kUserPool);
  EXPECT_EQ(CpusOf(burstable_app), kUserPool);
}

TEST_F(ReconcilerTest, AContainerNotRunningYetKeepsThePodPendingUntilItRuns) {
  ASSERT_TRUE(server_->Create("pods", MakePod({.uid = "p1", .containers = {"app", "sidecar"},
                                               .allocation = Allocation("3-4")}))
                  .ok());
  auto sidecar = runtime_->AddPodContainer("p1", "default", "p1-pod", "sidecar");
  Pass();
  EXPECT_EQ(StatusOf("p1")["state"], "pending");
  EXPECT_THAT(StatusOf("p1")["reason"].get<std::string>(), HasSubstr("app"));
  EXPECT_EQ(CpusOf(sidecar), kUserPool.Difference(Cpus("3-4")))
      << "a container outside the allocation runs in the shared pool";
  auto app = runtime_->AddPodContainer("p1", "default", "p1-pod", "app");
  Pass();
  EXPECT_EQ(StatusOf("p1")["state"], "applied");
  EXPECT_EQ(CpusOf(app), Cpus("3-4"));
}

TEST_F(ReconcilerTest, ARuntimeThatIsDownFailsThePodsAndTheAgentKeepsGoing) {
  auto app = AddPod({.uid = "p1", .allocation = Allocation("3-4")});
  runtime_->SetDown(true);
  ReconcileReport r = Pass();
  EXPECT_FALSE(r.runtime_ok);
  EXPECT_EQ(StatusOf("p1")["state"], "failed");
  EXPECT_THAT(StatusOf("p1")["reason"].get<std::string>(), HasSubstr("runtime fake"));
  EXPECT_EQ(r.exclusive, Cpus("3-4")) << "the CPUs stay reserved for the pod";
  runtime_->SetDown(false);
  Pass();
  EXPECT_EQ(StatusOf("p1")["state"], "applied");
  EXPECT_EQ(CpusOf(app), Cpus("3-4"));
}

TEST_F(ReconcilerTest, AnEbusyWriteFailsThatPodOnly) {
  auto app = AddPod({.uid = "p1", .allocation = Allocation("3-4")});
  auto other = AddPod({.uid = "p2", .allocation = Allocation("6-7", "1")});
  runtime_->FailUpdates(app.id, "write /sys/fs/cgroup/cpuset/kubepods/x/cpuset.cpus: "
                                "Device or resource busy (EBUSY)");
  ReconcileReport r = Pass();
  EXPECT_EQ(r.update_failures, 1);
  EXPECT_EQ(StatusOf("p1")["state"], "failed");
  EXPECT_THAT(StatusOf("p1")["reason"].get<std::string>(), HasSubstr("EBUSY"));
  EXPECT_THAT(StatusOf("p1")["reason"].get<std::string>(), HasSubstr("\"app\""));
  EXPECT_EQ(CpusOf(app), topology_->OnlineCpus());
  EXPECT_EQ(StatusOf("p2")["state"], "applied");
  EXPECT_EQ(CpusOf(other), Cpus("6-7"));
  EXPECT_EQ(server_->RequestCount("create", "events"), 1);
}

TEST_F(ReconcilerTest, AnAgentRestartMovesNoCpuThatIsRight) {
  AddPod({.uid = "p1", .allocation = Allocation("3-4")});
  AddPod({.uid = "p2", .allocation = Allocation("6-7", "1")});
  AddPod({.uid = "web", .containers = {"nginx"}});
  AddPod({.uid = "proxy", .ns = "kube-system", .containers = {"kube-proxy"}});
  Pass();
  runtime_->ClearUpdates();
  const int patches = server_->RequestCount("patch", "pods");

  reconciler_ = NewReconciler();  // a new agent process: nothing in memory but the checkpoint
  ReconcileReport r = Pass();
  EXPECT_TRUE(runtime_->Updates().empty());
  EXPECT_EQ(r.status_patches, 0);
  EXPECT_EQ(server_->RequestCount("patch", "pods"), patches);
}

TEST_F(ReconcilerTest, AfterAnAgentRestartTheAppliedPodKeepsItsCpusAgainstAnOlderClaim) {
  auto applied = AddPod({.uid = "p1", .allocation = Allocation("3-4"),
                         .created = "2026-01-01T00:05:00Z"});
  Pass();
  // While the agent is down, a pod appears whose annotation claims CPU 4 and that looks older.
  auto older = AddPod({.uid = "p0", .allocation = Allocation("4,6"),
                       .created = "2026-01-01T00:00:00Z"});
  reconciler_ = NewReconciler();
  Pass();
  EXPECT_EQ(StatusOf("p1")["state"], "applied");
  EXPECT_EQ(CpusOf(applied), Cpus("3-4"));
  EXPECT_EQ(StatusOf("p0")["state"], "conflict");
  EXPECT_EQ(CpusOf(older), kUserPool.Difference(Cpus("3-4")));
}

TEST_F(ReconcilerTest, WithoutACheckpointTheOlderPodWins) {
  // The same cluster as above seen by a fresh agent with no checkpoint: creation order decides.
  AddPod({.uid = "p1", .allocation = Allocation("3-4"), .created = "2026-01-01T00:05:00Z"});
  AddPod({.uid = "p0", .allocation = Allocation("4,6"), .created = "2026-01-01T00:00:00Z"});
  Pass();
  EXPECT_EQ(StatusOf("p0")["state"], "applied");
  EXPECT_EQ(StatusOf("p1")["state"], "conflict");
}

TEST_F(ReconcilerTest, WhenExclusivePodsHoldEveryUserCpuSharedContainersRunOnTheSystemPool) {
  auto big = AddPod({.uid = "big", .allocation = Allocation(kUserPool.ToString(), "0-1"),
                     .cpu = std::to_string(kUserPool.Size())});
  auto web = AddPod({.uid = "web", .containers = {"nginx"}});
  Pass();
  EXPECT_EQ(StatusOf("big")["state"], "applied");
  EXPECT_EQ(CpusOf(big), kUserPool);
  EXPECT_EQ(CpusOf(web), kSystem);
}

TEST_F(ReconcilerTest, ADeletedPodReleasesItsCpusToTheSharedPool) {
  AddPod({.uid = "p1", .allocation = Allocation("3-4")});
  auto web = AddPod({.uid = "web", .containers = {"nginx"}});
  Pass();
  ASSERT_EQ(CpusOf(web), kUserPool.Difference(Cpus("3-4")));
  // The pod is deleted (gone from the API; its containers are gone from the runtime).
  ASSERT_TRUE(client_->Delete(kube::Pods(), "default", "p1-pod").ok());
  const std::vector<cri::ContainerInfo> containers = runtime_->ListContainers().value();
  for (const auto& c : containers) {
    if (c.pod_uid == "p1") runtime_->RemoveContainer(c.id);
  }
  ReconcileReport r = Pass();
  EXPECT_EQ(r.exclusive, CpuSet());
  EXPECT_EQ(CpusOf(web), kUserPool);
}

std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(HUYGENS_FIXTURES) + "/kubelet/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReconcilerKubelet, KubeletBoundCpusArePublishedOnThePodAndKeptFromOthers) {
  // cpu_manager_state.blog.16cpu.json: 16 CPUs, siblings n/n+8; pod 088fe178-... holds 1,9
  // and pod 681eca58-... holds 2-3,10-11 (container qos-demo-ctr each).
  auto cp = ParseKubeletCpuCheckpoint(ReadFixture("cpu_manager_state.blog.16cpu.json"));
  ASSERT_TRUE(cp.ok()) << cp.status();
  auto topology = std::make_shared<const CpuTopology>(
      huygens::testing::BuildMachine({.cores_per_numa = 8}));
  FakeRuntime runtime(topology->OnlineCpus(), CpuSet{0});
  huygens::testing::FakeClock clock;
  auto server = kube::testing::FakeApiServer::Start();
  ASSERT_TRUE(server.ok());
  auto client = kube::testing::ClientFor(**server, &clock);
  auto reconciler = Reconciler::Create(
      {.node_name = "n1", .topology = topology, .system_cpus = CpuSet{0}}, &runtime,
      client.get(), &clock);
  ASSERT_TRUE(reconciler.ok()) << reconciler.status();

  const std::string kubelet_uid = "681eca58-a216-4ec4-a57b-941cad3c4e0f";
  ASSERT_TRUE((*server)->Create("pods", MakePod({.uid = kubelet_uid, .containers = {"qos-demo-ctr"}})).ok());
  auto pinned = runtime.AddPodContainer(kubelet_uid, "default", kubelet_uid + "-pod", "qos-demo-ctr");
  ASSERT_TRUE(runtime.SetCpusetBehindTheAgentsBack(pinned.id, Cpus("2-3,10-11"), CpuSet{0}));
  // A Huygens pod that wants CPU 9, which kubelet gave to the other pod.
  ASSERT_TRUE((*server)->Create("pods", MakePod({.uid = "h", .allocation = Allocation("9,12")})).ok());
  auto web_pod = MakePod({.uid = "web", .containers = {"nginx"}});
  ASSERT_TRUE((*server)->Create("pods", web_pod).ok());
  auto web = runtime.AddPodContainer("web", "default", "web-pod", "nginx");

  ReconcileReport r =
      (*reconciler)->Reconcile({.pods = AsReported((*server)->List("pods")), .kubelet = *cp});
  EXPECT_EQ(r.exclusive, Cpus("1-3,9-11"));
  EXPECT_EQ(runtime.CpusetOf(pinned.id)->cpus, Cpus("2-3,10-11")) << "kubelet's pod is left alone";
  EXPECT_EQ(runtime.CpusetOf(web.id)->cpus, Cpus("4-8,12-15"));
  const json kubelet_pod = (*server)->Get("pods", "default", kubelet_uid + "-pod").value();
  const json status = json::parse(
      kubelet_pod["metadata"]["annotations"][kAllocationStatusAnnotation].get<std::string>());
  EXPECT_EQ(status["observed"]["owner"], "kubelet");
  EXPECT_EQ(status["observed"]["containers"]["qos-demo-ctr"], "2-3,10-11");
  const json h = (*server)->Get("pods", "default", "h-pod").value();
  EXPECT_THAT(h["metadata"]["annotations"][kAllocationStatusAnnotation].get<std::string>(),
              HasSubstr("conflict"));
}

}  // namespace
}  // namespace huygens::agent

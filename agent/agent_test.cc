#include "agent/agent.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/pod.h"
#include "agent/testing/fake_pod_resources.h"
#include "agent/testing/fake_tcp_reader.h"
#include "base/version.h"
#include "cri/testing/fake_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/informer.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/tcp_proxy.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/test_client.h"
#include "topology/nrt.h"
#include "topology/testing/machines.h"

namespace huygens::agent {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// DualSocketHT: 24 CPUs, NUMA 0 = 0-5,12-17, NUMA 1 = 6-11,18-23. System pool {0,12}.
class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    topology_ = std::make_shared<const CpuTopology>(huygens::testing::DualSocketHT());
    runtime_ = std::make_unique<cri::testing::FakeRuntime>(topology_->OnlineCpus(), CpuSet{0, 1});
    auto server = kube::testing::FakeApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = kube::testing::ClientFor(*server_, &clock_);
    // The agent's Node, the owner of its NodeResourceTopology.
    ASSERT_TRUE(server_->Create("nodes", {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}}).ok());
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("agent-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    config_.node_name = "n1";
    config_.kubelet_checkpoint_path = (dir_ / "cpu_manager_state").string();
    config_.checkpoint_path = (dir_ / "agent.json").string();
  }

  // An agent over `client` (default: client_).
  std::unique_ptr<Agent> NewAgent(kube::Client* client = nullptr,
                                  KubeletMemorySettings memory = {}) {
    auto agent = Agent::Create(config_, CpuSet{0, 12},
                               {.client = client != nullptr ? client : client_.get(),
                                .runtime = runtime_.get(),
                                .clock = &clock_,
                                .topology = topology_,
                                .metrics = &metrics_,
                                .traffic_reader = &traffic_reader_},
                               memory);
    EXPECT_TRUE(agent.ok()) << agent.status();
    return agent.ok() ? std::move(*agent) : nullptr;
  }

  cri::ContainerInfo AddPod(const std::string& name, const std::string& node,
                            std::optional<std::string> allocation) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", name + "-uid"}}},
                {"spec", {{"nodeName", node}, {"containers", {{{"name", "app"}}}}}}};
    if (allocation) {
      pod["metadata"]["annotations"][kAllocationAnnotation] = *allocation;
      // Guaranteed with as many whole CPUs as the allocation gives the container.
      const json a = json::parse(*allocation);
      const json cpus = {{"cpu", std::to_string(CpuSet::Parse(a["containers"][0].value("cpuset", "")).value().Size())},
                         {"memory", "1Gi"}};
      pod["spec"]["containers"][0]["resources"] = {{"requests", cpus}, {"limits", cpus}};
    }
    // The fake API server assigns the uid; the runtime's labels carry the stored one.
    auto stored = server_->Create("pods", pod);
    EXPECT_TRUE(stored.ok());
    const std::string uid = stored.ok() ? (*stored)["metadata"]["uid"].get<std::string>() : "";
    return runtime_->AddPodContainer(uid, "default", name, "app");
  }

  std::string StatusOf(const std::string& name) {
    auto pod = server_->Get("pods", "default", name);
    if (!pod || !(*pod)["metadata"].contains("annotations") ||
        !(*pod)["metadata"]["annotations"].contains(kAllocationStatusAnnotation)) {
      return "";
    }
    return json::parse((*pod)["metadata"]["annotations"][kAllocationStatusAnnotation]
                           .get<std::string>())["state"];
  }

  static std::string Allocation(const std::string& cpus) {
    return json{{"version", 1}, {"node", "n1"}, {"numaNodes", {0}},
                {"containers", {{{"name", "app"}, {"cpuset", cpus}, {"mems", "0"}}}}}
        .dump();
  }

  std::shared_ptr<const CpuTopology> topology_;
  std::unique_ptr<cri::testing::FakeRuntime> runtime_;
  huygens::testing::FakeClock clock_;
  std::unique_ptr<kube::testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  serving::MetricsRegistry metrics_;
  testing::FakeTcpReader traffic_reader_;
  std::filesystem::path dir_;
  AgentConfig config_;
};

TEST_F(AgentTest, OnePassAppliesThePodsOfThisNodeOnlyAndPublishesTheNrt) {
  auto mine = AddPod("mine", "n1", Allocation("1-2"));
  auto theirs = AddPod("theirs", "n2", Allocation("3-4"));
  auto agent = NewAgent();
  auto report = agent->RunOnce();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(runtime_->CpusetOf(mine.id)->cpus, (CpuSet{1, 2}));
  // Not this node's pod: its allocation is not applied; a container of a pod the agent does not
  // know runs in the shared pool.
  EXPECT_EQ(runtime_->CpusetOf(theirs.id)->cpus, topology_->OnlineCpus().Difference(CpuSet{0, 1, 2, 12}));
  EXPECT_EQ(StatusOf("mine"), "applied");
  EXPECT_EQ(StatusOf("theirs"), "");
  auto nrt = ReadNrt(*server_->Get("noderesourcetopologies.topology.node.k8s.io", "", "n1"));
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  EXPECT_EQ(PoolsFromNrt(*nrt)->exclusive, (CpuSet{1, 2}));
  EXPECT_TRUE(agent->Healthy().ok());
  EXPECT_TRUE(agent->Ready().ok());
}

TEST_F(AgentTest, MetricsCountAppliedContainersConflictsAndLatency) {
  AddPod("a", "n1", Allocation("1-2"));
  AddPod("b", "n1", Allocation("2-3"));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->RunOnce().ok());
  const std::string text = metrics_.Expose();
  // a's cpuset and b's: the conflict's loser runs in the shared pool.
  EXPECT_THAT(text, HasSubstr("huygens_agent_containers_applied_total 2\n"));
  EXPECT_THAT(text, HasSubstr("huygens_agent_conflicts_total 1\n"));
  EXPECT_THAT(text, HasSubstr("huygens_agent_pods{state=\"conflict\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("huygens_agent_pods{state=\"applied\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("huygens_agent_apply_latency_seconds_count 2\n"));
  EXPECT_THAT(text, HasSubstr("huygens_agent_nrt_writes_total 1\n"));
  EXPECT_THAT(text, HasSubstr("huygens_agent_runtime_up 1\n"));
}

TEST_F(AgentTest, MetricsCarryTheBuildInfoWithTheVersion) {
  auto agent = NewAgent();
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_THAT(metrics_.Expose(),
              HasSubstr("huygens_build_info{version=\"" + std::string(Version()) + "\"} 1\n"));
}

TEST_F(AgentTest, ARuntimeThatIsDownMakesTheAgentUnreadyButHealthy) {
  AddPod("a", "n1", Allocation("1-2"));
  auto agent = NewAgent();
  EXPECT_FALSE(agent->Ready().ok()) << "not ready before the first pass";
  runtime_->SetDown(true);
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_TRUE(agent->Healthy().ok());
  EXPECT_THAT(std::string(agent->Ready().message()), HasSubstr("runtime"));
  EXPECT_THAT(metrics_.Expose(), HasSubstr("huygens_agent_runtime_up 0\n"));
  clock_.Advance(std::chrono::minutes(2));
  EXPECT_FALSE(agent->Healthy().ok()) << "no pass for three resync periods";
}

TEST_F(AgentTest, TheZonesListTheDevicesKubeletReportsWithTheFreeOnesAvailable) {
  const std::string socket = (dir_ / "kubelet.sock").string();
  agent::testing::FakePodResources kubelet(socket);
  ASSERT_NE(kubelet.server(), nullptr);
  kubelet.AddAllocatable("nvidia.com/gpu", {"g0", "g1"}, 1);
  kubelet.AddInUse("nvidia.com/gpu", {"g0"}, 1);
  config_.pod_resources_socket = socket;
  auto agent = NewAgent();
  ASSERT_TRUE(agent->RunOnce().ok());
  auto nrt = ReadNrt(*server_->Get("noderesourcetopologies.topology.node.k8s.io", "", "n1"));
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  ASSERT_EQ(nrt->zones.size(), 2u);
  EXPECT_EQ(nrt->zones[0].Resource("nvidia.com/gpu"), nullptr);
  const NrtResource* gpu = nrt->zones[1].Resource("nvidia.com/gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(*gpu, (NrtResource{"nvidia.com/gpu", "2", "2", "1"}));
}

TEST_F(AgentTest, CapacityFactorsFromAFileArePublishedAsZoneAttributes) {
  const std::string path = (dir_ / "capacity.json").string();
  std::ofstream(path) << R"({"version":1,"numaNodes":{"1":0.25,"7":0.5}})";
  config_.capacity.file = path;
  auto agent = NewAgent();
  auto report = agent->RunOnce();
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->warnings, ::testing::Contains(HasSubstr("NUMA node 7 does not exist")));
  auto nrt = ReadNrt(*server_->Get("noderesourcetopologies.topology.node.k8s.io", "", "n1"));
  ASSERT_TRUE(nrt.ok());
  ASSERT_EQ(nrt->zones.size(), 2u);
  EXPECT_TRUE(nrt->zones[0].attributes.empty());
  EXPECT_EQ(nrt->zones[1].attributes, (std::vector<NrtNameValue>{{kCapacityFactorAttribute, "0.25"}}));

  // A broken source keeps the last good factors.
  std::ofstream(path) << "{broken";
  clock_.Advance(std::chrono::minutes(1));
  report = agent->RunOnce();
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->warnings, ::testing::Contains(HasSubstr("keeping the last good ones")));
  nrt = ReadNrt(*server_->Get("noderesourcetopologies.topology.node.k8s.io", "", "n1"));
  EXPECT_EQ(nrt->zones[1].attributes, (std::vector<NrtNameValue>{{kCapacityFactorAttribute, "0.25"}}));
}

TEST_F(AgentTest, TheKubeletPodSourceReadsAPodList) {
  // The fake API server's pod collection answers with a PodList, as kubelet's /pods does.
  config_.pod_source = PodSourceKind::kKubelet;
  config_.kubelet_pods_url = server_->url() + "/api/v1/pods";
  auto mine = AddPod("mine", "n1", Allocation("4"));
  auto agent = NewAgent();
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_EQ(runtime_->CpusetOf(mine.id)->cpus, CpuSet{4});
}

TEST_F(AgentTest, APodListThatCannotBeReadIsAnErrorAndChangesNothing) {
  auto mine = AddPod("mine", "n1", Allocation("4"));
  auto agent = NewAgent();
  server_->FailNext("list", "pods", 100, 403);
  auto report = agent->RunOnce();
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(runtime_->CpusetOf(mine.id)->cpus, topology_->OnlineCpus());
  EXPECT_THAT(metrics_.Expose(), HasSubstr("huygens_agent_errors_total{step=\"pods\"} 1\n"));
}

TEST_F(AgentTest, AKubeletCheckpointWithABadChecksumIsIgnoredWithAWarning) {
  std::ofstream(config_.kubelet_checkpoint_path)
      << R"({"policyName":"static","defaultCpuSet":"0,3-23","entries":{"k-uid":{"c":"1-2"}},"checksum":1})";
  auto agent = NewAgent();
  auto report = agent->RunOnce();
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->warnings, ::testing::Contains(HasSubstr("checksum mismatch")));
  EXPECT_EQ(report->exclusive, CpuSet());
}

// DualSocketHT has 64 GiB per NUMA node and no hugepages.
TEST_F(AgentTest, MemoryZonesFollowKubeletsMemoryManagerAndABadCheckpointLosesNothing) {
  constexpr uint64_t kGi = 1ull << 30;
  const std::string fixtures = std::string(HUYGENS_FIXTURES) + "/kubelet/";
  config_.kubelet_memory_checkpoint_path = (dir_ / "memory_manager_state").string();
  std::filesystem::copy_file(fixtures + "memory_manager_state.k8s-unittest.static.json",
                             config_.kubelet_memory_checkpoint_path);
  // NUMA node 7 does not exist: that reservation is left out (logged), the agent runs.
  auto agent = NewAgent(nullptr, {.policy = KubeletMemoryPolicy::kStatic,
                                  .reserved = {{0, {{"memory", 2 * kGi}}},
                                               {7, {{"memory", kGi}}}}});
  ASSERT_NE(agent, nullptr);
  const auto memory_of = [&](int zone) {
    auto nrt = ReadNrt(*server_->Get("noderesourcetopologies.topology.node.k8s.io", "", "n1"));
    EXPECT_TRUE(nrt.ok()) << nrt.status();
    const NrtResource* r = nrt.ok() ? nrt->zones.at(zone).Resource("memory") : nullptr;
    return r != nullptr ? *r : NrtResource{};
  };
  ASSERT_TRUE(agent->RunOnce().ok());
  // The checkpoint's NUMA node 0 has 1024 bytes free: that is what the zone offers.
  EXPECT_EQ(memory_of(0), (NrtResource{"memory", std::to_string(64 * kGi),
                                       std::to_string(62 * kGi), "1024"}));
  EXPECT_EQ(memory_of(1), (NrtResource{"memory", std::to_string(64 * kGi),
                                       std::to_string(64 * kGi), std::to_string(64 * kGi)}));
  // A checkpoint with a bad checksum: nothing is taken from it, available = allocatable.
  std::filesystem::copy_file(fixtures + "memory_manager_state.talos-unittest.static-64GiB.json",
                             config_.kubelet_memory_checkpoint_path,
                             std::filesystem::copy_options::overwrite_existing);
  clock_.Advance(config_.nrt_min_interval);
  ASSERT_TRUE(agent->RunOnce().ok());
  EXPECT_EQ(memory_of(0), (NrtResource{"memory", std::to_string(64 * kGi),
                                       std::to_string(62 * kGi), std::to_string(62 * kGi)}));
}

TEST_F(AgentTest, UnderNoneTheMemoryOfHuygensPodsIsTakenFromTheirMemsZones) {
  constexpr uint64_t kGi = 1ull << 30;
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "big"}, {"namespace", "default"}, {"uid", "big-uid"}}},
              {"spec",
               {{"nodeName", "n1"},
                {"containers",
                 {{{"name", "app"},
                   {"resources",
                    {{"limits", {{"cpu", "2"}, {"memory", "4Gi"}}},
                     {"requests", {{"cpu", "2"}, {"memory", "4Gi"}}}}}}}}}}};
  pod["metadata"]["annotations"][kAllocationAnnotation] = Allocation("1-2");
  auto stored = server_->Create("pods", pod);
  ASSERT_TRUE(stored.ok());
  runtime_->AddPodContainer((*stored)["metadata"]["uid"].get<std::string>(), "default", "big",
                            "app");
  auto agent = NewAgent(nullptr, {.policy = KubeletMemoryPolicy::kNone, .reserved = {}});
  ASSERT_NE(agent, nullptr);
  ASSERT_TRUE(agent->RunOnce().ok());
  auto nrt = ReadNrt(*server_->Get("noderesourcetopologies.topology.node.k8s.io", "", "n1"));
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  ASSERT_NE(nrt->Attribute(kMemoryManagerPolicyAttribute), nullptr);
  EXPECT_EQ(*nrt->Attribute(kMemoryManagerPolicyAttribute), "None");
  EXPECT_EQ(nrt->zones.at(0).Resource("memory")->available, std::to_string(60 * kGi));
  EXPECT_EQ(nrt->zones.at(1).Resource("memory")->available, std::to_string(64 * kGi));
}

TEST_F(AgentTest, TheLoopReactsToPodEventsAndStops) {
  auto agent = NewAgent();
  std::atomic<bool> stop{false};
  std::thread loop([&] { agent->Run(stop); });
  auto c = AddPod("late", "n1", Allocation("5"));
  // The watch event wakes the loop (the fake clock never reaches the resync period).
  for (int i = 0; i < 100 && StatusOf("late") != "applied"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop = true;
  loop.join();
  EXPECT_EQ(StatusOf("late"), "applied");
  EXPECT_EQ(runtime_->CpusetOf(c.id)->cpus, CpuSet{5});
}

TEST_F(AgentTest, TheLoopSamplesTheTrafficOfLocalPodsAndPublishesItOnTheNrt) {
  config_.traffic.enabled = true;  // opt-in (it needs privileges)
  // Two running pods with pod IPs; web's namespace holds a connection to db.
  std::map<std::string, std::string> netns;  // pod name -> namespace path
  for (const auto& [name, ip] : {std::pair{"web", "10.1.0.1"}, std::pair{"db", "10.1.0.2"}}) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "shop"}}},
                {"spec", {{"nodeName", "n1"}, {"containers", {{{"name", "app"}}}}}},
                {"status", {{"phase", "Running"}, {"podIPs", {{{"ip", ip}}}}}}};
    auto stored = server_->Create("pods", pod);
    ASSERT_TRUE(stored.ok()) << stored.status();
    auto c = runtime_->AddPodContainer((*stored)["metadata"]["uid"].get<std::string>(), "shop",
                                       name, "app");
    netns[name] = "/proc/" + std::to_string(*runtime_->Pid(c)) + "/ns/net";
  }
  const auto conn = [](uint64_t bytes) {
    return std::vector<TcpConnection>{{{*ParseIpAddress("10.1.0.1"), 40000},
                                       {*ParseIpAddress("10.1.0.2"), 5432}, bytes, 0, 1}};
  };
  traffic_reader_.Set(netns["web"], conn(1000));
  traffic_reader_.Set(netns["db"], {});
  auto agent = NewAgent();
  std::atomic<bool> stop{false};
  std::thread loop([&] { agent->Run(stop); });
  for (int i = 0; i < 200 && traffic_reader_.Reads().size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_THAT(traffic_reader_.Reads(), ::testing::UnorderedElementsAre(netns["web"], netns["db"]));
  traffic_reader_.Set(netns["web"], conn(201000));
  clock_.Advance(config_.traffic.sample_interval);
  std::optional<PodTraffic> published;
  for (int i = 0; i < 200 && !published.has_value(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto object = server_->Get("noderesourcetopologies.topology.node.k8s.io", "", "n1");
    if (!object) continue;
    auto nrt = ReadNrt(*object);
    ASSERT_TRUE(nrt.ok()) << nrt.status();
    auto traffic = PodTrafficFromNrt(*nrt);
    ASSERT_TRUE(traffic.ok()) << traffic.status();
    published = *traffic;
  }
  stop = true;
  loop.join();
  ASSERT_TRUE(published.has_value()) << "no huygens.io/pod-traffic on the NRT";
  EXPECT_EQ(published->window_seconds, 10);
  EXPECT_EQ(published->pairs, (std::vector<PodTrafficPair>{{"shop/db", "shop/web", 20000}}));
}

TEST_F(AgentTest, WithTrafficTurnedOffAnEarlierSummaryIsRemoved) {
  // An earlier run published a summary.
  Publisher earlier(client_.get(), &clock_,
                    {.node_name = "n1", .topology = topology_, .system_cpus = CpuSet{0, 12}});
  ASSERT_TRUE(earlier
                  .Publish({.pod_traffic = EncodePodTraffic(
                                {.window_seconds = 30, .pairs = {{"a/x", "a/y", 1}}})})
                  .ok());
  config_.traffic.enabled = false;
  ASSERT_TRUE(NewAgent()->RunOnce().ok());
  const json object = *server_->Get("noderesourcetopologies.topology.node.k8s.io", "", "n1");
  EXPECT_TRUE(object["metadata"]["annotations"].contains(kPoolsAnnotation));
  EXPECT_FALSE(object["metadata"]["annotations"].contains(kPodTrafficAnnotation));
}

TEST_F(AgentTest, AFrozenPodWatchMakesTheRunningAgentUnreadyUntilItReconnects) {
  auto proxy = kube::testing::TcpProxy::Start(server_->port());
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  kube::RestConfig rest = kube::testing::TestRestConfig((*proxy)->url());
  rest.watch_idle_timeout = std::chrono::seconds(1);
  auto client = kube::testing::ClientFor(rest, &clock_);
  config_.resync_period = std::chrono::minutes(10);  // no pass while the clock is moved below
  auto agent = NewAgent(client.get());
  EXPECT_TRUE(agent->PodInformerReady().ok()) << "not watching: a pass lists the pods itself";
  std::atomic<bool> stop{false};
  std::thread loop([&] { agent->Run(stop); });
  auto ready = [&] { return agent->Ready().ok() && agent->PodInformerReady().ok(); };
  for (int i = 0; i < 200 && !ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(ready()) << agent->Ready() << "; " << agent->PodInformerReady();

  (*proxy)->Freeze();
  clock_.Advance(std::chrono::seconds(1) + kube::kStaleMargin + std::chrono::seconds(1));
  EXPECT_THAT(std::string(agent->PodInformerReady().message()),
              HasSubstr("pods informer heard nothing from the API server for"));
  EXPECT_TRUE(agent->Healthy().ok()) << "liveness is not readiness";

  (*proxy)->Thaw();
  for (int i = 0; i < 200 && !ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(ready()) << agent->Ready() << "; " << agent->PodInformerReady();
  stop = true;
  loop.join();
}

}  // namespace
}  // namespace huygens::agent

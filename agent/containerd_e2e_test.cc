// End-to-end: a private containerd (cri/testing/containerd_env.h), the fake API server and the
// agent in-process with the real CRI runtime. Checks the cpuset of real processes: the kernel's
// Cpus_allowed_list in /proc/<pid>/status and the container's cgroup file.
//
// The machine is whatever runs the test (CI: 2 CPUs, cgroup v1, one NUMA node). The system pool
// is the first online CPU and the exclusive pod takes the last one, so the test needs 2 online
// CPUs.
//
// Issue 17 on this machine (docs/rebalancer.md, "Tested for real"):
//   - ContainerdPodNetworkE2eTest.TwoPodsTalkingOverTcpAreFoundAffineFromTheirLiveConnections:
//     real: three containerd pods, each in a network namespace of its own on the environment's
//     pod network (Debian's CNI bridge and host-local plugins; pod IPs in kPodSubnet), a busybox
//     `nc` echo server, a busybox `nc` client sending to the server's pod IP all the time, a
//     silent pod; the agent's own loop (Agent::Run) with traffic sampling (SockDiagReader: setns
//     into each pod's namespace, netlink sock_diag) and its NRT. Modelled: the API server
//     (FakeApiServer: the pods' objects and their podIPs, written by the test from the
//     sandboxes' CRI status, as kubelet does); no kubelet, no Service, one node.
//   - ContainerdE2eTest.ADeclaredGroupMovesARunningPodAndNothingElseRunningMoves: real: the
//     huygens-scheduler binary (its rebalancer) against the fake API server, the agent, the
//     mover's, a shared pod's and a kube-system pod's containers on containerd, their cpusets
//     and memory nodes as the kernel reports them. Modelled: the machine's NUMA layout, given to
//     the agent (and so to the NRT the scheduler reads) as 4 CPUs on two NUMA nodes, NUMA 0 =
//     {0, 2} with the machine's memory and NUMA 1 = {1, 3} without memory; CPUs 2 and 3 (which
//     a 2-CPU machine does not have) are held by two pods that exist only in the API and never
//     run, so every cpuset and memory node the agent writes is one the machine has. The API
//     server is the fake one (no kubelet: the test starts the containers, as kubelet would).
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "agent/agent.h"
#include "agent/netns_tcp_reader.h"
#include "agent/pod.h"
#include "cri/cgroupfs.h"
#include "cri/cri_runtime.h"
#include "cri/testing/containerd_env.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/process.h"
#include "kube/testing/test_client.h"
#include "node/allocation.h"
#include "serving/metrics.h"
#include "topology/discovery/discovery.h"
#include "topology/nrt.h"

namespace huygens::agent {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using kube::testing::WaitFor;

constexpr char kNrtResource[] = "noderesourcetopologies.topology.node.k8s.io";

// A Guaranteed pod's resources: `cpus` whole CPUs, 64 MiB.
json GuaranteedResources(int cpus) {
  const json amounts = {{"cpu", std::to_string(cpus)}, {"memory", "64Mi"}};
  return {{"requests", amounts}, {"limits", amounts}};
}

// What a test pod is: the API object's parts and how its one container "app" runs.
struct PodOptions {
  std::string ns = "default";
  std::optional<std::string> allocation;    // huygens.io/allocation
  json annotations = json::object();        // besides the allocation
  json labels = json::object();
  json resources = json::object();          // of "app"; {} = BestEffort
  bool pod_network = false;                 // its own network namespace (else the host's)
  std::vector<std::string> command = {"/bin/sleep", "3600"};
};

// A list line of /proc/<pid>/status: `field` is "Cpus_allowed_list" or "Mems_allowed_list".
CpuSet AllowedList(int64_t pid, std::string_view field = "Cpus_allowed_list") {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(std::string(field) + ":")) {
      auto set = CpuSet::Parse(line.substr(line.find(':') + 1).erase(0, 1));
      return set.ok() ? *set : CpuSet{};
    }
  }
  ADD_FAILURE() << "no " << field << " for pid " << pid;
  return {};
}

class ContainerdE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = cri::testing::ContainerdEnv::Unsupported(env_options_)) GTEST_SKIP() << *why;
    auto topology = DiscoverLive();
    ASSERT_TRUE(topology.ok()) << topology.status();
    online_ = topology->OnlineCpus();
    if (online_.Size() < 2) GTEST_SKIP() << "needs at least 2 online CPUs";
    system_ = CpuSet{online_.Min()};
    exclusive_ = CpuSet{online_.Max()};
    topology_ = std::make_shared<const CpuTopology>(std::move(*topology));
    for (const NumaNode& n : topology_->NumaNodes()) {
      if (n.memory_bytes > 0) mems_ = mems_.Union(CpuSet{n.id});
    }

    auto env = cri::testing::ContainerdEnv::Start(env_options_);
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = std::move(*env);
    runtime_ = std::make_unique<cri::CriRuntime>(env_->RuntimeOptions());
    auto server = kube::testing::FakeApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    // The node object: the agent advertises its mode's extended resource on it.
    ASSERT_TRUE(server_->Create("nodes", {{"apiVersion", "v1"}, {"kind", "Node"},
                                         {"metadata", {{"name", "e2e"}}}}).ok());
    client_ = kube::testing::ClientFor(*server_, RealClock::Get());
    dir_ = std::filesystem::path(env_->dir()) / "agent";
    std::filesystem::create_directories(dir_);

    RecreateAgent(system_, "checkpoint.json");
  }

  void TearDown() override {
    scheduler_.reset();  // SIGTERM, before the API server goes away
    StopLoop();
  }

  // Creates the API pod `uid`-pod (on node e2e, phase Running); returns its API uid.
  std::string CreateApiPod(const std::string& uid, const PodOptions& options) {
    json container = {{"name", "app"}};
    if (!options.resources.empty()) container["resources"] = options.resources;
    json object = {{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata", {{"name", uid + "-pod"}, {"namespace", options.ns}}},
                   {"spec", {{"nodeName", "e2e"}, {"containers", {container}}}},
                   {"status", {{"phase", "Running"}}}};
    json annotations = options.annotations;
    if (options.allocation) annotations[kAllocationAnnotation] = *options.allocation;
    if (!annotations.empty()) object["metadata"]["annotations"] = annotations;
    if (!options.labels.empty()) object["metadata"]["labels"] = options.labels;
    // The API server assigns the uid; the sandbox is labelled with it, as kubelet does.
    auto stored = server_->Create("pods", object);
    EXPECT_TRUE(stored.ok()) << stored.status();
    const std::string stored_uid = stored.ok() ? (*stored)["metadata"]["uid"].get<std::string>() : uid;
    uids_[uid] = stored_uid;
    return stored_uid;
  }

  // Creates the API pod, starts its sandbox and container "app" and, on the pod network,
  // reports its pod IP in the pod's status as kubelet does.
  std::pair<cri::testing::EnvPod, std::string> StartPod(const std::string& uid,
                                                        const PodOptions& options = {}) {
    const std::string stored_uid = CreateApiPod(uid, options);
    auto pod = env_->RunPodSandbox(stored_uid, uid + "-pod", options.ns, options.pod_network);
    EXPECT_TRUE(pod.ok()) << pod.status();
    if (!pod.ok()) return {};
    auto id = env_->StartContainer(*pod, "app", 0, options.command);
    EXPECT_TRUE(id.ok()) << id.status();
    if (!pod->ip.empty()) {
      EXPECT_TRUE(server_
                      ->MergePatch("pods", options.ns, uid + "-pod",
                                   {{"status", {{"podIP", pod->ip}, {"podIPs", {{{"ip", pod->ip}}}}}}})
                      .ok());
    }
    return {*pod, id.value_or("")};
  }

  // An allocation of container "app" to `cpus` on NUMA nodes `numa`, with the machine's memory
  // nodes as its mems.
  std::string Allocation(const CpuSet& cpus, const std::vector<int>& numa = {}) const {
    return json{{"version", 1},
                {"node", "e2e"},
                {"numaNodes", numa},
                {"containers", {{{"name", "app"}, {"cpuset", cpus.ToString()},
                                 {"mems", mems_.ToString()}}}}}
        .dump();
  }

  std::string Annotation(const std::string& uid, const char* key, const std::string& ns = "default") {
    auto pod = server_->Get("pods", ns, uid + "-pod");
    if (!pod || !(*pod)["metadata"].contains("annotations")) return "";
    return (*pod)["metadata"]["annotations"].value(key, "");
  }

  json StatusOf(const std::string& uid, const std::string& ns = "default") {
    const std::string status = Annotation(uid, kAllocationStatusAnnotation, ns);
    return status.empty() ? json() : json::parse(status);
  }
  // Whether the pod's allocation status says applied, with container "app" on `cpus`.
  bool AppliedOn(const std::string& uid, const CpuSet& cpus) {
    const json status = StatusOf(uid);
    return status.is_object() && status.value("state", "") == "applied" &&
           status.value("/observed/containers/app"_json_pointer, "") == cpus.ToString();
  }

  // The container's cpuset.cpus file (cgroup v1 or v2), as the kernel holds it.
  CpuSet CgroupCpus(const cri::testing::EnvPod& pod, const std::string& id) {
    cri::CgroupfsWriter writer;
    auto cpuset = writer.ReadCpuset(pod.cgroup_parent + "/" + id);
    EXPECT_TRUE(cpuset.ok()) << cpuset.status();
    return cpuset.ok() ? cpuset->cpus : CpuSet{};
  }

  CpuSet ProcessCpus(const std::string& id, std::string_view field = "Cpus_allowed_list") {
    auto pid = env_->ContainerPid(id);
    EXPECT_TRUE(pid.ok()) << pid.status();
    return pid.ok() ? AllowedList(*pid, field) : CpuSet{};
  }

  // (Re)places the fixture's agent by one whose system pool is `system`, checkpointing into
  // `checkpoint` under dir_, with `configure` applied to its configuration.
  void RecreateAgent(const CpuSet& system, const std::string& checkpoint,
                     const std::function<void(AgentConfig&)>& configure = {}) {
    StopLoop();
    AgentConfig config;
    config.node_name = "e2e";
    config.kubelet_checkpoint_path = "";
    config.checkpoint_path = (dir_ / checkpoint).string();
    if (configure) configure(config);
    auto registry = std::make_unique<serving::MetricsRegistry>();
    auto agent = Agent::Create(config, system,
                               {.client = client_.get(),
                                .runtime = runtime_.get(),
                                .clock = RealClock::Get(),
                                .topology = topology_,
                                .metrics = registry.get(),
                                .traffic_reader = &traffic_reader_});
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = std::move(*agent);
    metrics_ = std::move(registry);  // after the agent that used the old one is gone
  }

  void Pass() {
    auto report = agent_->RunOnce();
    ASSERT_TRUE(report.ok()) << report.status();
    for (const std::string& w : report->warnings) ADD_FAILURE() << "warning: " << w;
  }

  // Runs the agent's own loop (Agent::Run: pod watch, passes, traffic samples) on a thread
  // until StopLoop.
  void StartLoop() {
    stop_ = false;
    loop_ = std::thread([this] { agent_->Run(stop_); });
  }
  void StopLoop() {
    stop_ = true;
    if (loop_.joinable()) loop_.join();
  }

  // The huygens.io/pod-traffic the agent published on node e2e's NRT; nullopt when none.
  std::optional<PodTraffic> PublishedTraffic() {
    auto object = server_->Get(kNrtResource, "", "e2e");
    if (!object) return std::nullopt;
    auto nrt = ReadNrt(*object);
    if (!nrt.ok()) return std::nullopt;
    auto traffic = PodTrafficFromNrt(*nrt);
    EXPECT_TRUE(traffic.ok()) << traffic.status();
    return traffic.ok() ? *traffic : std::nullopt;
  }

  cri::testing::ContainerdEnvOptions env_options_;
  CpuSet online_, system_, exclusive_, mems_;
  std::shared_ptr<const CpuTopology> topology_;
  std::unique_ptr<cri::testing::ContainerdEnv> env_;
  std::unique_ptr<cri::CriRuntime> runtime_;
  std::unique_ptr<kube::testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::filesystem::path dir_;
  SockDiagReader traffic_reader_;
  std::unique_ptr<serving::MetricsRegistry> metrics_;  // the agent's
  std::unique_ptr<Agent> agent_;
  std::atomic<bool> stop_{false};
  std::thread loop_;
  std::unique_ptr<kube::testing::Process> scheduler_;
  std::map<std::string, std::string> uids_;  // test name of a pod -> its API uid
};

// The fixture on an environment with a pod network: pods that ask for it get a network
// namespace and a pod IP of their own.
class ContainerdPodNetworkE2eTest : public ContainerdE2eTest {
 protected:
  ContainerdPodNetworkE2eTest() { env_options_.pod_network = true; }
};

TEST_F(ContainerdE2eTest, TheAgentAppliesReappliesCorrectsDriftRefusesConflictsAndConfines) {
  auto [exclusive_pod, app] = StartPod("excl", {.allocation = Allocation(exclusive_), .resources = GuaranteedResources(1)});
  auto [shared_pod, web] = StartPod("shared");
  auto [system_pod, proxy] = StartPod("sys", {.ns = "kube-system"});
  ASSERT_EQ(ProcessCpus(app), online_) << "a new container may run anywhere";

  // Applied: the exclusive container runs on its CPU only; the others are kept off it.
  Pass();
  EXPECT_EQ(ProcessCpus(app), exclusive_);
  EXPECT_EQ(CgroupCpus(exclusive_pod, app), exclusive_);
  EXPECT_EQ(StatusOf("excl")["state"], "applied");
  const CpuSet shared_pool = online_.Difference(system_).Difference(exclusive_);
  const CpuSet expected_shared = shared_pool.Empty() ? system_ : shared_pool;
  EXPECT_EQ(ProcessCpus(web), expected_shared);
  EXPECT_EQ(CgroupCpus(shared_pod, web), expected_shared);
  EXPECT_EQ(ProcessCpus(proxy), system_);
  EXPECT_EQ(CgroupCpus(system_pod, proxy), system_);

  // Re-applied after a container restart (a new container with the default cpuset).
  auto restarted = env_->RestartContainer(exclusive_pod, app);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  Pass();
  EXPECT_EQ(ProcessCpus(*restarted), exclusive_);
  EXPECT_EQ(CgroupCpus(exclusive_pod, *restarted), exclusive_);

  // Drift: someone writes the cgroup file behind the agent's back.
  {
    cri::CgroupfsWriter writer;
    ASSERT_TRUE(writer.SetCpuset(exclusive_pod.cgroup_parent + "/" + *restarted, online_, mems_).ok());
    ASSERT_EQ(ProcessCpus(*restarted), online_);
  }
  Pass();
  EXPECT_EQ(ProcessCpus(*restarted), exclusive_);
  EXPECT_EQ(CgroupCpus(exclusive_pod, *restarted), exclusive_);

  // A conflicting request is refused and its container runs in the shared pool, off the
  // owner's CPU.
  auto [late_pod, late] = StartPod("late", {.allocation = Allocation(exclusive_), .resources = GuaranteedResources(1)});
  ASSERT_EQ(ProcessCpus(late), online_) << "a new container may run anywhere";
  Pass();
  EXPECT_EQ(StatusOf("late")["state"], "conflict");
  EXPECT_THAT(StatusOf("late")["reason"].get<std::string>(),
              HasSubstr("held by pod(s) " + uids_["excl"]));
  EXPECT_EQ(ProcessCpus(late), expected_shared);
  EXPECT_EQ(StatusOf("excl")["state"], "applied");
  EXPECT_EQ(ProcessCpus(*restarted), exclusive_);
}

// A rebalancer move (docs/rebalancer.md) as the agent sees it: the pod's huygens.io/allocation
// changes while its container runs; the container's process is moved to the new CPUs (and keeps
// its memory nodes), the pod reports applied, and the shared pod follows the shared pool.
TEST_F(ContainerdE2eTest, AMovedAllocationMovesTheRunningProcessAndTheSharedPoolFollows) {
  RecreateAgent(CpuSet{}, "checkpoint-2.json");  // every online CPU is a user CPU: room to move on 2 CPUs
  const CpuSet from{online_.Max()}, to{online_.Min()};
  auto [mover_pod, mover] = StartPod("mover", {.allocation = Allocation(from), .resources = GuaranteedResources(1)});
  auto [shared_pod, web] = StartPod("shared");
  Pass();
  ASSERT_EQ(ProcessCpus(mover), from);
  ASSERT_EQ(ProcessCpus(web), online_.Difference(from));

  ASSERT_TRUE(server_
                  ->MergePatch("pods", "default", "mover-pod",
                               {{"metadata", {{"annotations", {{kAllocationAnnotation, Allocation(to)}}}}}})
                  .ok());
  Pass();
  EXPECT_EQ(ProcessCpus(mover), to);
  EXPECT_EQ(CgroupCpus(mover_pod, mover), to);
  EXPECT_EQ(ProcessCpus(mover, "Mems_allowed_list"), mems_);
  EXPECT_EQ(StatusOf("mover")["state"], "applied");
  EXPECT_EQ(StatusOf("mover")["observed"]["containers"]["app"], to.ToString());
  EXPECT_EQ(ProcessCpus(web), online_.Difference(to));
}

// Issue 17: the agent finds two pods affine from their live TCP connections. All three pods are
// on the pod network, each in a network namespace of its own. The server is busybox nc as a
// persistent echo server (`cat` per connection); the client sends 16 KiB every 50 ms to the
// server's pod IP over one connection (a new one when it breaks) and drops the echo; the third
// pod is silent.
TEST_F(ContainerdPodNetworkE2eTest, TwoPodsTalkingOverTcpAreFoundAffineFromTheirLiveConnections) {
  RecreateAgent(system_, "checkpoint-traffic.json", [](AgentConfig& c) {
    c.traffic.enabled = true;
    c.traffic.sample_interval = std::chrono::milliseconds(250);
    c.traffic.window = std::chrono::seconds(1);
    c.nrt_min_interval = std::chrono::milliseconds(100);
  });
  auto [server_pod, server] = StartPod(
      "server", {.pod_network = true,
                 .command = {"/bin/busybox", "nc", "-ll", "-p", "5000", "-e", "/bin/cat"}});
  ASSERT_FALSE(server_pod.ip.empty());
  auto [client_pod, client] = StartPod(
      "client", {.pod_network = true,
                 .command = {"/bin/sh", "-c",
                             fmt::format("while true; do while /bin/busybox head -c 16384 /dev/zero; do "
                                         "/bin/busybox usleep 50000; done | /bin/busybox nc {} 5000 >/dev/null; "
                                         "/bin/busybox usleep 100000; done",
                                         server_pod.ip)}});
  auto [silent_pod, silent] = StartPod("silent", {.pod_network = true});
  // Like real pods: three addresses, three network namespaces, none of them the node's.
  EXPECT_THAT((std::set<std::string>{server_pod.ip, client_pod.ip, silent_pod.ip}), ::testing::SizeIs(3));
  std::set<std::string> namespaces{std::filesystem::read_symlink("/proc/self/ns/net").string()};
  for (const std::string& id : {server, client, silent}) {
    auto pid = env_->ContainerPid(id);
    ASSERT_TRUE(pid.ok()) << pid.status();
    namespaces.insert(std::filesystem::read_symlink(fmt::format("/proc/{}/ns/net", *pid)).string());
  }
  EXPECT_THAT(namespaces, ::testing::SizeIs(4));

  StartLoop();
  std::optional<PodTraffic> traffic;
  ASSERT_TRUE(WaitFor([&] {
    traffic = PublishedTraffic();
    return traffic.has_value() && !traffic->pairs.empty();
  }, std::chrono::seconds(30), std::chrono::milliseconds(100)))
      << "no pair published; NRT: " << server_->Get(kNrtResource, "", "e2e").value_or(json()).dump();
  ASSERT_EQ(traffic->pairs.size(), 1u) << EncodePodTraffic(*traffic);
  EXPECT_EQ(traffic->pairs[0].a, "default/client-pod");
  EXPECT_EQ(traffic->pairs[0].b, "default/server-pod");
  // At least one of the client's 16 KiB chunks a second (it sends about twenty, echoed).
  EXPECT_GT(traffic->pairs[0].bytes_per_second, 16384u);
  // Every pod's namespace was read: the silent pod has no pair because it has no connection.
  EXPECT_THAT(metrics_->Expose(), ::testing::Not(HasSubstr(R"(huygens_agent_errors_total{step="traffic"})")));
}

// Issue 17: a declared group moves a running pod, seen by the kernel, and nothing else running
// moves (see the file comment for what is modelled). NumaAffinityGroup "pair" (selector
// app=pair, policy same-numa): mover (running,
// exclusive CPU 1 = NUMA node 1) and anchor (API only, CPU 2 = NUMA node 0, rebalance "false");
// filler (API only) holds CPU 3, the last CPU of NUMA node 1, so the only way to bring the group
// together is mover to CPU 0, beside anchor. A shared pod and a kube-system pod run beside them.
// The real huygens-scheduler, rebalancer on, plans and writes the move; the agent applies it.
TEST_F(ContainerdE2eTest, ADeclaredGroupMovesARunningPodAndNothingElseRunningMoves) {
  if (!CpuSet{0, 1}.IsSubsetOf(online_) || !topology_->HasNumaNode(0) ||
      topology_->Numa(0).memory_bytes == 0) {
    GTEST_SKIP() << "the modelled machine needs CPUs 0 and 1 online and memory on NUMA node 0";
  }
  std::vector<CpuInfo> cpus;
  for (int id = 0; id < 4; ++id) {
    cpus.push_back({.id = id, .core = id, .cluster = id, .die = 0, .socket = 0, .numa = id % 2, .l3 = id % 2});
  }
  auto model = CpuTopology::Create(
      cpus,
      {{.id = 0, .cpus = CpuSet{0, 2}, .memory_bytes = topology_->Numa(0).memory_bytes, .distances = {{0, 10}, {1, 20}}},
       {.id = 1, .cpus = CpuSet{1, 3}, .memory_bytes = 0, .distances = {{0, 20}, {1, 10}}}},
      {.possible = CpuSet::Range(0, 3), .present = CpuSet::Range(0, 3)});
  ASSERT_TRUE(model.ok()) << model.status();
  topology_ = std::make_shared<const CpuTopology>(std::move(*model));
  mems_ = CpuSet{0};  // the model's only memory node, the machine's NUMA node 0
  RecreateAgent(CpuSet{}, "checkpoint-group.json", [](AgentConfig& c) {
    c.nrt_min_interval = std::chrono::milliseconds(100);
  });
  // What the scheduler needs of the Node besides the agent's NRT: capacity and readiness.
  const json capacity = {{"cpu", "4"}, {"memory", "4Gi"}, {"pods", "110"}};
  ASSERT_TRUE(server_
                  ->MergePatch("nodes", "", "e2e",
                               {{"metadata", {{"labels", {{"kubernetes.io/hostname", "e2e"}}}}},
                                {"status",
                                 {{"capacity", capacity},
                                  {"allocatable", capacity},
                                  {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}})
                  .ok());

  auto [mover_pod, mover] = StartPod("mover", {.allocation = Allocation(CpuSet{1}, {1}),
                                               .labels = {{"app", "pair"}},
                                               .resources = GuaranteedResources(1)});
  CreateApiPod("anchor", {.allocation = Allocation(CpuSet{2}, {0}),
                          .annotations = {{kRebalanceAnnotation, "false"}},
                          .labels = {{"app", "pair"}},
                          .resources = GuaranteedResources(1)});
  CreateApiPod("filler", {.allocation = Allocation(CpuSet{3}, {1}), .resources = GuaranteedResources(1)});
  ASSERT_TRUE(server_
                  ->Create("numaaffinitygroups.huygens.io",
                           {{"apiVersion", "huygens.io/v1alpha1"},
                            {"kind", "NumaAffinityGroup"},
                            {"metadata", {{"name", "pair"}, {"namespace", "default"}}},
                            {"spec", {{"selector", {{"matchLabels", {{"app", "pair"}}}}}, {"policy", "same-numa"}}}})
                  .ok());
  auto [shared_pod, web] = StartPod("shared");
  auto [system_pod, proxy] = StartPod("sys", {.ns = "kube-system"});
  StartLoop();

  // Before: the agent applied the mover's allocation; the shared pool is the one real CPU left.
  ASSERT_TRUE(WaitFor([&] {
    return AppliedOn("mover", CpuSet{1}) && ProcessCpus(mover) == CpuSet{1} && ProcessCpus(web) == CpuSet{0};
  }, std::chrono::seconds(20), std::chrono::milliseconds(100)))
      << "mover " << ProcessCpus(mover).ToString() << ", shared " << ProcessCpus(web).ToString();
  EXPECT_EQ(ProcessCpus(mover, "Mems_allowed_list"), CpuSet{0});
  EXPECT_EQ(ProcessCpus(proxy), online_) << "the system pool is empty: kube-system is left alone";
  const std::string anchor = Annotation("anchor", kAllocationAnnotation);
  const std::string filler = Annotation("filler", kAllocationAnnotation);

  const std::string log = fmt::format("{}/huygens-scheduler-group-move.log", ::testing::TempDir());
  const std::string config = (dir_ / "scheduler.yaml").string();
  std::ofstream(config) << "rebalancer: {enabled: true, interval: 1s, maxMovesPerNode: 1}\n";
  scheduler_ = std::make_unique<kube::testing::Process>(
      std::vector<std::string>{HUYGENS_SCHEDULER_BIN, "--master", server_->url(), "--no-leader-elect",
                               "--metrics-address", "127.0.0.1:0", "--config", config, "--log-level", "info"},
      log);

  // After: the mover's process runs on CPU 0 (NUMA node 0, beside anchor), its memory node is
  // NUMA node 0's, its status says so, and the shared pool took the CPU it left.
  ASSERT_TRUE(WaitFor([&] {
    return AppliedOn("mover", CpuSet{0}) && ProcessCpus(mover) == CpuSet{0} && ProcessCpus(web) == CpuSet{1};
  }, std::chrono::seconds(30), std::chrono::milliseconds(100)))
      << "mover " << ProcessCpus(mover).ToString() << ", shared " << ProcessCpus(web).ToString()
      << "\nscheduler log:\n" << kube::testing::Slurp(log);
  EXPECT_EQ(Annotation("mover", kAllocationAnnotation),
            R"({"version":1,"node":"e2e","numaNodes":[0],"containers":[{"name":"app","cpuset":"0","mems":"0"}]})");
  EXPECT_EQ(CgroupCpus(mover_pod, mover), CpuSet{0});
  EXPECT_EQ(ProcessCpus(mover, "Mems_allowed_list"), CpuSet{0});
  // Nothing else moved: kube-system's container, the pods that only hold CPUs in the API.
  EXPECT_EQ(ProcessCpus(proxy), online_);
  EXPECT_EQ(Annotation("anchor", kAllocationAnnotation), anchor);
  EXPECT_EQ(Annotation("filler", kAllocationAnnotation), filler);
  std::vector<std::string> moves;
  for (const json& e : server_->List("events.events.k8s.io")) {
    if (e.value("reason", "") != "Rebalanced") continue;
    moves.push_back(e["regarding"].value("name", "") + ": " + e.value("note", ""));
  }
  EXPECT_THAT(moves, ::testing::ElementsAre(::testing::AllOf(HasSubstr("mover-pod: moved to NUMA node 0, cpuset 0"),
                                                             HasSubstr("group default/pair: join NUMA node 0"))));
  // The group's status, written by the scheduler's rebalancer: both members on NUMA node 0.
  EXPECT_TRUE(WaitFor([&] {
    const json status = server_->Get("numaaffinitygroups.huygens.io", "default", "pair").value_or(json::object())
                            .value("status", json::object());
    return status.value("movesMade", 0) == 1 && status.value("numaNodesSpanned", 0) == 1 &&
           status.value("conditions", json::array()).dump().find(R"("status":"True")") != std::string::npos;
  }, std::chrono::seconds(20), std::chrono::milliseconds(100)))
      << server_->Get("numaaffinitygroups.huygens.io", "default", "pair").value_or(json()).dump();
}

}  // namespace
}  // namespace huygens::agent

// End-to-end: a private containerd (cri/testing/containerd_env.h), the fake API server and the
// agent in-process with the real CRI runtime. Checks the cpuset of real processes: the kernel's
// Cpus_allowed_list in /proc/<pid>/status and the container's cgroup file.
//
// The machine is whatever runs the test (CI: 2 CPUs, cgroup v1). The system pool is the first
// online CPU and the exclusive pod takes the last one, so the test needs 2 online CPUs.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "agent/agent.h"
#include "agent/pod.h"
#include "cri/cgroupfs.h"
#include "cri/cri_runtime.h"
#include "cri/testing/containerd_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/test_client.h"
#include "node/allocation.h"
#include "topology/discovery/discovery.h"

namespace huygens::agent {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

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
    if (auto why = cri::testing::ContainerdEnv::Unsupported()) GTEST_SKIP() << *why;
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

    auto env = cri::testing::ContainerdEnv::Start();
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

  // Starts a sandbox + container and creates the matching API pod.
  std::pair<cri::testing::EnvPod, std::string> StartPod(const std::string& uid,
                                                        const std::string& ns,
                                                        std::optional<std::string> allocation) {
    json object = {{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata", {{"name", uid + "-pod"}, {"namespace", ns}}},
                   {"spec", {{"nodeName", "e2e"}, {"containers", {{{"name", "app"}}}}}},
                   {"status", {{"phase", "Running"}}}};
    if (allocation) object["metadata"]["annotations"][kAllocationAnnotation] = *allocation;
    // The API server assigns the uid; the sandbox is labelled with it, as kubelet does.
    auto stored = server_->Create("pods", object);
    EXPECT_TRUE(stored.ok()) << stored.status();
    const std::string stored_uid = stored.ok() ? (*stored)["metadata"]["uid"].get<std::string>() : uid;
    uids_[uid] = stored_uid;
    auto pod = env_->RunPodSandbox(stored_uid, uid + "-pod", ns);
    EXPECT_TRUE(pod.ok()) << pod.status();
    auto id = env_->StartContainer(*pod, "app");
    EXPECT_TRUE(id.ok()) << id.status();
    return {*pod, id.value_or("")};
  }

  std::string Allocation(const CpuSet& cpus) const {
    return json{{"version", 1},
                {"node", "e2e"},
                {"numaNodes", json::array()},
                {"containers", {{{"name", "app"}, {"cpuset", cpus.ToString()},
                                 {"mems", mems_.ToString()}}}}}
        .dump();
  }

  json StatusOf(const std::string& uid, const std::string& ns = "default") {
    auto pod = server_->Get("pods", ns, uid + "-pod");
    if (!pod || !(*pod)["metadata"].contains("annotations")) return json();
    return json::parse((*pod)["metadata"]["annotations"].value(kAllocationStatusAnnotation, "null"));
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
  // `checkpoint` under dir_.
  void RecreateAgent(const CpuSet& system, const std::string& checkpoint) {
    AgentConfig config;
    config.node_name = "e2e";
    config.kubelet_checkpoint_path = "";
    config.checkpoint_path = (dir_ / checkpoint).string();
    auto agent = Agent::Create(config, system,
                               {.client = client_.get(),
                                .runtime = runtime_.get(),
                                .clock = RealClock::Get(),
                                .topology = topology_});
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = std::move(*agent);
  }

  void Pass() {
    auto report = agent_->RunOnce();
    ASSERT_TRUE(report.ok()) << report.status();
    for (const std::string& w : report->warnings) ADD_FAILURE() << "warning: " << w;
  }

  CpuSet online_, system_, exclusive_, mems_;
  std::shared_ptr<const CpuTopology> topology_;
  std::unique_ptr<cri::testing::ContainerdEnv> env_;
  std::unique_ptr<cri::CriRuntime> runtime_;
  std::unique_ptr<kube::testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::filesystem::path dir_;
  std::unique_ptr<Agent> agent_;
  std::map<std::string, std::string> uids_;  // test name of a pod -> its API uid
};

TEST_F(ContainerdE2eTest, TheAgentAppliesReappliesCorrectsDriftRefusesConflictsAndConfines) {
  auto [exclusive_pod, app] = StartPod("excl", "default", Allocation(exclusive_));
  auto [shared_pod, web] = StartPod("shared", "default", std::nullopt);
  auto [system_pod, proxy] = StartPod("sys", "kube-system", std::nullopt);
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

  // A conflicting request is refused and its container left as it was.
  auto [late_pod, late] = StartPod("late", "default", Allocation(exclusive_));
  const CpuSet before = ProcessCpus(late);
  Pass();
  EXPECT_EQ(StatusOf("late")["state"], "conflict");
  EXPECT_THAT(StatusOf("late")["reason"].get<std::string>(),
              HasSubstr("held by pod(s) " + uids_["excl"]));
  EXPECT_EQ(ProcessCpus(late), before);
  EXPECT_EQ(StatusOf("excl")["state"], "applied");
  EXPECT_EQ(ProcessCpus(*restarted), exclusive_);
}

// A rebalancer move (docs/rebalancer.md) as the agent sees it: the pod's huygens.io/allocation
// changes while its container runs; the container's process is moved to the new CPUs (and keeps
// its memory nodes), the pod reports applied, and the shared pod follows the shared pool.
TEST_F(ContainerdE2eTest, AMovedAllocationMovesTheRunningProcessAndTheSharedPoolFollows) {
  RecreateAgent(CpuSet{}, "checkpoint-2.json");  // every online CPU is a user CPU: room to move on 2 CPUs
  const CpuSet from{online_.Max()}, to{online_.Min()};
  auto [mover_pod, mover] = StartPod("mover", "default", Allocation(from));
  auto [shared_pod, web] = StartPod("shared", "default", std::nullopt);
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

}  // namespace
}  // namespace huygens::agent

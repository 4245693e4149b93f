// End-to-end on a real node (CTest label `cluster`, docs/testbed.md): the testbed's real
// kube-apiserver, a real kubelet v1.35 on a private containerd (testbed/kubelet.sh: cgroupfs
// driver, cgroup v1 allowed, cpuManagerPolicy none), huygens-scheduler and huygens-agent run as
// the local processes an operator would run. Pods are created through the API, scheduled by
// huygens-scheduler, started by the kubelet; the agent sets their cpusets through containerd's
// CRI. What is checked is the kernel's view: each container's main process's
// Cpus_allowed_list in /proc/<pid>/status (the pid from the CRI's ContainerStatus). A second
// case registers a device plugin (agent/testing/fake_device_plugin.h) with the kubelet: its
// devices reach the NRT zones through kubelet's pod resources API.
//
// The machine is whatever runs the test (CI: 2 CPUs, one NUMA node). No system pool: the user
// pool is every online CPU, one exclusive 1-CPU pod takes one of them and the shared pods run
// on the rest. Skips when not root or when containerd, ctr, runc or busybox are missing; needs
// HUYGENS_TESTBED_DIR (the running cluster of the `testbed` fixture).

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <httplib.h>

#include "agent/pod.h"
#include "agent/testing/fake_device_plugin.h"
#include "cri/cri_runtime.h"
#include "cri/testing/containerd_env.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/resource.h"
#include "kube/testing/process.h"
#include "node/allocation.h"
#include "topology/discovery/discovery.h"

namespace huygens::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using kube::testing::FreePort;
using kube::testing::Process;

// The Cpus_allowed_list line of /proc/<pid>/status; empty when the process is gone.
CpuSet CpusAllowed(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("Cpus_allowed_list:")) continue;
    auto set = CpuSet::Parse(line.substr(line.find(':') + 1).erase(0, 1));
    return set.ok() ? *set : CpuSet{};
  }
  return {};
}

std::string Tail(const std::string& path, size_t lines = 25) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

// KEY=VALUE lines of a file.
std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

// The sum of the `available` cpu of every zone of an NRT object (quantities are whole CPUs).
int AvailableCpus(const json& nrt) {
  int total = 0;
  for (const json& zone : nrt.value("zones", json::array())) {
    for (const json& r : zone.value("resources", json::array())) {
      if (r.value("name", "") != "cpu") continue;
      const json& v = r["available"];
      total += v.is_string() ? std::stoi(v.get<std::string>()) : v.get<int>();
    }
  }
  return total;
}

// The devices of `resource` over every zone of an NRT object: {allocatable, available} (-1, -1
// when no zone lists it).
std::pair<int, int> ZoneDevices(const json& nrt, const std::string& resource) {
  std::pair<int, int> out{-1, -1};
  for (const json& zone : nrt.value("zones", json::array())) {
    for (const json& r : zone.value("resources", json::array())) {
      if (r.value("name", "") != resource) continue;
      if (out.first < 0) out = {0, 0};
      out.first += std::stoi(r.value("allocatable", "0"));
      out.second += std::stoi(r.value("available", "0"));
    }
  }
  return out;
}

// A pod for the kubelet of `node`: host network (no CNI here), the local busybox image (never
// pulled), no service account token, scheduled by huygens-scheduler onto `node` only (a Node
// left behind by another test must not take it).
json PodObject(const std::string& name, const std::string& image, const std::string& cpu,
               const std::string& memory, bool guaranteed, const std::string& node) {
  json resources = {{"requests", {{"cpu", cpu}, {"memory", memory}}}};
  if (guaranteed) resources["limits"] = resources["requests"];
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"schedulerName", "huygens-scheduler"},
            {"nodeSelector", {{"kubernetes.io/hostname", node}}},
            {"hostNetwork", true},
            {"automountServiceAccountToken", false},
            {"enableServiceLinks", false},
            {"terminationGracePeriodSeconds", 0},
            {"containers",
             {{{"name", "app"},
               {"image", image},
               {"imagePullPolicy", "Never"},
               {"command", {"/bin/sleep", "3600"}},
               {"resources", resources}}}}}}};
}

class KubeletE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = cri::testing::ContainerdEnv::Unsupported()) GTEST_SKIP() << *why;
    const char* dir = std::getenv("HUYGENS_TESTBED_DIR");
    ASSERT_NE(dir, nullptr) << "HUYGENS_TESTBED_DIR is unset: run through CTest (fixture testbed)";
    dir_ = dir;
    work_ = fs::path(dir_) / "kubelet-e2e";
    fs::remove_all(work_);
    fs::create_directories(work_);
    auto topology = DiscoverLive();
    ASSERT_TRUE(topology.ok()) << topology.status();
    online_ = topology->OnlineCpus();
    if (online_.Size() < 2) GTEST_SKIP() << "needs at least 2 online CPUs (one exclusive, one shared)";

    // A previous run killed before its teardown leaves its kubelet: take it down first.
    Script("down");
    ASSERT_EQ(Script("up --name kubelet-e2e"), 0) << Tail(work_ / "kubelet.sh.log", 40);
    up_ = true;
    env_ = ReadEnvFile(dir_ + "/node/env");
    node_ = env_["HUYGENS_KUBELET_NODE"];
    ASSERT_EQ(node_, "kubelet-e2e");

    auto config = kube::LoadKubeconfig(dir_ + "/admin.kubeconfig");
    ASSERT_TRUE(config.ok()) << config.status();
    config->qps = 0;
    auto rest = kube::RestClient::Create(*config);
    ASSERT_TRUE(rest.ok()) << rest.status();
    client_ = std::make_unique<kube::Client>(std::move(*rest));
    runtime_ = std::make_unique<cri::CriRuntime>(
        cri::CriRuntimeOptions{.socket = env_["HUYGENS_KUBELET_SOCKET"], .timeout = std::chrono::milliseconds(5000)});

    metrics_port_ = FreePort();
    std::ofstream(work_ / "agent.yaml") << fmt::format(
        "nodeName: {}\n"
        "kubeletConfig: {}\n"
        "runtime: {{endpoint: \"unix://{}\", timeout: 5s}}\n"
        "resyncPeriod: 2s\n"
        "nrtMinInterval: 1s\n"
        "kubeletCheckpoint: {}/cpu_manager_state\n"
        "podResourcesSocket: {}/pod-resources/kubelet.sock\n"
        "checkpoint: {}/agent-checkpoint.json\n"
        "metricsAddress: 127.0.0.1:{}\n",
        node_, env_["HUYGENS_KUBELET_CONFIG"], env_["HUYGENS_KUBELET_SOCKET"],
        env_["HUYGENS_KUBELET_ROOT"], env_["HUYGENS_KUBELET_ROOT"], work_.string(), metrics_port_);
    StartAgent();
    scheduler_ = std::make_unique<Process>(
        std::vector<std::string>{HUYGENS_SCHEDULER_BIN, "--kubeconfig", dir_ + "/admin.kubeconfig",
                                 "--no-leader-elect", "--metrics-address", "127.0.0.1:0"},
        (work_ / "scheduler.log").string());
  }

  // huygens-agent with this test's agent.yaml; a restart appends to the same log.
  void StartAgent() {
    agent_ = std::make_unique<Process>(
        std::vector<std::string>{HUYGENS_AGENT_BIN, "--config", (work_ / "agent.yaml").string(),
                                 "--kubeconfig", dir_ + "/admin.kubeconfig", "--log-level", "debug"},
        (work_ / "agent.log").string(), std::map<std::string, std::string>{}, /*append=*/true);
  }

  void TearDown() override {
    if (scheduler_) scheduler_->Stop();
    if (agent_) agent_->Stop();
    if (client_) {
      for (const char* name : {"excl", "shared-a", "shared-b", "gpu"}) {
        (void)client_->Delete(kube::Pods(), "default", name);
      }
    }
    if (up_) {
      EXPECT_EQ(Script("down"), 0) << Tail(work_ / "kubelet.sh.log");
      // The Node and its NRT outlive the kubelet; the next test starts from an empty cluster.
      if (client_) {
        (void)client_->Delete(kube::Nodes(), "", node_);
        (void)client_->Delete(kube::NodeResourceTopologies(), "", node_);
      }
      // Nothing of the kubelet's is left: no cgroup, no mount.
      EXPECT_FALSE(fs::exists("/sys/fs/cgroup/cpuset" + env_["HUYGENS_KUBELET_CGROUP"]));
      EXPECT_FALSE(fs::exists(dir_ + "/node"));
    }
  }

  // testbed/kubelet.sh ARGS DIR...: its exit code; output in kubelet.sh.log.
  int Script(const std::string& args) {
    const size_t space = args.find(' ');
    const std::string verb = args.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : args.substr(space);
    const std::string command = fmt::format("{}/testbed/kubelet.sh {} '{}'{} >>'{}' 2>&1", HUYGENS_SOURCE_DIR,
                                            verb, dir_, rest, (work_ / "kubelet.sh.log").string());
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // kube::testing::WaitFor polling every 250 ms (each poll reads pods, metrics and /proc).
  static bool WaitFor(std::chrono::seconds timeout, const std::function<bool()>& done) {
    return kube::testing::WaitFor(done, timeout, std::chrono::milliseconds(250));
  }

  json Pod(const std::string& name) {
    auto pod = client_->Get(kube::Pods(), "default", name);
    return pod.ok() ? *pod : json();
  }
  static std::string Annotation(const json& pod, const char* key) {
    if (!pod.is_object() || !pod["metadata"].contains("annotations")) return "";
    return pod["metadata"]["annotations"].value(key, "");
  }
  static std::string State(const json& pod) {
    const std::string status = Annotation(pod, kAllocationStatusAnnotation);
    return status.empty() ? "" : json::parse(status).value("state", "");
  }
  // The cpuset the allocation annotation gives container "app".
  static CpuSet Allocated(const json& pod) {
    auto allocation = AllocationFromJson(Annotation(pod, kAllocationAnnotation), "pod");
    if (!allocation.ok() || allocation->containers.empty()) return {};
    return allocation->containers.front().cpuset;
  }
  bool Running(const json& pod) const {
    return pod.is_object() && pod["spec"].value("nodeName", "") == node_ &&
           pod["status"].value("phase", "") == "Running";
  }

  // The running container "app" of a pod, by its uid, as containerd's CRI lists it.
  std::optional<cri::ContainerInfo> Container(const json& pod) {
    auto list = runtime_->ListContainers();
    if (!list.ok()) return std::nullopt;
    for (const cri::ContainerInfo& c : *list) {
      if (c.pod_uid == pod["metadata"].value("uid", "") && c.container_name == "app" &&
          c.state == cri::ContainerState::kRunning) {
        return c;
      }
    }
    return std::nullopt;
  }
  // Cpus_allowed_list of the pod's container's main process (empty when not found).
  CpuSet ProcessCpus(const json& pod) {
    std::optional<cri::ContainerInfo> c = Container(pod);
    if (!c) return {};
    auto details = runtime_->Details(*c);
    return details.ok() && details->pid ? CpusAllowed(*details->pid) : CpuSet{};
  }

  // An unlabelled counter of the agent's /metrics: 0 when the family has no sample yet, -1 when
  // the endpoint or the family is missing.
  double Metric(const std::string& name) {
    httplib::Client http("127.0.0.1", metrics_port_);
    auto res = http.Get("/metrics");
    if (!res || res->status != 200) return -1;
    std::istringstream body(res->body);
    double value = -1;
    for (std::string line; std::getline(body, line);) {
      if (line.starts_with("# TYPE " + name + " ")) value = 0;
      if (line.starts_with(name + " ")) return std::stod(line.substr(name.size() + 1));
    }
    return value;
  }

  std::optional<json> Nrt() {
    auto nrt = client_->Get(kube::NodeResourceTopologies(), "", node_);
    if (!nrt.ok()) return std::nullopt;
    return *nrt;
  }

  std::string Logs() {
    return fmt::format("--- agent log\n{}--- scheduler log\n{}--- kubelet log\n{}", Tail(agent_->log()),
                       Tail(scheduler_->log()), Tail(dir_ + "/logs/kubelet.log"));
  }

  std::string dir_;
  fs::path work_;
  bool up_ = false;
  std::map<std::string, std::string> env_;
  std::string node_;
  CpuSet online_;
  int metrics_port_ = 0;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<cri::CriRuntime> runtime_;
  std::unique_ptr<Process> agent_, scheduler_;
};

TEST_F(KubeletE2eTest, RealKubeletPodsGetTheirAnnotatedCpusetsKeepThemAcrossRestartsAndFreeThem) {
  const std::string image = env_["HUYGENS_KUBELET_IMAGE"];
  // The agent publishes the node's NRT: the whole machine available (no system pool, no pod).
  ASSERT_TRUE(WaitFor(std::chrono::seconds(60), [&] {
    auto nrt = Nrt();
    return nrt && AvailableCpus(*nrt) == static_cast<int>(online_.Size());
  })) << "no NRT with every CPU available\n" << Logs();

  // One exclusive 1-CPU pod (Guaranteed, whole CPUs), then two shared pods beside it.
  ASSERT_TRUE(client_->Create(kube::Pods(), "default", PodObject("excl", image, "1", "64Mi", true, node_)).ok());
  ASSERT_TRUE(WaitFor(std::chrono::seconds(90), [&] {
    json pod = Pod("excl");
    return Running(pod) && State(pod) == "applied";
  })) << "excl: " << Pod("excl").dump() << "\n" << Logs();
  for (const char* name : {"shared-a", "shared-b"}) {
    ASSERT_TRUE(client_->Create(kube::Pods(), "default", PodObject(name, image, "100m", "32Mi", false, node_)).ok());
  }
  ASSERT_TRUE(WaitFor(std::chrono::seconds(90), [&] {
    for (const char* name : {"shared-a", "shared-b"}) {
      json pod = Pod(name);
      if (!Running(pod) || State(pod) != "applied") return false;
    }
    return true;
  })) << "shared-a: " << Pod("shared-a").dump() << "\n" << Logs();

  // The exclusive container runs on its annotated CPU only; the shared ones on the rest.
  const CpuSet exclusive = Allocated(Pod("excl"));
  ASSERT_EQ(exclusive.Size(), 1u) << Annotation(Pod("excl"), kAllocationAnnotation);
  const CpuSet shared = online_.Difference(exclusive);
  std::map<std::string, std::string> containers;  // pod -> container id
  std::map<std::string, std::string> statuses;    // pod -> allocation-status text
  const auto check_cpus = [&](const std::string& when) {
    // The agent converges within a pass or two after a start: poll, then demand.
    WaitFor(std::chrono::seconds(10), [&] {
      return ProcessCpus(Pod("excl")) == exclusive && ProcessCpus(Pod("shared-a")) == shared &&
             ProcessCpus(Pod("shared-b")) == shared;
    });
    EXPECT_EQ(ProcessCpus(Pod("excl")), exclusive) << when;
    for (const char* name : {"shared-a", "shared-b"}) {
      json pod = Pod(name);
      EXPECT_EQ(ProcessCpus(pod), shared) << when << ": " << name;
      EXPECT_EQ(Allocated(pod), shared) << when << ": the annotation of " << name;
    }
  };
  check_cpus("after the first start");
  for (const char* name : {"excl", "shared-a", "shared-b"}) {
    json pod = Pod(name);
    std::optional<cri::ContainerInfo> c = Container(pod);
    ASSERT_TRUE(c.has_value()) << name;
    containers[name] = c->id;
    statuses[name] = Annotation(pod, kAllocationStatusAnnotation);
  }
  const auto check_unchanged = [&](const std::string& when) {
    for (const char* name : {"excl", "shared-a", "shared-b"}) {
      json pod = Pod(name);
      std::optional<cri::ContainerInfo> c = Container(pod);
      EXPECT_TRUE(c.has_value() && c->id == containers[name]) << when << ": " << name << " was restarted";
      EXPECT_EQ(Annotation(pod, kAllocationStatusAnnotation), statuses[name]) << when << ": " << name;
    }
    check_cpus(when);
  };
  WaitFor(std::chrono::seconds(10), [&] { return Metric("huygens_agent_reconcile_passes_total") >= 2; });
  const double applied_before = Metric("huygens_agent_containers_applied_total");
  const double drift_before = Metric("huygens_agent_drift_corrections_total");
  ASSERT_GE(applied_before, 3) << "the agent set the three containers";

  // Restarting the kubelet changes nothing: no container restarted, no cpuset reset (the agent,
  // still running, would have had to correct drift), the statuses as they were.
  ASSERT_EQ(Script("restart"), 0) << Tail(work_ / "kubelet.sh.log");
  std::this_thread::sleep_for(std::chrono::seconds(12));  // past one syncFrequency (10 s)
  check_unchanged("after a kubelet restart");
  EXPECT_EQ(Metric("huygens_agent_drift_corrections_total"), drift_before) << "the kubelet reset a cpuset";
  EXPECT_EQ(Metric("huygens_agent_containers_applied_total"), applied_before);

  // Restarting the agent changes nothing: it writes no cpuset (they are right) and no status.
  ASSERT_EQ(agent_->Stop(), 0) << "clean exit on SIGTERM\n" << Tail(agent_->log());
  StartAgent();
  ASSERT_TRUE(WaitFor(std::chrono::seconds(20), [&] { return Metric("huygens_agent_reconcile_passes_total") >= 3; }))
      << Tail(agent_->log());
  EXPECT_EQ(Metric("huygens_agent_containers_applied_total"), 0) << "a restarted agent moved a container";
  check_unchanged("after an agent restart");

  // Deleting the exclusive pod frees its CPU in the NRT (and the kubelet removes it).
  auto before = Nrt();
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(AvailableCpus(*before), static_cast<int>(online_.Size()) - 1);
  ASSERT_TRUE(client_->Delete(kube::Pods(), "default", "excl").ok());
  EXPECT_TRUE(WaitFor(std::chrono::seconds(60), [&] { return !client_->Get(kube::Pods(), "default", "excl").ok(); }))
      << "the kubelet did not finish the deletion\n" << Logs();
  EXPECT_TRUE(WaitFor(std::chrono::seconds(30), [&] {
    auto nrt = Nrt();
    return nrt && AvailableCpus(*nrt) == static_cast<int>(online_.Size());
  })) << Nrt().value_or(json()).dump() << "\n" << Logs();
}

TEST_F(KubeletE2eTest, DevicesKubeletGivesFromADevicePluginAreListedInTheZonesAndFreedWithThePod) {
  // A device plugin with two GPUs on NUMA node 0 registers with the real kubelet; kubelet
  // advertises them on the Node, gives one to a pod that asks, and reports both through its pod
  // resources API, from which the agent publishes the NRT zone's devices.
  const std::string resource = "example.com/gpu";
  testing::FakeDevicePlugin plugin("/var/lib/kubelet/device-plugins", "huygens-e2e-gpu.sock", resource,
                                   {{"gpu-0", 0}, {"gpu-1", 0}});
  ASSERT_NE(plugin.server(), nullptr);
  absl::Status registered;
  ASSERT_TRUE(WaitFor(std::chrono::seconds(30), [&] { return (registered = plugin.Register()).ok(); }))
      << registered << "\n" << Logs();
  ASSERT_TRUE(WaitFor(std::chrono::seconds(60), [&] {
    auto node = client_->Get(kube::Nodes(), "", node_);
    return node.ok() && (*node)["status"]["allocatable"].value(resource, "") == "2";
  })) << "kubelet does not advertise the plugin's devices\n" << Logs();
  ASSERT_TRUE(WaitFor(std::chrono::seconds(30), [&] {
    auto nrt = Nrt();
    return nrt && ZoneDevices(*nrt, resource) == std::make_pair(2, 2);
  })) << Nrt().value_or(json()).dump() << "\n" << Logs();

  // A Guaranteed pod asking one GPU: scheduled by huygens-scheduler, kubelet allocates a device.
  json pod = PodObject("gpu", env_["HUYGENS_KUBELET_IMAGE"], "1", "64Mi", true, node_);
  for (const char* side : {"requests", "limits"}) {
    pod["spec"]["containers"][0]["resources"][side][resource] = "1";
  }
  ASSERT_TRUE(client_->Create(kube::Pods(), "default", pod).ok());
  ASSERT_TRUE(WaitFor(std::chrono::seconds(90), [&] {
    json p = Pod("gpu");
    return Running(p) && State(p) == "applied";
  })) << "gpu: " << Pod("gpu").dump() << "\n" << Logs();
  EXPECT_GE(plugin.allocations(), 1) << "kubelet never asked the plugin to allocate";
  auto allocation = AllocationFromJson(Annotation(Pod("gpu"), kAllocationAnnotation), "pod gpu");
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->numa_nodes, std::vector<int>{0}) << "the CPUs are not on the GPUs' NUMA node";
  EXPECT_TRUE(WaitFor(std::chrono::seconds(30), [&] {
    auto nrt = Nrt();
    return nrt && ZoneDevices(*nrt, resource) == std::make_pair(2, 1);
  })) << "the zone does not count the pod's GPU\n" << Nrt().value_or(json()).dump() << "\n" << Logs();

  // Deleting the pod gives the GPU back in the zone.
  ASSERT_TRUE(client_->Delete(kube::Pods(), "default", "gpu").ok());
  EXPECT_TRUE(WaitFor(std::chrono::seconds(60), [&] { return !client_->Get(kube::Pods(), "default", "gpu").ok(); }))
      << "the kubelet did not finish the deletion\n" << Logs();
  EXPECT_TRUE(WaitFor(std::chrono::seconds(30), [&] {
    auto nrt = Nrt();
    return nrt && ZoneDevices(*nrt, resource) == std::make_pair(2, 2);
  })) << Nrt().value_or(json()).dump() << "\n" << Logs();
}

}  // namespace
}  // namespace huygens::agent

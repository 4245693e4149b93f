// Tests for alloc/kubelet_admission.h, reasoned from kubelet v1.35's topology manager
// (pkg/kubelet/cm/topologymanager: scope_pod.go merges once for the pod, scope_container.go
// once per container) and its device manager's devicesToReuse. The machine: one socket, two
// NUMA nodes of four single-thread cores (CPUs 0-3 on NUMA node 0, 4-7 on NUMA node 1), 8 GiB
// each; CPU 0 and 1 GiB of NUMA node 0 reserved.
#include "alloc/kubelet_admission.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr char kGpu[] = "example.com/gpu";
const std::vector<int> kNuma = {0, 1};

CpuTopology Machine() {
  return testing::BuildMachine({.sockets = 1, .numa_per_socket = 2, .cores_per_numa = 4,
                                .threads_per_core = 1,
                                .memory_per_numa_bytes = uint64_t{8} << 30});
}

// A Guaranteed container: `cpus` whole CPUs, `memory` bytes, `gpus` devices.
ContainerSpec Ctr(std::string name, int cpus, int64_t memory, int gpus = 0) {
  ContainerSpec c;
  c.name = std::move(name);
  c.cpu_request_milli = c.cpu_limit_milli = cpus * 1000;
  c.memory_request_bytes = c.memory_limit_bytes = memory;
  if (gpus > 0) c.extended_requests[kGpu] = gpus;
  return c;
}

ContainerSpec Init(ContainerSpec c, bool restartable = false) {
  c.init = true;
  c.restartable = restartable;
  return c;
}

PodSpec Pod(std::vector<ContainerSpec> containers, std::vector<ContainerSpec> init = {}) {
  return PodSpec{.uid = "u1", .namespace_name = "default", .name = "p",
                 .init_containers = std::move(init), .containers = std::move(containers)};
}

// A node's kubelet: the CPU manager's static policy (CPU 0 reserved), optionally the memory
// manager's Static policy, the device manager with `devices`; the states fresh.
struct Kubelet {
  explicit Kubelet(NodeDevices node_devices = {}, bool with_memory = false)
      : topo(Machine()),
        cpu(*StaticPolicy::Create(topo, CpuSet::Builder().Add(0).Build(), 1, {})),
        cpu_state(cpu.InitialState()),
        devices(std::move(node_devices)),
        free_devices(devices) {
    if (with_memory) {
      memory.emplace(*MemoryManagerPolicy::Create(topo, {{0, {{"memory", uint64_t{1} << 30}}}}));
      memory_state = memory->InitialState();
    }
  }

  PodAdmission Admit(const PodSpec& pod, TopologyPolicy policy, TopologyScope scope,
                     bool with_cpu = true) {
    const TopologyManagerConfig config{
        .policy = policy, .scope = scope, .options = {}, .numa_nodes = kNuma, .distances = nullptr};
    const KubeletHintProviders providers{
        .cpu_policy = with_cpu ? &cpu : nullptr,
        .cpu_state = with_cpu ? &cpu_state : nullptr,
        .memory_policy = memory ? &*memory : nullptr,
        .memory_state = memory ? &memory_state : nullptr,
        .devices = &devices,
        .free_devices = &free_devices};
    return TopologyManagerAdmit(config, providers, pod, /*tell_cause=*/true);
  }

  CpuTopology topo;
  StaticPolicy cpu;
  CpuManagerState cpu_state;
  std::optional<MemoryManagerPolicy> memory;
  MemoryManagerState memory_state;
  NodeDevices devices;
  NodeDevices free_devices;
};

constexpr TopologyPolicy kSingle = TopologyPolicy::kSingleNumaNode;

TEST(TopologyManagerAdmitTest, ScopeContainerAlignsEachContainerOnItsOwnNumaNode) {
  Kubelet k({{kGpu, {{0, 1}, {1, 1}}}});
  const PodSpec pod = Pod({Ctr("a", 2, kGi, 1), Ctr("b", 2, kGi, 1)});
  PodAdmission got = k.Admit(pod, kSingle, TopologyScope::kContainer);
  ASSERT_TRUE(got.admitted()) << got.reason << ": " << got.error;
  ASSERT_EQ(got.containers.size(), 2u);
  EXPECT_EQ(got.containers[0].name, "a");
  EXPECT_EQ(got.containers[0].device_numa, std::vector<int>{0});
  EXPECT_TRUE(got.containers[0].cpus.IsSubsetOf(k.topo.CpusInNumaNode(0)));
  EXPECT_EQ(got.containers[0].cpus.Size(), 2);
  EXPECT_EQ(got.containers[1].device_numa, std::vector<int>{1});
  EXPECT_TRUE(got.containers[1].cpus.IsSubsetOf(k.topo.CpusInNumaNode(1)));
  EXPECT_EQ(got.devices, (NodeDevices{{kGpu, {{0, 1}, {1, 1}}}}));
  EXPECT_EQ(k.free_devices, (NodeDevices{{kGpu, {{0, 0}, {1, 0}}}}));
}

TEST(TopologyManagerAdmitTest, ScopePodMergesThePodsTotalOnceAndRefusesWhatNoNumaNodeHolds) {
  // The same pod under scope pod: 4 CPUs fit NUMA node 1, 2 GPUs need both NUMA nodes.
  Kubelet k({{kGpu, {{0, 1}, {1, 1}}}});
  const CpuManagerState before = k.cpu_state;
  const PodSpec pod = Pod({Ctr("a", 2, kGi, 1), Ctr("b", 2, kGi, 1)});
  PodAdmission got = k.Admit(pod, kSingle, TopologyScope::kPod);
  EXPECT_EQ(got.reason, kTopologyAffinityError);
  EXPECT_EQ(got.cause, HintProvider::kDeviceManager);
  EXPECT_EQ(got.error.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(got.error.message(),
              HasSubstr("(single-numa-node) would refuse it: its CPUs and devices have no NUMA "
                        "alignment (TopologyAffinityError)"));
  EXPECT_TRUE(got.containers.empty());
  EXPECT_EQ(k.cpu_state, before);
  EXPECT_EQ(k.free_devices, k.devices);
}

TEST(TopologyManagerAdmitTest, ScopePodPutsEveryContainerOnThePodsNumaNode) {
  // 2 + 2 CPUs: scope container puts them apart (NUMA node 0 has 3 free CPUs), scope pod
  // merges 4 CPUs once, which only NUMA node 1 holds, and gives both containers that hint.
  Kubelet k;
  const PodSpec pod = Pod({Ctr("a", 2, kGi), Ctr("b", 2, kGi)});
  PodAdmission got = k.Admit(pod, kSingle, TopologyScope::kPod);
  ASSERT_TRUE(got.admitted()) << got.reason << ": " << got.error;
  ASSERT_EQ(got.containers.size(), 2u);
  for (const ContainerAdmission& c : got.containers) {
    EXPECT_TRUE(c.cpus.IsSubsetOf(k.topo.CpusInNumaNode(1))) << c.name << " " << c.cpus.ToString();
    EXPECT_EQ(c.cpus.Size(), 2);
  }
  Kubelet apart;
  PodAdmission per_container = apart.Admit(pod, kSingle, TopologyScope::kContainer);
  ASSERT_TRUE(per_container.admitted());
  EXPECT_TRUE(per_container.containers[0].cpus.IsSubsetOf(apart.topo.CpusInNumaNode(0)));
}

TEST(TopologyManagerAdmitTest, MemoryNoSingleNumaNodeHoldsIsTheMemoryManagersAffinityError) {
  // 9 GiB: only both NUMA nodes together hold it (7 and 8 GiB allocatable); the CPUs fit either.
  Kubelet k({}, /*with_memory=*/true);
  const CpuManagerState cpu_before = k.cpu_state;
  const MemoryManagerState memory_before = k.memory_state;
  PodAdmission got = k.Admit(Pod({Ctr("big", 2, 9 * kGi)}), kSingle, TopologyScope::kContainer);
  EXPECT_EQ(got.reason, kTopologyAffinityError) << got.error;
  EXPECT_EQ(got.cause, HintProvider::kMemoryManager);
  EXPECT_THAT(got.error.message(), HasSubstr("its CPUs and memory have no NUMA alignment"));
  EXPECT_EQ(k.cpu_state, cpu_before);
  EXPECT_EQ(k.memory_state, memory_before);
}

TEST(TopologyManagerAdmitTest, AMemoryAllocateFailureIsTheMemoryManagersAndGivesBackWhatWasTaken) {
  // After `small` holds memory on NUMA node 0 alone, no NUMA set is a hint for 9 GiB (both
  // nodes together would mix single- and cross-NUMA use): the memory manager has no preference,
  // the merge admits and its Allocate fails. `small`, admitted before, is given back.
  Kubelet k({}, /*with_memory=*/true);
  const CpuManagerState cpu_before = k.cpu_state;
  const MemoryManagerState memory_before = k.memory_state;
  const PodSpec pod = Pod({Ctr("small", 2, kGi), Ctr("big", 2, 9 * kGi)});
  PodAdmission got = k.Admit(pod, kSingle, TopologyScope::kContainer);
  EXPECT_EQ(got.reason, kUnexpectedAdmissionError);
  EXPECT_EQ(got.cause, HintProvider::kMemoryManager);
  EXPECT_THAT(std::string(got.error.message()), StartsWith("[memorymanager] "));
  EXPECT_TRUE(got.containers.empty());
  EXPECT_EQ(k.cpu_state, cpu_before);
  EXPECT_TRUE(k.memory_state.assignments.empty());
  EXPECT_EQ(k.memory_state.machine, memory_before.machine);

  // Admitted, each container's memory goes where its CPUs go.
  const PodSpec fits = Pod({Ctr("small", 2, kGi), Ctr("other", 2, 7 * kGi)});
  PodAdmission ok = k.Admit(fits, kSingle, TopologyScope::kContainer);
  ASSERT_TRUE(ok.admitted()) << ok.reason << ": " << ok.error;
  EXPECT_EQ(ok.containers[0].memory_numa, std::vector<int>{0});
  EXPECT_TRUE(ok.containers[0].cpus.IsSubsetOf(k.topo.CpusInNumaNode(0)));
  EXPECT_EQ(ok.containers[1].memory_numa, std::vector<int>{1});
  EXPECT_TRUE(ok.containers[1].cpus.IsSubsetOf(k.topo.CpusInNumaNode(1)));
}

TEST(TopologyManagerAdmitTest, AnAppContainerReusesItsRegularInitContainersDevice) {
  // One GPU on the node: the init container takes it, the app container takes it over.
  Kubelet k({{kGpu, {{0, 1}}}});
  const PodSpec pod = Pod({Ctr("app", 1, kGi, 1)}, {Init(Ctr("setup", 1, kGi, 1))});
  PodAdmission got = k.Admit(pod, kSingle, TopologyScope::kContainer, /*with_cpu=*/false);
  ASSERT_TRUE(got.admitted()) << got.reason << ": " << got.error;
  ASSERT_EQ(got.containers.size(), 2u);
  EXPECT_EQ(got.containers[0].name, "setup");
  EXPECT_EQ(got.containers[0].device_numa, std::vector<int>{0});
  EXPECT_EQ(got.containers[1].device_numa, std::vector<int>{0});
  EXPECT_TRUE(got.containers[1].cpus.Empty());  // no CPU manager
  EXPECT_EQ(got.devices, (NodeDevices{{kGpu, {{0, 1}}}})) << "one device, held once";
  EXPECT_EQ(k.free_devices, (NodeDevices{{kGpu, {{0, 0}}}}));
}

TEST(TopologyManagerAdmitTest, ASidecarsDeviceIsNotReusedAndTheRefusalGivesItBack) {
  // A restartable init container runs beside the app: its GPU is not the app's to take.
  Kubelet k({{kGpu, {{0, 1}}}});
  const PodSpec pod = Pod({Ctr("app", 1, kGi, 1)}, {Init(Ctr("sidecar", 1, kGi, 1), true)});
  PodAdmission got = k.Admit(pod, kSingle, TopologyScope::kContainer, /*with_cpu=*/false);
  EXPECT_EQ(got.reason, kTopologyAffinityError);
  EXPECT_EQ(got.cause, HintProvider::kDeviceManager);
  EXPECT_THAT(got.error.message(), HasSubstr(": its devices have no NUMA alignment"));
  EXPECT_EQ(k.free_devices, k.devices);
}

TEST(TopologyManagerAdmitTest, ADeviceShortageUnderBestEffortIsTheDeviceManagersUnexpectedError) {
  // best-effort admits without alignment; the device manager's Allocate then finds no GPU and
  // the CPUs it took are given back.
  Kubelet k({{kGpu, {{0, 1}}}});
  const CpuManagerState before = k.cpu_state;
  const PodSpec pod = Pod({Ctr("a", 2, kGi, 2)});
  PodAdmission got = k.Admit(pod, TopologyPolicy::kBestEffort, TopologyScope::kContainer);
  EXPECT_EQ(got.reason, kUnexpectedAdmissionError);
  EXPECT_EQ(got.cause, HintProvider::kDeviceManager);
  EXPECT_THAT(std::string(got.error.message()), StartsWith("[devicemanager] "));
  EXPECT_EQ(k.cpu_state, before);
  EXPECT_EQ(k.free_devices, k.devices);
}

}  // namespace
}  // namespace huygens

#include "agent/config.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "base/status.h"

namespace huygens::agent {
namespace {

using ::testing::HasSubstr;

GetEnv Env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(AgentConfig, AnEmptyFileTakesEveryDefaultAndTheNodeNameFromTheEnvironment) {
  auto c = ParseAgentConfig("", "agent.yaml", Env({{"NODE_NAME", "worker-1"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->node_name, "worker-1");
  EXPECT_FALSE(c->system_cpus.has_value());
  EXPECT_EQ(c->mode, NodeMode::kAllocatable);
  EXPECT_EQ(c->system_namespaces, std::vector<std::string>{"kube-system"});
  EXPECT_TRUE(c->cpu_policy_none_namespaces.empty());
  EXPECT_EQ(c->topology_policy, TopologyPolicy::kSingleNumaNode);
  EXPECT_EQ(c->topology_scope, TopologyScope::kContainer);
  EXPECT_EQ(c->runtime.endpoint, "unix:///run/containerd/containerd.sock");
  EXPECT_EQ(c->runtime.timeout, std::chrono::seconds(2));
  EXPECT_TRUE(c->runtime.fallback_to_cgroupfs);
  EXPECT_EQ(c->pod_source, PodSourceKind::kWatch);
  EXPECT_EQ(c->resync_period, std::chrono::seconds(30));
  EXPECT_EQ(c->nrt_min_interval, std::chrono::seconds(10));
  EXPECT_TRUE(c->capacity.Empty());
  EXPECT_EQ(c->kubelet_checkpoint_path, "/var/lib/kubelet/cpu_manager_state");
  EXPECT_EQ(c->metrics_address, "0.0.0.0:9464");
  EXPECT_FALSE(c->traffic.enabled);
  EXPECT_EQ(c->traffic.sample_interval, std::chrono::seconds(10));
  EXPECT_EQ(c->traffic.window, std::chrono::seconds(30));
  EXPECT_EQ(c->traffic.top_pairs, 32);
}

TEST(AgentConfig, EveryFieldIsRead) {
  const char* yaml = R"(
apiVersion: huygens.io/v1alpha1
kind: AgentConfiguration
nodeName: n7
systemCpus: "0-1,64-65"
mode: isolated
systemNamespaces: [monitoring, kube-system, logging]
cpuPolicyNoneNamespaces: [batch, ci]
topologyPolicy: restricted
topologyScope: pod
runtime:
  endpoint: unix:///run/crio/crio.sock
  timeout: 500ms
  fallbackToCgroupfs: false
  cgroupRoot: /host/sys/fs/cgroup
podSource:
  kind: kubelet
  kubeletUrl: http://127.0.0.1:10255/pods
resyncPeriod: 1m
nrtMinInterval: 2s
capacity:
  url: http://127.0.0.1:9101/numa
kubeletCheckpoint: ""
checkpoint: /state/agent.json
metricsAddress: 127.0.0.1:9000
traffic:
  enabled: true
  sampleInterval: 5s
  window: 1m
  topPairs: 8
)";
  auto c = ParseAgentConfig(yaml, "agent.yaml", Env({{"NODE_NAME", "ignored"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->node_name, "n7");
  EXPECT_EQ(c->system_cpus, CpuSet::Parse("0-1,64-65").value());
  EXPECT_EQ(c->mode, NodeMode::kIsolated);
  EXPECT_EQ(c->system_namespaces,
            (std::vector<std::string>{"kube-system", "monitoring", "logging"}));
  EXPECT_EQ(c->cpu_policy_none_namespaces, (std::vector<std::string>{"batch", "ci"}));
  EXPECT_EQ(c->topology_policy, TopologyPolicy::kRestricted);
  EXPECT_EQ(c->topology_scope, TopologyScope::kPod);
  EXPECT_EQ(c->runtime.endpoint, "unix:///run/crio/crio.sock");
  EXPECT_EQ(c->runtime.timeout, std::chrono::milliseconds(500));
  EXPECT_FALSE(c->runtime.fallback_to_cgroupfs);
  EXPECT_EQ(c->runtime.cgroup_root, "/host/sys/fs/cgroup");
  EXPECT_EQ(c->pod_source, PodSourceKind::kKubelet);
  EXPECT_EQ(c->resync_period, std::chrono::minutes(1));
  EXPECT_EQ(c->nrt_min_interval, std::chrono::seconds(2));
  EXPECT_EQ(c->capacity.url, "http://127.0.0.1:9101/numa");
  EXPECT_EQ(c->kubelet_checkpoint_path, "");
  EXPECT_EQ(c->checkpoint_path, "/state/agent.json");
  EXPECT_EQ(c->metrics_address, "127.0.0.1:9000");
  EXPECT_TRUE(c->traffic.enabled);
  EXPECT_EQ(c->traffic.sample_interval, std::chrono::seconds(5));
  EXPECT_EQ(c->traffic.window, std::chrono::minutes(1));
  EXPECT_EQ(c->traffic.top_pairs, 8);
}

TEST(AgentConfig, TheHelpReferenceIsAValidFileWithEveryFieldAndTheDefaults) {
  auto c = ParseAgentConfig(kAgentConfigReference, "agent.yaml", Env({}));
  ASSERT_TRUE(c.ok()) << c.status();
  const AgentConfig defaults;
  EXPECT_EQ(c->mode, defaults.mode);
  EXPECT_EQ(c->system_namespaces, defaults.system_namespaces);
  EXPECT_EQ(c->topology_policy, defaults.topology_policy);
  EXPECT_EQ(c->topology_scope, defaults.topology_scope);
  EXPECT_EQ(c->runtime.endpoint, defaults.runtime.endpoint);
  EXPECT_EQ(c->runtime.timeout, defaults.runtime.timeout);
  EXPECT_EQ(c->runtime.fallback_to_cgroupfs, defaults.runtime.fallback_to_cgroupfs);
  EXPECT_EQ(c->runtime.cgroup_root, defaults.runtime.cgroup_root);
  EXPECT_EQ(c->pod_source, defaults.pod_source);
  EXPECT_EQ(c->kubelet_pods_url, defaults.kubelet_pods_url);
  EXPECT_EQ(c->resync_period, defaults.resync_period);
  EXPECT_EQ(c->nrt_min_interval, defaults.nrt_min_interval);
  EXPECT_EQ(c->kubelet_checkpoint_path, defaults.kubelet_checkpoint_path);
  EXPECT_EQ(c->checkpoint_path, defaults.checkpoint_path);
  EXPECT_EQ(c->metrics_address, defaults.metrics_address);
  EXPECT_EQ(c->traffic.enabled, defaults.traffic.enabled);
  EXPECT_EQ(c->traffic.sample_interval, defaults.traffic.sample_interval);
  EXPECT_EQ(c->traffic.window, defaults.traffic.window);
  EXPECT_EQ(c->traffic.top_pairs, defaults.traffic.top_pairs);
  for (const char* key :
       {"apiVersion", "kind", "nodeName", "systemCpus", "kubeletConfig", "mode",
        "systemNamespaces", "cpuPolicyNoneNamespaces", "topologyPolicy", "topologyScope", "runtime", "endpoint", "timeout",
        "fallbackToCgroupfs", "cgroupRoot", "podSource", "kind", "kubeletUrl", "resyncPeriod",
        "nrtMinInterval", "capacity", "file", "url", "kubeletCheckpoint",
        "kubeletMemoryCheckpoint", "podResourcesSocket", "checkpoint",
        "metricsAddress", "traffic", "enabled", "sampleInterval", "window", "topPairs"}) {
    EXPECT_THAT(kAgentConfigReference, HasSubstr(std::string(key) + ":")) << key;
  }
}

struct BadCase {
  const char* name;
  const char* yaml;
  const char* error;  // a substring of the message: the field and the problem
};

class AgentConfigErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(AgentConfigErrors, NameTheFieldAndTheProblem) {
  auto c = ParseAgentConfig(GetParam().yaml, "agent.yaml", Env({{"NODE_NAME", "n1"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AgentConfigErrors,
    ::testing::Values(
        BadCase{"NotYaml", "a: [1", "YAML syntax error"},
        BadCase{"NotAMapping", "- 1\n- 2", "(top level): expected a map"},
        BadCase{"UnknownKey", "nodname: n1", "(top level).nodname: unknown field"},
        BadCase{"UnknownNestedKey", "runtime: {endpoint: x, timout: 1s}",
                "runtime.timout: unknown field"},
        BadCase{"BadCpuList", "systemCpus: \"0-\"", "systemCpus:"},
        BadCase{"BothSystemSources", "systemCpus: \"0\"\nkubeletConfig: /k.yaml",
                "not both"},
        BadCase{"BadMode", "mode: exclusive", "mode: \"exclusive\" is not"},
        BadCase{"BadPolicy", "topologyPolicy: strict", "topologyPolicy: \"strict\""},
        BadCase{"BadScope", "topologyScope: node", "topologyScope: \"node\""},
        BadCase{"BadDuration", "resyncPeriod: soon", "resyncPeriod: \"soon\" is not a duration"},
        BadCase{"ZeroDuration", "nrtMinInterval: 0s", "nrtMinInterval: must be at least 1ms"},
        BadCase{"BadTimeout", "runtime: {timeout: 2x}", "runtime.timeout"},
        BadCase{"BadBool", "runtime: {fallbackToCgroupfs: maybe}", "runtime.fallbackToCgroupfs"},
        BadCase{"RelativeCgroupRoot", "runtime: {cgroupRoot: sys/fs}", "runtime.cgroupRoot"},
        BadCase{"CgroupDriverIsDetected", "runtime: {cgroupDriver: systemd}",
                "runtime.cgroupDriver: unknown field"},
        BadCase{"BadPodSource", "podSource: {kind: informer}", "podSource.kind"},
        BadCase{"BadKubeletUrl", "podSource: {kubeletUrl: 10255}", "podSource.kubeletUrl"},
        BadCase{"BothCapacitySources", "capacity: {file: /a, url: http://127.0.0.1/b}",
                "capacity: set file or url, not both"},
        BadCase{"RemoteCapacityUrl", "capacity: {url: ftp://x}", "capacity.url"},
        BadCase{"NamespaceNotAList", "systemNamespaces: monitoring", "systemNamespaces"},
        BadCase{"OptOutNamespaceEmpty", "cpuPolicyNoneNamespaces: [batch, \"\"]",
                "cpuPolicyNoneNamespaces[1]: is empty"},
        BadCase{"NodeNameNotAString", "nodeName: [a]", "nodeName: expected a scalar"},
        BadCase{"EmptyCheckpoint", "checkpoint: \"\"", "checkpoint: is empty"},
        BadCase{"UnknownTrafficKey", "traffic: {interval: 5s}", "traffic.interval: unknown field"},
        BadCase{"BadTrafficSwitch", "traffic: {enabled: yes}", "traffic.enabled"},
        BadCase{"BadSampleInterval", "traffic: {sampleInterval: 0s}",
                "traffic.sampleInterval: must be at least 1ms"},
        BadCase{"ZeroTopPairs", "traffic: {topPairs: 0}",
                "traffic.topPairs: 0 is out of range [1, "},
        BadCase{"TextTopPairs", "traffic: {topPairs: many}", "traffic.topPairs"},
        BadCase{"WindowShorterThanASample", "traffic: {sampleInterval: 20s, window: 10s}",
                "traffic.window: must be at least traffic.sampleInterval"},
        BadCase{"UnknownApiVersion", "apiVersion: huygens.io/v2\nkind: AgentConfiguration",
                "agent.yaml:1:13: apiVersion: \"huygens.io/v2\" is not supported"},
        BadCase{"TheSchedulersKind", "apiVersion: huygens.io/v1alpha1\nkind: SchedulerConfiguration",
                "agent.yaml:2:7: kind: \"SchedulerConfiguration\" is not supported (this file is "
                "for another Huygens component; expected AgentConfiguration)"}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(AgentConfig, WithoutANodeNameAnywhereItIsAnError) {
  auto c = ParseAgentConfig("mode: allocatable", "agent.yaml", Env({}));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("nodeName"));
}

TEST(AgentConfig, ErrorsNameTheFileLineColumnAndFieldLikeTheSchedulers) {
  const char* yaml =
      "nodeName: n1\n"
      "traffic:\n"
      "  enabled: true\n"
      "  window: [30s]\n";
  auto c = ParseAgentConfig(yaml, "/etc/huygens/agent.yaml", Env({}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Msg(c.status()),
            "/etc/huygens/agent.yaml:4:11: traffic.window: expected a duration such as 90s or 10m");
}

TEST(ResolveSystemCpus, AnExplicitListWins) {
  AgentConfig c;
  c.system_cpus = CpuSet{0, 1};
  EXPECT_EQ(ResolveSystemCpus(c, {.reserved_system_cpus = CpuSet{5}}), (CpuSet{0, 1}));
}

TEST(ResolveSystemCpus, KubeletsReservedSystemCpusAreTheSystemPool) {
  AgentConfig c;
  c.kubelet_config_path = "/var/lib/kubelet/config.yaml";
  EXPECT_EQ(ResolveSystemCpus(c, {.reserved_system_cpus = CpuSet{0, 32}}), (CpuSet{0, 32}));
}

TEST(ResolveSystemCpus, AKubeletConfigWithoutTheKeyMeansNoSystemCpus) {
  AgentConfig c;
  c.kubelet_config_path = "/k.yaml";
  EXPECT_EQ(ResolveSystemCpus(c, KubeletConfig{}), CpuSet());
}

TEST(AgentConfig, TheKubeletMemoryCheckpointHasKubeletsPathAndCanBeTurnedOff) {
  auto c = ParseAgentConfig("nodeName: n1\n", "agent.yaml", Env({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kubelet_memory_checkpoint_path, "/var/lib/kubelet/memory_manager_state");
  c = ParseAgentConfig("nodeName: n1\nkubeletMemoryCheckpoint: \"\"\n", "agent.yaml", Env({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kubelet_memory_checkpoint_path, "");
}

TEST(AgentConfig, ThePodResourcesSocketHasKubeletsPathAndCanBeTurnedOff) {
  auto c = ParseAgentConfig("nodeName: n1\n", "agent.yaml", Env({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->pod_resources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  c = ParseAgentConfig("nodeName: n1\npodResourcesSocket: \"\"\n", "agent.yaml", Env({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->pod_resources_socket, "");
}

}  // namespace
}  // namespace huygens::agent

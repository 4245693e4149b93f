#include "scheduler/config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::scheduler {
namespace {

using ::testing::HasSubstr;

TEST(SchedulerConfig, AnEmptyFileGivesKubeSchedulerLikeDefaults) {
  auto c = ParseSchedulerConfig("", "empty.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->scheduler_name, "huygens-scheduler");
  EXPECT_TRUE(c->leader_election.leader_elect);
  EXPECT_EQ(c->leader_election.lease_duration, std::chrono::seconds(15));
  EXPECT_EQ(c->qps, 50);
  EXPECT_EQ(c->burst, 100);
  std::vector<ProfileConfig> profiles = EffectiveProfiles(*c);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].scheduler_name, "huygens-scheduler");
  EXPECT_EQ(profiles[0].profile.scores, sched::HuygensProfile().scores);
}

TEST(SchedulerConfig, EveryFieldIsRead) {
  auto c = ParseSchedulerConfig(R"(
apiVersion: huygens.io/v1alpha1
kind: SchedulerConfiguration
schedulerName: numa
profiles:
- pluginWeights: {NumaScore: 10, SmtScore: 0}
  percentageOfNodesToScore: 50
  defaultTopologyPolicy: restricted
  defaultBindPolicy: spread-cores
- schedulerName: numa-packed
numaStrategy: least-allocated
systemPoolNamespaces: [kube-system, monitoring]
leaderElection: {leaderElect: false, resourceName: l, resourceNamespace: ns,
                 leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 5s}
clientConnection: {qps: 100, burst: 200}
metricsAddress: 127.0.0.1:9000
extender: {enabled: true, address: ":8889", maxRequestBytes: 16Mi,
           tls: {certFile: s.crt, keyFile: s.key, clientCAFile: ca.crt, allowedClientNames: [system:kube-scheduler]}}
rebalancer: {enabled: false, interval: 2m, maxMovesPerNode: 3, balance: true, observedMinBytesPerSecond: 0}
agentHeartbeatTimeout: 90s
)",
                                "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->profiles.size(), 2u);
  EXPECT_EQ(c->profiles[0].scheduler_name, "numa");  // the top-level name is the default
  EXPECT_EQ(c->profiles[1].scheduler_name, "numa-packed");
  const auto& scores = c->profiles[0].profile.scores;
  auto numa = std::find_if(scores.begin(), scores.end(), [](const auto& w) { return w.name == "NumaScore"; });
  ASSERT_NE(numa, scores.end());
  EXPECT_EQ(numa->weight, 10);
  EXPECT_TRUE(std::none_of(scores.begin(), scores.end(), [](const auto& w) { return w.name == "SmtScore"; }))
      << "weight 0 removes the plugin";
  EXPECT_EQ(c->profiles[0].profile.percentage_of_nodes_to_score, 50);
  EXPECT_EQ(c->profiles[0].default_topology_policy, TopologyPolicy::kRestricted);
  EXPECT_EQ(c->profiles[0].default_bind_policy, BindPolicy::kSpreadCores);
  EXPECT_EQ(c->numa_strategy, NumaStrategy::kLeastAllocated);
  EXPECT_EQ(c->system_pool_namespaces, (std::vector<std::string>{"kube-system", "monitoring"}));
  EXPECT_FALSE(c->leader_election.leader_elect);
  EXPECT_EQ(c->leader_election.resource_name, "l");
  EXPECT_EQ(c->leader_election.retry_period, std::chrono::seconds(5));
  EXPECT_EQ(c->qps, 100);
  EXPECT_EQ(c->burst, 200);
  EXPECT_EQ(c->metrics_address, "127.0.0.1:9000");
  EXPECT_TRUE(c->extender_enabled);
  EXPECT_EQ(c->extender_address, ":8889");
  EXPECT_EQ(c->extender_max_request_bytes, 16u << 20);
  ASSERT_TRUE(c->extender_tls.has_value());
  EXPECT_EQ(c->extender_tls->cert_file, "s.crt");
  EXPECT_EQ(c->extender_tls->key_file, "s.key");
  EXPECT_EQ(c->extender_tls->client_ca_file, "ca.crt");
  EXPECT_EQ(c->extender_tls->allowed_client_names, std::vector<std::string>{"system:kube-scheduler"});
  EXPECT_FALSE(c->rebalancer.enabled);
  EXPECT_EQ(c->rebalancer.interval, std::chrono::minutes(2));
  EXPECT_EQ(c->rebalancer.max_moves_per_node, 3);
  EXPECT_TRUE(c->rebalancer.balance);
  EXPECT_EQ(c->rebalancer.observed_min_bytes_per_second, 0);
  EXPECT_EQ(c->agent_heartbeat_timeout, std::chrono::seconds(90));
}

// Standalone, UnsupportedFeatures keeps what huygens-scheduler cannot honour waiting; as an
// extender, kube-scheduler's own plugins judge it, so the PreFilter goes.
TEST(SchedulerConfig, OnlyTheStandaloneProfilesRefuseUnsupportedFeatures) {
  for (const char* yaml : {"schedulerName: huygens\n", "profiles: [{schedulerName: a}, {schedulerName: b}]\n"}) {
    auto c = ParseSchedulerConfig(yaml, "config");
    ASSERT_TRUE(c.ok()) << c.status();
    for (const ProfileConfig& p : EffectiveProfiles(*c)) {
      EXPECT_EQ(p.profile.pre_filters, std::vector<std::string>{"UnsupportedFeatures"}) << yaml;
    }
    c->extender_enabled = true;
    for (const ProfileConfig& p : EffectiveProfiles(*c)) EXPECT_THAT(p.profile.pre_filters, ::testing::IsEmpty()) << yaml;
  }
}

// NodeResourcesBalancedAllocation is in no built-in profile; a weight adds it, 0 leaves it out.
TEST(SchedulerConfig, AWeightAddsAnOptionalScorePlugin) {
  auto c = ParseSchedulerConfig("profiles: [{schedulerName: a, pluginWeights: {NodeResourcesBalancedAllocation: 1, NumaScore: 16}},"
                                " {schedulerName: b, pluginWeights: {NodeResourcesBalancedAllocation: 0}}]\n",
                                "config");
  ASSERT_TRUE(c.ok()) << c.status();
  auto weight_of = [](const ProfileConfig& p, const std::string& name) {
    for (const sched::WeightedPlugin& w : p.profile.scores) {
      if (w.name == name) return w.weight;
    }
    return int64_t{0};
  };
  EXPECT_EQ(weight_of(c->profiles[0], "NodeResourcesBalancedAllocation"), 1);
  EXPECT_EQ(weight_of(c->profiles[0], "NumaScore"), 16);
  EXPECT_EQ(weight_of(c->profiles[1], "NodeResourcesBalancedAllocation"), 0);
  EXPECT_EQ(c->profiles[1].profile.scores, sched::HuygensProfile().scores);
  auto bad = ParseSchedulerConfig("profiles: [{pluginWeights: {Balanced: 1}}]\n", "config");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr(", NodeResourcesBalancedAllocation)"));
}

TEST(SchedulerConfig, TheHelpReferenceIsAValidFileWithEveryFieldAndTheDefaults) {
  auto c = ParseSchedulerConfig(kSchedulerConfigReference, "reference");
  ASSERT_TRUE(c.ok()) << c.status();
  const SchedulerConfig defaults;
  EXPECT_EQ(c->scheduler_name, defaults.scheduler_name);
  ASSERT_EQ(c->profiles.size(), 1u);
  EXPECT_EQ(c->profiles[0].profile.scores, sched::HuygensProfile().scores);
  EXPECT_EQ(c->numa_strategy, defaults.numa_strategy);
  EXPECT_EQ(c->system_pool_namespaces, defaults.system_pool_namespaces);
  EXPECT_EQ(c->leader_election.leader_elect, defaults.leader_election.leader_elect);
  EXPECT_EQ(c->leader_election.lease_duration, defaults.leader_election.lease_duration);
  EXPECT_EQ(c->leader_election.renew_deadline, defaults.leader_election.renew_deadline);
  EXPECT_EQ(c->leader_election.retry_period, defaults.leader_election.retry_period);
  EXPECT_EQ(c->qps, defaults.qps);
  EXPECT_EQ(c->burst, defaults.burst);
  EXPECT_EQ(c->metrics_address, defaults.metrics_address);
  EXPECT_EQ(c->extender_enabled, defaults.extender_enabled);
  EXPECT_EQ(c->extender_address, defaults.extender_address);
  EXPECT_EQ(c->extender_max_request_bytes, defaults.extender_max_request_bytes);
  EXPECT_FALSE(c->extender_tls.has_value());
  EXPECT_EQ(c->rebalancer.enabled, defaults.rebalancer.enabled);
  EXPECT_EQ(c->rebalancer.interval, defaults.rebalancer.interval);
  EXPECT_EQ(c->rebalancer.max_moves_per_node, defaults.rebalancer.max_moves_per_node);
  EXPECT_EQ(c->rebalancer.balance, defaults.rebalancer.balance);
  EXPECT_EQ(c->rebalancer.observed_min_bytes_per_second,
            defaults.rebalancer.observed_min_bytes_per_second);
  EXPECT_EQ(c->agent_heartbeat_timeout, defaults.agent_heartbeat_timeout);
  for (const char* key :
       {"apiVersion", "kind", "schedulerName", "profiles", "pluginWeights",
        "percentageOfNodesToScore", "defaultTopologyPolicy", "defaultBindPolicy", "numaStrategy",
        "systemPoolNamespaces", "leaderElection", "leaderElect", "resourceName",
        "resourceNamespace", "leaseDuration", "renewDeadline", "retryPeriod", "clientConnection",
        "qps", "burst", "metricsAddress", "extender", "enabled", "address", "maxRequestBytes", "tls", "certFile", "keyFile",
        "clientCAFile", "allowedClientNames", "rebalancer", "interval", "maxMovesPerNode",
        "balance", "observedMinBytesPerSecond", "agentHeartbeatTimeout"}) {
    EXPECT_THAT(kSchedulerConfigReference, HasSubstr(std::string(key) + ":")) << key;
  }
}

struct BadCase {
  const char* name;
  const char* yaml;
  const char* message;  // expected in the error, with the file name
};

TEST(SchedulerConfig, ErrorsNameTheFileAndTheField) {
  const BadCase cases[] = {
      {"unknown top-level key", "schedulerNmae: x\n", "schedulerNmae"},
      {"unknown score plugin", "profiles: [{pluginWeights: {NumaScroe: 1}}]\n",
       "profiles[0].pluginWeights.NumaScroe"},
      {"weight out of range", "profiles: [{pluginWeights: {NumaScore: 101}}]\n",
       "profiles[0].pluginWeights.NumaScore"},
      {"unknown topology policy", "profiles: [{defaultTopologyPolicy: strict}]\n",
       "profiles[0].defaultTopologyPolicy"},
      {"two profiles with one name", "profiles: [{schedulerName: a}, {schedulerName: a}]\n",
       "profiles[1].schedulerName"},
      {"renew deadline too long", "leaderElection: {leaseDuration: 10s, renewDeadline: 9s}\n",
       "leaderElection"},
      {"bad duration", "leaderElection: {leaseDuration: soon}\n", "leaderElection.leaseDuration"},
      {"unknown NUMA strategy", "numaStrategy: random\n", "numaStrategy"},
      {"namespaces not a list", "systemPoolNamespaces: kube-system\n", "systemPoolNamespaces"},
      {"negative burst", "clientConnection: {burst: -1}\n", "clientConnection.burst"},
      {"broken YAML", "profiles: [\n", "sched.yaml"},
      {"TLS without a key", "extender: {tls: {certFile: s.crt}}\n", "extender.tls: certFile and keyFile"},
      {"unknown TLS field", "extender: {tls: {certFile: s.crt, keyFile: s.key, caFile: x}}\n", "caFile"},
      {"client names without a CA", "extender: {tls: {certFile: a, keyFile: b, allowedClientNames: [x]}}\n",
       "extender.tls.allowedClientNames: needs clientCAFile"},
      {"a request limit below 64 KiB", "extender: {maxRequestBytes: 1000}\n", "extender.maxRequestBytes"},
      {"no moves per interval", "rebalancer: {maxMovesPerNode: 0}\n", "rebalancer.maxMovesPerNode"},
      {"unknown rebalancer field", "rebalancer: {moves: 1}\n", "moves"},
      {"a negative heartbeat timeout", "agentHeartbeatTimeout: -1s\n", "agentHeartbeatTimeout"},
      {"unknown apiVersion", "apiVersion: huygens.io/v2\nkind: SchedulerConfiguration\n",
       "sched.yaml:1:13: apiVersion: \"huygens.io/v2\" is not supported (this version of Huygens "
       "reads only huygens.io/v1alpha1)"},
      {"the agent's kind", "apiVersion: huygens.io/v1alpha1\nkind: AgentConfiguration\n",
       "sched.yaml:2:7: kind: \"AgentConfiguration\" is not supported (this file is for another "
       "Huygens component; expected SchedulerConfiguration)"},
  };
  for (const BadCase& c : cases) {
    auto r = ParseSchedulerConfig(c.yaml, "sched.yaml");
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("sched.yaml")) << c.name;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message)) << c.name;
  }
}

TEST(SchedulerConfig, AMissingFileIsNotFoundNamingIt) {
  auto r = LoadSchedulerConfig("/nonexistent/huygens.yaml");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("/nonexistent/huygens.yaml"));
}

}  // namespace
}  // namespace huygens::scheduler

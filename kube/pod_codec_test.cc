// One test per rule of the pod codec (kube/pod_codec.h), in the header's order.
#include "kube/pod_codec.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Pod(json containers = json::array({{{"name", "app"}}})) {
  return {{"metadata", {{"name", "web"}, {"namespace", "default"}, {"uid", "u1"}}},
          {"spec", {{"containers", std::move(containers)}}}};
}

json WithResources(json requests, json limits = json::object()) {
  json c = {{"name", "app"}, {"resources", json::object()}};
  if (!requests.empty()) c["resources"]["requests"] = std::move(requests);
  if (!limits.empty()) c["resources"]["limits"] = std::move(limits);
  return Pod(json::array({c}));
}

std::string ErrorOf(const json& pod) {
  auto decoded = DecodePod(pod);
  if (decoded.ok()) return "(no error)";
  return std::string(decoded.status().message());
}

TEST(PodCodecTest, Rule1APodIsAnObjectWithMetadata) {
  EXPECT_EQ(ErrorOf(json::array()), "pod: not a JSON object");
  EXPECT_EQ(ErrorOf(json{{"spec", json::object()}}), "pod: metadata: missing");
}

TEST(PodCodecTest, Rule2UidNameAndNamespaceAreRequired) {
  for (const char* key : {"uid", "name", "namespace"}) {
    json pod = Pod();
    pod["metadata"].erase(key);
    EXPECT_THAT(ErrorOf(pod), HasSubstr(std::string("metadata.") + key + ": missing")) << key;
  }
  auto decoded = DecodePod(Pod());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.uid, "u1");
  EXPECT_EQ(decoded->spec.name, "web");
  EXPECT_EQ(decoded->spec.namespace_name, "default");
}

TEST(PodCodecTest, Rule3AnnotationsAreAnObjectOfStrings) {
  json pod = Pod();
  pod["metadata"]["annotations"] = {{"huygens.io/affinity-group", 7}};
  EXPECT_EQ(ErrorOf(pod),
            "pod default/web: metadata.annotations.huygens.io/affinity-group: expected a string");
  pod["metadata"]["annotations"] = json::array();
  EXPECT_EQ(ErrorOf(pod), "pod default/web: metadata.annotations: expected an object");
}

TEST(PodCodecTest, Rule4AnUnknownPolicyIsAnErrorNamingThePodAndTheAnnotation) {
  for (const char* key :
       {"huygens.io/cpu-policy", "huygens.io/topology-policy", "huygens.io/bind-policy"}) {
    json pod = Pod();
    pod["metadata"]["annotations"] = {{key, "fastest"}};
    EXPECT_EQ(ErrorOf(pod), std::string("pod default/web: ") + key + ": unknown policy \"fastest\"");
  }
  json pod = Pod();
  pod["metadata"]["annotations"] = {{"huygens.io/cpu-policy", "shared"},
                                    {"huygens.io/topology-policy", "single-numa-node"},
                                    {"huygens.io/bind-policy", "full-cores"},
                                    {"huygens.io/affinity-group", "db"},
                                    {"huygens.io/allocation", "{not json"},
                                    {"huygens.io/allocation-status", "{}"}};
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.cpu_policy, CpuPolicy::kShared);
  EXPECT_EQ(decoded->spec.topology_policy, TopologyPolicy::kSingleNumaNode);
  EXPECT_EQ(decoded->spec.bind_policy, BindPolicy::kFullCores);
  EXPECT_EQ(decoded->spec.affinity_group, "db");
  EXPECT_EQ(decoded->allocation, "{not json") << "kept as written";
  EXPECT_EQ(decoded->allocation_status, "{}");
}

TEST(PodCodecTest, Rule4TheRebalanceOptOutIsTrueOrFalse) {
  json pod = Pod();
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->rebalance);
  pod["metadata"]["annotations"] = {{"huygens.io/rebalance", "false"}};
  decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok());
  EXPECT_FALSE(decoded->rebalance);
  pod["metadata"]["annotations"] = {{"huygens.io/rebalance", "no"}};
  EXPECT_EQ(ErrorOf(pod), "pod default/web: metadata.annotations.huygens.io/rebalance: \"no\" is "
                          "not \"true\" or \"false\"");
}

TEST(PodCodecTest, Rule5ContainersAreNamedObjectsInArraysAndAnAlwaysInitContainerIsASidecar) {
  json pod = Pod(json::array({{{"name", "app"}}}));
  pod["spec"]["initContainers"] = json::array(
      {{{"name", "setup"}}, {{"name", "proxy"}, {"restartPolicy", "Always"}}});
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->spec.init_containers.size(), 2u);
  EXPECT_TRUE(decoded->spec.init_containers[0].init);
  EXPECT_FALSE(decoded->spec.init_containers[0].restartable);
  EXPECT_TRUE(decoded->spec.init_containers[1].restartable);
  ASSERT_EQ(decoded->spec.containers.size(), 1u);
  EXPECT_FALSE(decoded->spec.containers[0].init);

  EXPECT_EQ(ErrorOf(Pod(json{{"name", "app"}})), "pod default/web: spec.containers: expected an array");
  EXPECT_EQ(ErrorOf(Pod(json::array({"app"}))), "pod default/web: spec.containers[0]: expected an object");
  EXPECT_EQ(ErrorOf(Pod(json::array({json::object()}))), "pod default/web: spec.containers[0].name: missing");
}

TEST(PodCodecTest, Rule6QuantitiesAreStringsOrNumbers) {
  auto decoded = DecodePod(WithResources({{"cpu", "2500m"}, {"memory", "1Gi"}}, {{"cpu", 3}, {"memory", 2147483648}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const ContainerSpec& c = decoded->spec.containers[0];
  EXPECT_EQ(c.cpu_request_milli, 2500);
  EXPECT_EQ(c.cpu_limit_milli, 3000);
  EXPECT_EQ(c.memory_request_bytes, int64_t{1} << 30);
  EXPECT_EQ(c.memory_limit_bytes, int64_t{2} << 30);
  EXPECT_THAT(ErrorOf(WithResources({{"cpu", "4Gi"}})),
              HasSubstr("pod default/web: spec.containers[0].resources.requests.cpu: \"4Gi\" is not a CPU quantity"));
  EXPECT_EQ(ErrorOf(WithResources({{"memory", true}})),
            "pod default/web: spec.containers[0].resources.requests.memory: expected a quantity");
}

TEST(PodCodecTest, Rule7IsolatedCpusAreACpuQuantityOfWholeCpus) {
  auto decoded = DecodePod(WithResources({{"huygens.io/isolated-cpu", "2"}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.containers[0].isolated_cpus, 2);
  EXPECT_TRUE(decoded->spec.containers[0].extended_requests.empty()) << "not an other extended resource";
  // "1k" is 1,000 of a byte-like count, not a number of CPUs; "500m" is half a CPU.
  EXPECT_THAT(ErrorOf(WithResources({{"huygens.io/isolated-cpu", "1k"}})),
              HasSubstr("spec.containers[0].resources.requests.huygens.io/isolated-cpu: \"1k\" is not a CPU quantity"));
  EXPECT_EQ(ErrorOf(WithResources({{"huygens.io/isolated-cpu", "500m"}})),
            "pod default/web: spec.containers[0].resources: huygens.io/isolated-cpu must be a whole "
            "number of CPUs");
}

TEST(PodCodecTest, Rule8OtherExtendedResourcesAreIntegerAmountsPerContainer) {
  auto decoded = DecodePod(WithResources({{"example.com/gpu", "1k"}}, {{"example.com/nic", 2}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.containers[0].extended_requests,
            (std::map<std::string, int64_t>{{"example.com/gpu", 1000}, {"example.com/nic", 2}}));
}

TEST(PodCodecTest, Rule9AMissingRequestDefaultsToTheLimit) {
  auto decoded = DecodePod(WithResources(json::object(), {{"cpu", "4"},
                                                          {"memory", "1Gi"},
                                                          {"huygens.io/isolated-cpu", "3"}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const ContainerSpec& c = decoded->spec.containers[0];
  EXPECT_EQ(c.cpu_request_milli, 4000);
  EXPECT_EQ(c.cpu_limit_milli, 4000);
  EXPECT_EQ(c.memory_request_bytes, int64_t{1} << 30);
  EXPECT_EQ(c.isolated_cpus, 3);
  // An explicit request stays.
  auto explicit_request = DecodePod(WithResources({{"cpu", "1"}}, {{"cpu", "4"}}));
  ASSERT_TRUE(explicit_request.ok());
  EXPECT_EQ(explicit_request->spec.containers[0].cpu_request_milli, 1000);
}

TEST(PodCodecTest, Rule10HugepagesAreBytesByResourceName) {
  auto decoded = DecodePod(WithResources({{"hugepages-2Mi", "512Mi"}}, {{"hugepages-1Gi", "2Gi"}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.containers[0].hugepages_request_bytes,
            (std::map<std::string, int64_t>{{"hugepages-1Gi", int64_t{2} << 30},
                                            {"hugepages-2Mi", int64_t{512} << 20}}));
  EXPECT_TRUE(decoded->spec.containers[0].extended_requests.empty()) << "hugepages are not extended resources";
  EXPECT_THAT(ErrorOf(WithResources({{"hugepages-2Mi", "lots"}})),
              HasSubstr("resources.requests.hugepages-2Mi"));
}

TEST(PodCodecTest, NodePhaseAndCreationTimeAreRead) {
  json pod = Pod();
  pod["spec"]["nodeName"] = "n1";
  pod["status"]["phase"] = "Succeeded";
  pod["metadata"]["creationTimestamp"] = "2026-01-02T03:04:05Z";
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->node_name, "n1");
  EXPECT_EQ(decoded->creation_timestamp, "2026-01-02T03:04:05Z");
  EXPECT_TRUE(decoded->terminal());
  EXPECT_FALSE(IsTerminalPhase("Running"));
}

TEST(PodCodecTest, DeletionTimestampIsKeptAsText) {
  json pod = Pod();
  EXPECT_EQ(DecodePod(pod)->deletion_timestamp, "");
  EXPECT_EQ(DeletionTimestampOf(pod), "");
  pod["metadata"]["deletionTimestamp"] = "2026-01-02T03:04:05Z";
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->deletion_timestamp, "2026-01-02T03:04:05Z");
  EXPECT_EQ(DeletionTimestampOf(pod), "2026-01-02T03:04:05Z");
  EXPECT_EQ(DeletionTimestampOf(json::array()), "");
}

TEST(PodCodecTest, HostNetworkAndPodIpsAreRead) {
  json pod = Pod();
  auto plain = DecodePod(pod);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->host_network);
  EXPECT_TRUE(plain->pod_ips.empty());
  pod["spec"]["hostNetwork"] = true;
  pod["status"]["podIP"] = "10.0.0.9";
  pod["status"]["podIPs"] = json::array({{{"ip", "10.0.0.9"}}, 7, {{"ip", "fd00::9"}}});
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->host_network);
  EXPECT_EQ(decoded->pod_ips, (std::vector<std::string>{"10.0.0.9", "fd00::9"}));
  pod["status"].erase("podIPs");
  pod["spec"]["hostNetwork"] = "true";  // not JSON true
  decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_FALSE(decoded->host_network);
  EXPECT_EQ(decoded->pod_ips, (std::vector<std::string>{"10.0.0.9"}));
}

TEST(PodCodecTest, Rule13PodLevelRequestsDefaultToThePodLevelLimits) {
  json pod = Pod();
  auto plain = DecodePod(pod);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->pod_cpu_request_milli, std::nullopt);
  EXPECT_EQ(plain->pod_memory_request_bytes, std::nullopt);
  pod["spec"]["resources"] = {{"requests", {{"cpu", "64"}}}, {"limits", {{"cpu", "70"}, {"memory", "2Gi"}}}};
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->pod_cpu_request_milli, 64000);
  EXPECT_EQ(decoded->pod_memory_request_bytes, int64_t{2} << 30) << "defaulted to the limit";
  EXPECT_EQ(decoded->spec.pod_cpu_request_milli, 0) << "the CPU placement does not read them";
  pod["spec"]["resources"] = {{"requests", {{"cpu", "4Gi"}}}};
  EXPECT_THAT(ErrorOf(pod), HasSubstr("pod default/web: spec.resources.requests.cpu: "));
  pod["spec"]["resources"] = {{"limits", 3}};
  EXPECT_EQ(ErrorOf(pod), "pod default/web: spec.resources.limits: expected an object");
  pod["spec"]["resources"] = "big";
  EXPECT_EQ(ErrorOf(pod), "pod default/web: spec.resources: expected an object");
}

TEST(PodCodecTest, Rule14OverheadIsCpuMemoryAndExtendedResources) {
  json pod = Pod();
  pod["spec"]["overhead"] = {{"cpu", "250m"}, {"memory", "120Mi"}, {"example.com/vm", "1"}, {"ephemeral-storage", "1Gi"}};
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->overhead_cpu_milli, 250);
  EXPECT_EQ(decoded->overhead_memory_bytes, int64_t{120} << 20);
  EXPECT_EQ(decoded->overhead_extended, (std::map<std::string, int64_t>{{"example.com/vm", 1}}));
  pod["spec"]["overhead"] = {{"memory", true}};
  EXPECT_EQ(ErrorOf(pod), "pod default/web: spec.overhead.memory: expected a quantity");
  pod["spec"]["overhead"] = json::array();
  EXPECT_EQ(ErrorOf(pod), "pod default/web: spec.overhead: expected an object");
}

TEST(PodCodecTest, Rule15SchedulingGatesAreNamedObjects) {
  json pod = Pod();
  pod["spec"]["schedulingGates"] = json::array({{{"name", "example.com/quota"}}, {{"name", "b"}}});
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->scheduling_gates, (std::vector<std::string>{"example.com/quota", "b"}));
  pod["spec"]["schedulingGates"] = json::array({{{"name", ""}}});
  EXPECT_EQ(ErrorOf(pod), "pod default/web: spec.schedulingGates[0].name: missing");
  pod["spec"]["schedulingGates"] = json::array({"a"});
  EXPECT_EQ(ErrorOf(pod), "pod default/web: spec.schedulingGates[0]: expected an object");
  pod["spec"]["schedulingGates"] = json::object();
  EXPECT_EQ(ErrorOf(pod), "pod default/web: spec.schedulingGates: expected an array");
}

TEST(PodCodecTest, Rule16WhatOnlyASchedulerReadsIsNoticed) {
  json pod = Pod();
  auto plain = DecodePod(pod);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->resource_claims.empty() && plain->claim_volumes.empty());
  pod["spec"]["resourceClaims"] = json::array({{{"name", "gpu"}, {"resourceClaimName", "c"}}});
  pod["spec"]["volumes"] = json::array({{{"name", "tmp"}, {"emptyDir", json::object()}},
                                        {{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "d"}}}},
                                        {{"name", "scratch"}, {"ephemeral", json::object()}}});
  auto decoded = DecodePod(pod);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->resource_claims, (std::vector<std::string>{"gpu"}));
  EXPECT_EQ(decoded->claim_volumes, (std::vector<std::string>{"data", "scratch"}));
  pod["spec"]["volumes"][1].erase("name");
  EXPECT_EQ(ErrorOf(pod), "pod default/web: spec.volumes[1].name: missing");
}

json WithSpread(json constraints) {
  json pod = Pod();
  pod["spec"]["topologySpreadConstraints"] = std::move(constraints);
  return pod;
}

TEST(PodCodecTest, Rule18TopologySpreadConstraintsAreReadWithTheApiServersDefaults) {
  auto plain = DecodePod(Pod());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->topology_spread_constraints.empty());
  json zone = {{"maxSkew", 1}, {"topologyKey", "topology.kubernetes.io/zone"}, {"whenUnsatisfiable", "DoNotSchedule"},
               {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}};
  json host = {{"maxSkew", 3},
               {"topologyKey", "kubernetes.io/hostname"},
               {"whenUnsatisfiable", "ScheduleAnyway"},
               {"nodeAffinityPolicy", "Ignore"},
               {"nodeTaintsPolicy", "Honor"},
               {"matchLabelKeys", {"pod-template-hash"}}};
  json full = zone;
  full["minDomains"] = 3;
  auto decoded = DecodePod(WithSpread({zone, host, full}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->topology_spread_constraints.size(), 3u);
  const TopologySpreadConstraint& z = decoded->topology_spread_constraints[0];
  EXPECT_EQ(z.max_skew, 1);
  EXPECT_EQ(z.topology_key, "topology.kubernetes.io/zone");
  EXPECT_TRUE(z.hard);
  EXPECT_EQ(z.label_selector, (LabelSelector{.match_labels = {{"app", "web"}}, .match_expressions = {}}));
  EXPECT_EQ(z.min_domains, 1);
  EXPECT_EQ(z.node_affinity_policy, NodeInclusionPolicy::kHonor);
  EXPECT_EQ(z.node_taints_policy, NodeInclusionPolicy::kIgnore);
  const TopologySpreadConstraint& h = decoded->topology_spread_constraints[1];
  EXPECT_EQ(h.max_skew, 3);
  EXPECT_FALSE(h.hard);
  EXPECT_FALSE(h.label_selector.has_value());
  EXPECT_EQ(h.node_affinity_policy, NodeInclusionPolicy::kIgnore);
  EXPECT_EQ(h.node_taints_policy, NodeInclusionPolicy::kHonor);
  EXPECT_EQ(h.match_label_keys, (std::vector<std::string>{"pod-template-hash"}));
  EXPECT_EQ(decoded->topology_spread_constraints[2].min_domains, 3);
}

TEST(PodCodecTest, Rule18BadTopologySpreadConstraintsNameTheirField) {
  const json zone = {{"maxSkew", 1}, {"topologyKey", "zone"}, {"whenUnsatisfiable", "DoNotSchedule"}};
  auto with = [&](const char* key, json value) {
    json c = zone;
    if (value.is_discarded()) {
      c.erase(key);
    } else {
      c[key] = std::move(value);
    }
    return WithSpread({c});
  };
  const json gone = json::value_t::discarded;
  const std::string at = "pod default/web: spec.topologySpreadConstraints[0]";
  EXPECT_EQ(ErrorOf(WithSpread("zone")), "pod default/web: spec.topologySpreadConstraints: expected an array");
  EXPECT_EQ(ErrorOf(WithSpread({"zone"})), at + ": expected an object, got string");
  EXPECT_EQ(ErrorOf(with("maxSkew", gone)), at + ".maxSkew: missing");
  EXPECT_EQ(ErrorOf(with("maxSkew", 0)), at + ".maxSkew: 0 is not an integer of at least 1");
  EXPECT_EQ(ErrorOf(with("maxSkew", "1")), at + ".maxSkew: \"1\" is not an integer of at least 1");
  EXPECT_EQ(ErrorOf(with("maxSkew", int64_t{1} << 40)), at + ".maxSkew: 1099511627776 is not an integer of at least 1");
  EXPECT_EQ(ErrorOf(with("topologyKey", gone)), at + ".topologyKey: missing");
  EXPECT_EQ(ErrorOf(with("topologyKey", "")), at + ".topologyKey: must not be empty");
  EXPECT_EQ(ErrorOf(with("whenUnsatisfiable", gone)), at + ".whenUnsatisfiable: missing");
  EXPECT_EQ(ErrorOf(with("whenUnsatisfiable", "Never")),
            at + ".whenUnsatisfiable: \"Never\" is not one of DoNotSchedule, ScheduleAnyway");
  EXPECT_EQ(ErrorOf(with("minDomains", -2)), at + ".minDomains: -2 is not an integer of at least 1");
  json soft = zone;
  soft["whenUnsatisfiable"] = "ScheduleAnyway";
  soft["minDomains"] = 2;
  EXPECT_EQ(ErrorOf(WithSpread({soft})), at + ".minDomains: can only be set when whenUnsatisfiable is DoNotSchedule");
  EXPECT_EQ(ErrorOf(with("nodeAffinityPolicy", "honor")),
            at + ".nodeAffinityPolicy: \"honor\" is not one of Honor, Ignore");
  EXPECT_EQ(ErrorOf(with("nodeTaintsPolicy", 1)), at + ".nodeTaintsPolicy: 1 is not one of Honor, Ignore");
  EXPECT_EQ(ErrorOf(with("labelSelector", {{"matchLabels", {{"app", 1}}}})),
            at + ".labelSelector.matchLabels.app: expected a string, got integer");
  EXPECT_EQ(ErrorOf(with("matchLabelKeys", "app")), at + ".matchLabelKeys: expected an array, got string");
  // Explicit nulls are unset fields.
  json nulls = zone;
  nulls["minDomains"] = nullptr;
  nulls["nodeAffinityPolicy"] = nullptr;
  nulls["labelSelector"] = nullptr;
  EXPECT_TRUE(DecodePod(WithSpread({nulls})).ok());
}

json WithPodAffinity(json affinity) {
  json pod = Pod();
  pod["spec"]["affinity"] = std::move(affinity);
  return pod;
}

TEST(PodCodecTest, Rule17InterPodAffinityTermsAreRead) {
  const json term = {{"labelSelector", {{"matchLabels", {{"app", "db"}}},
                                        {"matchExpressions", json::array({{{"key", "tier"}, {"operator", "Exists"}}})}}},
                     {"namespaces", json::array({"data"})},
                     {"namespaceSelector", json::object()},
                     {"topologyKey", "kubernetes.io/hostname"},
                     {"matchLabelKeys", json::array({"version"})},
                     {"mismatchLabelKeys", json::array({"tenant"})}};
  auto decoded = DecodePod(WithPodAffinity(
      {{"podAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", json::array({term})}}},
       {"podAntiAffinity",
        {{"preferredDuringSchedulingIgnoredDuringExecution",
          json::array({{{"weight", 30}, {"podAffinityTerm", {{"topologyKey", "zone"}}}}})}}}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const PodAffinity& a = decoded->pod_affinity;
  ASSERT_EQ(a.required.size(), 1u);
  const PodAffinityTerm& t = a.required[0];
  ASSERT_TRUE(t.label_selector.has_value());
  EXPECT_EQ(t.label_selector->match_labels, (Labels{{"app", "db"}}));
  ASSERT_EQ(t.label_selector->match_expressions.size(), 1u);
  EXPECT_EQ(t.label_selector->match_expressions[0].op, SelectorOperator::kExists);
  EXPECT_EQ(t.namespaces, (std::vector<std::string>{"data"}));
  ASSERT_TRUE(t.namespace_selector.has_value());
  EXPECT_TRUE(t.namespace_selector->empty());
  EXPECT_EQ(t.topology_key, "kubernetes.io/hostname");
  EXPECT_EQ(t.match_label_keys, (std::vector<std::string>{"version"}));
  EXPECT_EQ(t.mismatch_label_keys, (std::vector<std::string>{"tenant"}));
  ASSERT_EQ(a.preferred_anti.size(), 1u);
  EXPECT_EQ(a.preferred_anti[0].weight, 30);
  EXPECT_FALSE(a.preferred_anti[0].term.label_selector.has_value());  // selects no pod
  EXPECT_TRUE(a.preferred.empty());
  EXPECT_TRUE(a.required_anti.empty());
}

TEST(PodCodecTest, Rule17AMalformedAffinityTermNamesTheField) {
  const std::string required = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";
  auto anti = [](json term) {
    return WithPodAffinity({{"podAntiAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", json::array({term})}}}});
  };
  EXPECT_EQ(ErrorOf(anti({{"labelSelector", json::object()}})), "pod default/web: " + required + ".topologyKey: missing");
  EXPECT_EQ(ErrorOf(anti({{"topologyKey", "zone"},
                          {"labelSelector", {{"matchExpressions", json::array({{{"key", "a"}, {"operator", "Gt"}, {"values", {"1"}}}})}}}})),
            "pod default/web: " + required +
                ".labelSelector.matchExpressions[0].operator: \"Gt\" is not one of In, NotIn, Exists, DoesNotExist");
  EXPECT_EQ(ErrorOf(anti({{"topologyKey", "zone"}, {"namespaces", "data"}})),
            "pod default/web: " + required + ".namespaces: expected an array, got string");
  EXPECT_EQ(ErrorOf(anti({{"topologyKey", "zone"}, {"namespaceSelector", {{"matchLabels", {{"team", 1}}}}}})),
            "pod default/web: " + required + ".namespaceSelector.matchLabels.team: expected a string, got integer");
  EXPECT_EQ(ErrorOf(WithPodAffinity({{"podAffinity", {{"preferredDuringSchedulingIgnoredDuringExecution",
                                                        json::array({{{"weight", 0}, {"podAffinityTerm", {{"topologyKey", "zone"}}}}})}}}})),
            "pod default/web: spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: 0 "
            "is not an integer from 1 to 100");
  EXPECT_EQ(ErrorOf(WithPodAffinity({{"podAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", json::object()}}}})),
            "pod default/web: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution: expected an array");
  EXPECT_EQ(ErrorOf(WithPodAffinity({{"podAntiAffinity", "yes"}})),
            "pod default/web: spec.affinity.podAntiAffinity: expected an object");
}

}  // namespace
}  // namespace huygens::kube

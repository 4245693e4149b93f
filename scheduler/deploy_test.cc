// The deployment files parse, and say what the service expects: the ConfigMap holds a valid
// configuration, the CRD stores v1alpha2, RBAC grants no wildcard, kube-scheduler's extender
// configuration calls what the extender serves. (scheduler/install_test.cc applies them to a real
// apiserver, label `cluster`.)
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "gmock/gmock.h"
#include "base/extender_opt_in.h"
#include "base/wire_names.h"
#include "gtest/gtest.h"
#include "kube/numa_affinity_group.h"
#include "kube/resource.h"
#include "scheduler/config.h"
#include "sim/cluster_spec.h"
#include "topology/nrt.h"
#include "yaml-cpp/yaml.h"

namespace huygens::scheduler {
namespace {

std::vector<YAML::Node> LoadAll(const std::string& relative) {
  std::string path = std::string(HUYGENS_SOURCE_DIR) + "/" + relative;
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  return YAML::LoadAll(text.str());
}

TEST(Deploy, EveryManifestParsesAndHasAnApiVersionAndKind) {
  for (const char* f : {"deploy/crd/noderesourcetopology.yaml", "deploy/crd/numaaffinitygroup.yaml",
                        "deploy/scheduler/rbac.yaml", "deploy/scheduler/admission-policy.yaml",
                        "deploy/scheduler/configmap.yaml", "deploy/scheduler/deployment.yaml",
                        "deploy/scheduler/extender.yaml", "deploy/agent/00-namespace.yaml",
                        "deploy/agent/01-rbac.yaml", "deploy/agent/configmap.yaml",
                        "deploy/agent/daemonset.yaml", "deploy/kube-scheduler/extender-config.yaml"}) {
    std::vector<YAML::Node> docs = LoadAll(f);
    ASSERT_FALSE(docs.empty()) << f;
    for (const YAML::Node& d : docs) {
      EXPECT_TRUE(d["apiVersion"].IsScalar()) << f;
      EXPECT_TRUE(d["kind"].IsScalar()) << f;
    }
  }
}

TEST(Deploy, TheConfigMapHoldsAConfigurationTheSchedulerAccepts) {
  std::vector<YAML::Node> docs = LoadAll("deploy/scheduler/configmap.yaml");
  ASSERT_EQ(docs.size(), 1u);
  auto config = ParseSchedulerConfig(docs[0]["data"]["config.yaml"].as<std::string>(), "configmap");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->scheduler_name, "huygens-scheduler");
  EXPECT_TRUE(config->leader_election.leader_elect);
}

TEST(Deploy, TheExtenderConfigCallsTheVerbsTheExtenderServesOnItsConfiguredPort) {
  std::vector<YAML::Node> scheduler = LoadAll("deploy/kube-scheduler/extender-config.yaml");
  ASSERT_EQ(scheduler.size(), 1u);
  ASSERT_EQ(scheduler[0]["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  YAML::Node e = scheduler[0]["extenders"][0];
  EXPECT_EQ(e["filterVerb"].as<std::string>(), "filter");  // SchedulerService::ServeExtender's paths
  EXPECT_EQ(e["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_EQ(e["bindVerb"].as<std::string>(), "bind");
  EXPECT_TRUE(e["nodeCacheCapable"].as<bool>());
  EXPECT_FALSE(e["ignorable"].as<bool>());
  // Only the pods that opt in (the resource the agent advertises in each node mode) go through
  // the extender; kube-scheduler checks the node offers it.
  std::vector<std::string> managed;
  for (const YAML::Node& r : e["managedResources"]) {
    managed.push_back(r["name"].as<std::string>());
    EXPECT_FALSE(r["ignoredByScheduler"].as<bool>()) << managed.back();
  }
  EXPECT_EQ(managed, (std::vector<std::string>{kIsolatedCpuResource, kExclusiveResource}));
  // The applied part holds API objects only (kubectl apply refuses a KubeSchedulerConfiguration):
  // a ConfigMap, a Deployment and a Service (in the order Helm renders them).
  std::map<std::string, YAML::Node> by_kind;
  for (const YAML::Node& d : LoadAll("deploy/scheduler/extender.yaml")) by_kind[d["kind"].as<std::string>()] = d;
  ASSERT_EQ(by_kind.size(), 3u);
  ASSERT_TRUE(by_kind.contains("ConfigMap") && by_kind.contains("Deployment") && by_kind.contains("Service"));
  auto config = ParseSchedulerConfig(by_kind["ConfigMap"]["data"]["config.yaml"].as<std::string>(), "extender configmap");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->extender_enabled);
  const std::string port = config->extender_address.substr(config->extender_address.rfind(':') + 1);
  EXPECT_EQ(e["urlPrefix"].as<std::string>(), "https://huygens-extender.huygens-system.svc:" + port);
  // HTTPS both ways: kube-scheduler presents a client certificate the extender checks.
  EXPECT_TRUE(e["enableHTTPS"].as<bool>());
  EXPECT_TRUE(e["tlsConfig"]["certFile"] && e["tlsConfig"]["keyFile"] && e["tlsConfig"]["caFile"]);
  ASSERT_TRUE(config->extender_tls.has_value());
  EXPECT_FALSE(config->extender_tls->client_ca_file.empty());
  EXPECT_EQ(config->extender_tls->allowed_client_names, std::vector<std::string>{"system:kube-scheduler"});
  // Replicas behind leader election on their own Lease: only the leader answers.
  EXPECT_GE(by_kind["Deployment"]["spec"]["replicas"].as<int>(), 2);
  EXPECT_TRUE(config->leader_election.leader_elect);
  EXPECT_EQ(config->leader_election.resource_name, "huygens-extender");
  EXPECT_EQ(by_kind["Service"]["metadata"]["name"].as<std::string>(), "huygens-extender");
  EXPECT_EQ(by_kind["Service"]["spec"]["ports"][0]["port"].as<std::string>(), port);
}

TEST(Deploy, ThePrometheusRuleFilesArePlainRuleFilesOutsideTheAppliedFolders) {
  for (const char* f : {"deploy/prometheus/huygens-agent.rules.yaml",
                        "deploy/prometheus/huygens-scheduler.rules.yaml"}) {
    std::vector<YAML::Node> docs = LoadAll(f);
    ASSERT_EQ(docs.size(), 1u) << f;
    EXPECT_FALSE(docs[0]["kind"]) << f;
    ASSERT_TRUE(docs[0]["groups"].IsSequence()) << f;
    EXPECT_GT(docs[0]["groups"][0]["rules"].size(), 0u) << f;
  }
}

TEST(Deploy, TheCrdStoresV1alpha2AndRequiresZones) {
  YAML::Node crd = LoadAll("deploy/crd/noderesourcetopology.yaml")[0];
  EXPECT_EQ(crd["metadata"]["name"].as<std::string>(), "noderesourcetopologies.topology.node.k8s.io");
  EXPECT_EQ(crd["spec"]["scope"].as<std::string>(), "Cluster");
  bool stored = false;
  for (const YAML::Node& v : crd["spec"]["versions"]) {
    if (v["name"].as<std::string>() != "v1alpha2") continue;
    stored = v["storage"].as<bool>();
    YAML::Node schema = v["schema"]["openAPIV3Schema"];
    EXPECT_EQ(schema["required"][0].as<std::string>(), "zones");
    YAML::Node resource = schema["properties"]["zones"]["items"]["properties"]["resources"]["items"];
    EXPECT_EQ(resource["required"].size(), 4u);  // name, capacity, allocatable, available
  }
  EXPECT_TRUE(stored);
}

TEST(Deploy, TheCrdPrintsThePolicyAndScopeAttributesTheAgentWritesAndTheAge) {
  YAML::Node crd = LoadAll("deploy/crd/noderesourcetopology.yaml")[0];
  auto shape = sim::ShapeForCpuCount(4);
  ASSERT_TRUE(shape.ok());
  NrtInput in{.node_name = "n1", .topology = shape->topology.get(), .policy = "restricted", .scope = "pod"};
  auto nrt = BuildNrt(in);
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  std::map<std::string, std::string> printed;  // column name -> what its jsonPath selects
  for (const YAML::Node& v : crd["spec"]["versions"]) {
    if (v["name"].as<std::string>() != "v1alpha2") continue;
    for (const YAML::Node& column : v["additionalPrinterColumns"]) {
      const std::string path = column["jsonPath"].as<std::string>();
      // The one filter form used: .attributes[?(@.name=="X")].value
      std::smatch m;
      if (std::regex_match(path, m, std::regex(R"re(\.attributes\[\?\(@\.name=="(\w+)"\)\]\.value)re"))) {
        for (const auto& a : (*nrt)["attributes"]) {
          if (a["name"] == m[1].str()) printed[column["name"].as<std::string>()] = a["value"].get<std::string>();
        }
      } else {
        printed[column["name"].as<std::string>()] = path;
      }
    }
  }
  EXPECT_EQ(printed["Policy"], "restricted");
  EXPECT_EQ(printed["Scope"], "pod");
  EXPECT_EQ(printed["Age"], ".metadata.creationTimestamp");
}

TEST(Deploy, TheNumaAffinityGroupCrdIsTheResourceAndTheNamesTheCodecReads) {
  YAML::Node crd = LoadAll("deploy/crd/numaaffinitygroup.yaml")[0];
  const kube::ResourceRef& r = kube::NumaAffinityGroups();
  EXPECT_EQ(crd["metadata"]["name"].as<std::string>(), r.resource + "." + r.group);
  EXPECT_EQ(crd["spec"]["group"].as<std::string>(), r.group);
  EXPECT_EQ(crd["spec"]["names"]["plural"].as<std::string>(), r.resource);
  EXPECT_EQ(crd["spec"]["names"]["kind"].as<std::string>(), r.kind);
  EXPECT_EQ(crd["spec"]["scope"].as<std::string>(), r.namespaced ? "Namespaced" : "Cluster");
  ASSERT_EQ(crd["spec"]["versions"].size(), 1u);
  YAML::Node version = crd["spec"]["versions"][0];
  EXPECT_EQ(version["name"].as<std::string>(), r.version);
  EXPECT_TRUE(version["storage"].as<bool>());
  EXPECT_TRUE(version["subresources"]["status"].IsMap()) << "the rebalancer writes the status subresource";
  YAML::Node spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"];
  // The policies the schema admits are exactly the codec's, and its default is the codec's.
  YAML::Node policy = spec["properties"]["policy"];
  ASSERT_EQ(policy["enum"].size(), 3u);
  for (const YAML::Node& p : policy["enum"]) {
    EXPECT_TRUE(ParseAffinityGroupPolicy(p.as<std::string>()).has_value()) << p.as<std::string>();
  }
  EXPECT_EQ(policy["default"].as<std::string>(), ToString(AffinityGroupPolicy::kSameNuma));
  // The operators it admits are label-selector operators.
  YAML::Node op = spec["properties"]["selector"]["properties"]["matchExpressions"]["items"]["properties"]["operator"];
  ASSERT_EQ(op["enum"].size(), 4u);
  for (const YAML::Node& o : op["enum"]) {
    auto parsed = ParseSelectorOperator(o.as<std::string>());
    ASSERT_TRUE(parsed.has_value()) << o.as<std::string>();
    EXPECT_NE(*parsed, SelectorOperator::kGt);
    EXPECT_NE(*parsed, SelectorOperator::kLt);
  }
}

TEST(Deploy, RbacGrantsNoWildcardAndBindingOnlyCreate) {
  std::vector<YAML::Node> docs = LoadAll("deploy/scheduler/rbac.yaml");
  for (const YAML::Node& d : LoadAll("deploy/agent/01-rbac.yaml")) docs.push_back(d);
  for (const YAML::Node& d : docs) {
    if (!d["rules"]) continue;
    for (const YAML::Node& rule : d["rules"]) {
      for (const char* key : {"apiGroups", "resources", "verbs"}) {
        for (const YAML::Node& v : rule[key]) EXPECT_NE(v.as<std::string>(), "*") << key;
      }
      if (rule["resources"][0].as<std::string>() == "pods/binding") {
        ASSERT_EQ(rule["verbs"].size(), 1u);
        EXPECT_EQ(rule["verbs"][0].as<std::string>(), "create");
      }
    }
  }
}

}  // namespace
}  // namespace huygens::scheduler

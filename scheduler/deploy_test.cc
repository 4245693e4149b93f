// The deployment files parse, and say what the service expects: the ConfigMap holds a valid
// configuration, the CRD stores v1alpha2, RBAC grants no wildcard.
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/config.h"
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
  for (const char* f : {"deploy/crd/noderesourcetopology.yaml", "deploy/scheduler/rbac.yaml",
                        "deploy/scheduler/configmap.yaml", "deploy/scheduler/deployment.yaml",
                        "deploy/scheduler/extender.yaml"}) {
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

TEST(Deploy, RbacGrantsNoWildcardAndBindingOnlyCreate) {
  for (const YAML::Node& d : LoadAll("deploy/scheduler/rbac.yaml")) {
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

// The NumaAffinityGroup CRD on the real kube-apiserver of the testbed (label `cluster`,
// docs/testbed.md): it installs from deploy/crd with kubectl as documented, a group created
// through the API reads back through the codec (kube/numa_affinity_group.h) with the schema's
// default policy, its status is written through the status subresource only, `kubectl get nag`
// shows the printer columns, and the schema refuses what the codec would refuse.
#include <sys/wait.h>

#include <cstdlib>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/numa_affinity_group.h"
#include "kube/resource.h"
#include "kube/rest_client.h"
#include "kube/testing/process.h"

namespace huygens::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::Slurp;

constexpr char kNamespace[] = "default";

class NumaAffinityGroupClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("HUYGENS_TESTBED_DIR");
    ASSERT_NE(dir, nullptr) << "HUYGENS_TESTBED_DIR is unset: run through CTest (fixture testbed)";
    dir_ = dir;
    std::istringstream env(Slurp(dir_ + "/env"));
    for (std::string line; std::getline(env, line);) {
      if (line.starts_with("HUYGENS_TESTBED_KUBE_BIN=")) kube_bin_ = line.substr(line.find('=') + 1);
    }
    ASSERT_FALSE(kube_bin_.empty()) << "no HUYGENS_TESTBED_KUBE_BIN in " << dir_ << "/env";
    auto config = LoadKubeconfig(dir_ + "/admin.kubeconfig");
    ASSERT_TRUE(config.ok()) << config.status();
    config->qps = 0;
    auto rest = RestClient::Create(*config);
    ASSERT_TRUE(rest.ok()) << rest.status();
    client_ = std::make_unique<Client>(std::move(*rest));

    // Installed as the README says (the testbed fixture applied deploy/crd already; applying
    // again is how an upgrade installs a changed CRD, and must work on its own).
    std::string out;
    ASSERT_EQ(Kubectl("kubectl apply -f deploy/crd/numaaffinitygroup.yaml", &out), 0) << out;
    ASSERT_EQ(Kubectl("kubectl wait --for condition=established --timeout=60s crd/numaaffinitygroups.huygens.io", &out), 0)
        << out;
  }

  // Runs `command` (a shell line starting with `kubectl`) from the repository root as the
  // testbed's admin with the pinned kubectl; stdout and stderr in `output`. The exit code.
  int Kubectl(const std::string& command, std::string* output) const {
    const std::string out = dir_ + "/numa-affinity-group-kubectl.out";
    const std::string line = fmt::format("cd '{}' && KUBECONFIG='{}/admin.kubeconfig' PATH='{}':\"$PATH\" timeout 60 {} >'{}' 2>&1",
                                         HUYGENS_SOURCE_DIR, dir_, kube_bin_, command, out);
    const int status = std::system(line.c_str());
    *output = Slurp(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // A group `name` in kNamespace with `spec`, created afresh (a leftover of an earlier run is
  // deleted first). Returns the stored object.
  absl::StatusOr<json> CreateGroup(const std::string& name, const json& spec) {
    absl::Status deleted = client_->Delete(NumaAffinityGroups(), kNamespace, name);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
    return client_->Create(NumaAffinityGroups(), kNamespace,
                           json{{"apiVersion", NumaAffinityGroups().ApiVersion()},
                                {"kind", NumaAffinityGroups().kind},
                                {"metadata", {{"name", name}, {"namespace", kNamespace}}},
                                {"spec", spec}});
  }

  std::string dir_;
  std::string kube_bin_;
  std::unique_ptr<Client> client_;
};

TEST_F(NumaAffinityGroupClusterTest, AGroupReadsBackThroughTheCodecWithTheSchemasDefaultPolicy) {
  const json selector = {{"matchLabels", {{"app", "db"}}},
                         {"matchExpressions",
                          {{{"key", "tier"}, {"operator", "In"}, {"values", {"gold", "silver"}}},
                           {{"key", "canary"}, {"operator", "DoesNotExist"}}}}};
  auto created = CreateGroup("db", {{"selector", selector}});
  ASSERT_TRUE(created.ok()) << created.status();
  auto stored = client_->Get(NumaAffinityGroups(), kNamespace, "db");
  ASSERT_TRUE(stored.ok()) << stored.status();
  auto group = DecodeNumaAffinityGroup(*stored);
  ASSERT_TRUE(group.ok()) << group.status() << "\n" << stored->dump(2);
  EXPECT_EQ(group->namespace_name, kNamespace);
  EXPECT_EQ(group->name, "db");
  EXPECT_EQ(group->uid, (*created)["metadata"]["uid"]);
  EXPECT_EQ(group->generation, 1);
  EXPECT_EQ((*stored)["spec"]["policy"], "same-numa") << "the schema's default is stored";
  EXPECT_EQ(group->policy, AffinityGroupPolicy::kSameNuma);
  const LabelSelector want{{{"app", "db"}},
                           {{"tier", SelectorOperator::kIn, {"gold", "silver"}},
                            {"canary", SelectorOperator::kDoesNotExist, {}}}};
  EXPECT_EQ(group->selector, want);
  EXPECT_TRUE(group->selector.Matches({{"app", "db"}, {"tier", "gold"}}));
  EXPECT_FALSE(group->selector.Matches({{"app", "db"}, {"tier", "gold"}, {"canary", "1"}}));
}

TEST_F(NumaAffinityGroupClusterTest, TheStatusIsWrittenThroughTheStatusSubresourceOnly) {
  ASSERT_TRUE(CreateGroup("web", {{"selector", {{"matchLabels", {{"app", "web"}}}}}, {"policy", "spread"}}).ok());
  NumaAffinityGroupStatus status;
  status.observed_generation = 1;
  status.members = {{"web-0", "n1", {0}, 4}, {"web-1", "n1", {1}, 4}};
  status.numa_nodes_spanned = 2;
  status.moves_made = 1;
  status.conditions = {{"Aligned", true, "Spread", "each member on its own NUMA node", "2026-12-03T02:49:07Z"}};
  const json patch = EncodeStatusPatch(status);
  auto written = client_->MergePatch(NumaAffinityGroups(), kNamespace, "web", patch, "status");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ((*written)["status"], patch["status"]);
  EXPECT_EQ((*written)["metadata"]["generation"], 1) << "a status write is not a new generation";

  // The main resource ignores status, the status subresource ignores spec.
  auto main = client_->MergePatch(NumaAffinityGroups(), kNamespace, "web", json{{"status", {{"movesMade", 9}}}});
  ASSERT_TRUE(main.ok()) << main.status();
  EXPECT_EQ((*main)["status"]["movesMade"], 1);
  auto spec = client_->MergePatch(NumaAffinityGroups(), kNamespace, "web", json{{"spec", {{"policy", "nearest"}}}},
                                  "status");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)["spec"]["policy"], "spread");

  // kubectl knows the short name and shows the printer columns.
  std::string out;
  ASSERT_EQ(Kubectl("kubectl get nag web -n default", &out), 0) << out;
  EXPECT_THAT(out, ::testing::ContainsRegex("NAME +POLICY +MEMBERS +ALIGNED +AGE")) << out;
  EXPECT_THAT(out, ::testing::ContainsRegex("web +spread +2 +True ")) << out;
}

struct RefusedCase {
  std::string name;
  json spec;
  std::string message;  // a part of the apiserver's answer
};
void PrintTo(const RefusedCase& c, std::ostream* os) { *os << c.name; }

class NumaAffinityGroupSchemaTest : public NumaAffinityGroupClusterTest, public ::testing::WithParamInterface<RefusedCase> {};

TEST_P(NumaAffinityGroupSchemaTest, TheApiServerRefusesIt) {
  const RefusedCase& c = GetParam();
  auto created = CreateGroup("refused", c.spec);
  ASSERT_FALSE(created.ok()) << "stored: " << created->dump();
  EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument) << created.status();
  EXPECT_THAT(std::string(created.status().message()), HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Refused, NumaAffinityGroupSchemaTest,
    ::testing::Values(
        RefusedCase{"AnUnknownPolicy", {{"selector", json::object()}, {"policy", "tightest"}},
                    R"(spec.policy: Unsupported value: "tightest": supported values: "same-numa", "nearest", "spread")"},
        RefusedCase{"AGroupWithoutASelector", {{"policy", "nearest"}}, "spec.selector: Required value"},
        RefusedCase{"AnUnknownOperator",
                    {{"selector", {{"matchExpressions", {{{"key", "tier"}, {"operator", "Foo"}}}}}}},
                    R"(spec.selector.matchExpressions[0].operator: Unsupported value: "Foo")"},
        RefusedCase{"InWithoutValues",
                    {{"selector", {{"matchExpressions", {{{"key", "tier"}, {"operator", "In"}}}}}}},
                    "values must be non-empty for In and NotIn, and empty for Exists and DoesNotExist"},
        RefusedCase{"ExistsWithValues",
                    {{"selector", {{"matchExpressions", {{{"key", "tier"}, {"operator", "Exists"}, {"values", {"a"}}}}}}}},
                    "values must be non-empty for In and NotIn, and empty for Exists and DoesNotExist"}),
    [](const ::testing::TestParamInfo<RefusedCase>& p) { return p.param.name; });

}  // namespace
}  // namespace huygens::kube

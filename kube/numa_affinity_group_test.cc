// The rules of the NumaAffinityGroup codec (kube/numa_affinity_group.h), in the header's order:
// a table of objects that decode and what they decode to, a table of objects refused and the
// error, and the status patch.
#include "kube/numa_affinity_group.h"

#include <functional>
#include <ostream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::kube {
namespace {

using nlohmann::json;
using Op = SelectorOperator;

json Group() {
  return {{"apiVersion", "huygens.io/v1alpha1"},
          {"kind", "NumaAffinityGroup"},
          {"metadata", {{"name", "x"}, {"namespace", "ns"}, {"uid", "u1"}, {"generation", 3}}},
          {"spec", {{"selector", {{"matchLabels", {{"app", "db"}}}}}}}};
}

// The object of Group() with `edit` applied.
json Edited(const std::function<void(json&)>& edit) {
  json g = Group();
  edit(g);
  return g;
}

struct DecodeCase {
  std::string name;
  json object;
  LabelSelector selector;
  AffinityGroupPolicy policy;
  int64_t generation;
};
void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

class DecodeTest : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeTest, ReadsTheGroup) {
  const DecodeCase& c = GetParam();
  auto group = DecodeNumaAffinityGroup(c.object);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ(group->namespace_name, "ns");
  EXPECT_EQ(group->name, "x");
  EXPECT_EQ(group->uid, "u1");
  EXPECT_EQ(group->generation, c.generation);
  EXPECT_EQ(group->selector, c.selector);
  EXPECT_EQ(group->policy, c.policy);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, DecodeTest,
    ::testing::Values(
        DecodeCase{"Rule1KindAndApiVersionMayBeAbsentAsInAListsItems",
                   Edited([](json& g) { g.erase("kind"); g.erase("apiVersion"); }),
                   {{{"app", "db"}}, {}}, AffinityGroupPolicy::kSameNuma, 3},
        DecodeCase{"Rule2AMissingGenerationIsZero", Edited([](json& g) { g["metadata"].erase("generation"); }),
                   {{{"app", "db"}}, {}}, AffinityGroupPolicy::kSameNuma, 0},
        DecodeCase{"Rule3TheEmptySelectorSelectsEveryPod",
                   Edited([](json& g) { g["spec"]["selector"] = json::object(); }), {},
                   AffinityGroupPolicy::kSameNuma, 3},
        DecodeCase{"Rule5ExpressionsKeepTheirOrderOperatorsAndValues",
                   Edited([](json& g) {
                     g["spec"]["selector"]["matchExpressions"] = {
                         {{"key", "tier"}, {"operator", "In"}, {"values", {"gold", "silver"}}},
                         {{"key", "zone"}, {"operator", "NotIn"}, {"values", {"a"}}},
                         {{"key", "canary"}, {"operator", "Exists"}},
                         {{"key", "debug"}, {"operator", "DoesNotExist"}, {"values", json::array()}}};
                   }),
                   {{{"app", "db"}},
                    {{"tier", Op::kIn, {"gold", "silver"}},
                     {"zone", Op::kNotIn, {"a"}},
                     {"canary", Op::kExists, {}},
                     {"debug", Op::kDoesNotExist, {}}}},
                   AffinityGroupPolicy::kSameNuma, 3},
        DecodeCase{"Rule6AMissingPolicyIsSameNuma", Group(), {{{"app", "db"}}, {}},
                   AffinityGroupPolicy::kSameNuma, 3},
        DecodeCase{"Rule6NearestIsRead", Edited([](json& g) { g["spec"]["policy"] = "nearest"; }),
                   {{{"app", "db"}}, {}}, AffinityGroupPolicy::kNearest, 3},
        DecodeCase{"Rule6SpreadIsRead", Edited([](json& g) { g["spec"]["policy"] = "spread"; }),
                   {{{"app", "db"}}, {}}, AffinityGroupPolicy::kSpread, 3},
        DecodeCase{"UnknownFieldsAndTheStatusAreIgnored",
                   Edited([](json& g) {
                     g["spec"]["future"] = 1;
                     g["status"] = {{"movesMade", "not even a number"}};
                   }),
                   {{{"app", "db"}}, {}}, AffinityGroupPolicy::kSameNuma, 3}),
    [](const ::testing::TestParamInfo<DecodeCase>& p) { return p.param.name; });

struct ErrorCase {
  std::string name;
  json object;
  std::string error;
};
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class DecodeErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(DecodeErrorTest, NamesTheObjectAndTheField) {
  const ErrorCase& c = GetParam();
  auto group = DecodeNumaAffinityGroup(c.object);
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(group.status().message(), c.error);
}

json WithExpression(json expression) {
  return Edited([&](json& g) {
    g["spec"]["selector"]["matchExpressions"] = {{{"key", "tier"}, {"operator", "Exists"}}, expression};
  });
}

INSTANTIATE_TEST_SUITE_P(
    Rules, DecodeErrorTest,
    ::testing::Values(
        ErrorCase{"Rule1AnArrayIsNotAGroup", json::array(), "NumaAffinityGroup: not a JSON object"},
        ErrorCase{"Rule1AGroupNeedsMetadata", json{{"spec", json::object()}}, "NumaAffinityGroup: metadata: missing"},
        ErrorCase{"Rule1AnotherKindIsRefused", Edited([](json& g) { g["kind"] = "Pod"; }),
                  R"(NumaAffinityGroup ns/x: kind: "Pod" is not "NumaAffinityGroup")"},
        ErrorCase{"Rule1AnotherVersionIsRefused", Edited([](json& g) { g["apiVersion"] = "huygens.io/v1"; }),
                  R"(NumaAffinityGroup ns/x: apiVersion: "huygens.io/v1" is not "huygens.io/v1alpha1")"},
        ErrorCase{"Rule2TheNameIsRequired", Edited([](json& g) { g["metadata"].erase("name"); }),
                  "NumaAffinityGroup ns/: metadata.name: missing"},
        ErrorCase{"Rule2TheNamespaceIsRequired", Edited([](json& g) { g["metadata"]["namespace"] = ""; }),
                  "NumaAffinityGroup x: metadata.namespace: must not be empty"},
        ErrorCase{"Rule2TheUidIsAString", Edited([](json& g) { g["metadata"]["uid"] = 7; }),
                  "NumaAffinityGroup ns/x: metadata.uid: expected a string, got integer"},
        ErrorCase{"Rule2ANegativeGenerationIsRefused", Edited([](json& g) { g["metadata"]["generation"] = -1; }),
                  "NumaAffinityGroup ns/x: metadata.generation: -1 is not a non-negative integer"},
        ErrorCase{"Rule2AGenerationBeyondInt64IsRefused",
                  Edited([](json& g) { g["metadata"]["generation"] = uint64_t{1} << 63; }),
                  "NumaAffinityGroup ns/x: metadata.generation: 9223372036854775808 is not a non-negative integer"},
        ErrorCase{"Rule2AFractionalGenerationIsRefused",
                  Edited([](json& g) { g["metadata"]["generation"] = 1.5; }),
                  "NumaAffinityGroup ns/x: metadata.generation: 1.5 is not a non-negative integer"},
        ErrorCase{"Rule3TheSpecIsRequired", Edited([](json& g) { g.erase("spec"); }),
                  "NumaAffinityGroup ns/x: spec: missing"},
        ErrorCase{"Rule3TheSpecIsAnObject", Edited([](json& g) { g["spec"] = "same-numa"; }),
                  "NumaAffinityGroup ns/x: spec: expected an object"},
        ErrorCase{"Rule3TheSelectorIsRequired", Edited([](json& g) { g["spec"].erase("selector"); }),
                  "NumaAffinityGroup ns/x: spec.selector: missing"},
        ErrorCase{"Rule3TheSelectorIsAnObject", Edited([](json& g) { g["spec"]["selector"] = "app=db"; }),
                  "NumaAffinityGroup ns/x: spec.selector: expected an object, got string"},
        ErrorCase{"Rule4MatchLabelsIsAnObject",
                  Edited([](json& g) { g["spec"]["selector"]["matchLabels"] = json::array(); }),
                  "NumaAffinityGroup ns/x: spec.selector.matchLabels: expected an object, got array"},
        ErrorCase{"Rule4MatchLabelsValuesAreStrings",
                  Edited([](json& g) { g["spec"]["selector"]["matchLabels"]["replicas"] = 3; }),
                  "NumaAffinityGroup ns/x: spec.selector.matchLabels.replicas: expected a string, got integer"},
        ErrorCase{"Rule5MatchExpressionsIsAnArray",
                  Edited([](json& g) { g["spec"]["selector"]["matchExpressions"] = json::object(); }),
                  "NumaAffinityGroup ns/x: spec.selector.matchExpressions: expected an array, got object"},
        ErrorCase{"Rule5AnExpressionIsAnObject", WithExpression("tier in (gold)"),
                  "NumaAffinityGroup ns/x: spec.selector.matchExpressions[1]: expected an object, got string"},
        ErrorCase{"Rule5AnExpressionNeedsAKey", WithExpression({{"operator", "Exists"}}),
                  "NumaAffinityGroup ns/x: spec.selector.matchExpressions[1].key: missing"},
        ErrorCase{"Rule5AnExpressionNeedsAnOperator", WithExpression({{"key", "tier"}}),
                  "NumaAffinityGroup ns/x: spec.selector.matchExpressions[1].operator: missing"},
        ErrorCase{"Rule5AnUnknownOperatorIsRefused", WithExpression({{"key", "tier"}, {"operator", "Foo"}}),
                  R"(NumaAffinityGroup ns/x: spec.selector.matchExpressions[1].operator: "Foo" is not one of In, NotIn, Exists, DoesNotExist)"},
        ErrorCase{"Rule5NodeAffinitysGtIsNotALabelSelectorOperator",
                  WithExpression({{"key", "replicas"}, {"operator", "Gt"}, {"values", {"2"}}}),
                  R"(NumaAffinityGroup ns/x: spec.selector.matchExpressions[1].operator: "Gt" is not one of In, NotIn, Exists, DoesNotExist)"},
        ErrorCase{"Rule5InNeedsValues", WithExpression({{"key", "tier"}, {"operator", "In"}}),
                  "NumaAffinityGroup ns/x: spec.selector.matchExpressions[1].values: must be non-empty for operator In"},
        ErrorCase{"Rule5NotInNeedsValues",
                  WithExpression({{"key", "tier"}, {"operator", "NotIn"}, {"values", json::array()}}),
                  "NumaAffinityGroup ns/x: spec.selector.matchExpressions[1].values: must be non-empty for operator NotIn"},
        ErrorCase{"Rule5ExistsTakesNoValues",
                  WithExpression({{"key", "tier"}, {"operator", "Exists"}, {"values", {"gold"}}}),
                  "NumaAffinityGroup ns/x: spec.selector.matchExpressions[1].values: must be empty for operator Exists"},
        ErrorCase{"Rule5ValuesAreStrings",
                  WithExpression({{"key", "tier"}, {"operator", "In"}, {"values", {"gold", 7}}}),
                  "NumaAffinityGroup ns/x: spec.selector.matchExpressions[1].values[1]: expected a string, got integer"},
        ErrorCase{"Rule6AnUnknownPolicyIsRefused", Edited([](json& g) { g["spec"]["policy"] = "tightest"; }),
                  R"(NumaAffinityGroup ns/x: spec.policy: "tightest" is not one of same-numa, nearest, spread)"},
        ErrorCase{"Rule6ThePolicyIsAString", Edited([](json& g) { g["spec"]["policy"] = 1; }),
                  "NumaAffinityGroup ns/x: spec.policy: 1 is not one of same-numa, nearest, spread"}),
    [](const ::testing::TestParamInfo<ErrorCase>& p) { return p.param.name; });

TEST(StatusPatchTest, SetsTheWholeStatusWithMemberCountAndConditionStatusAsText) {
  NumaAffinityGroupStatus status;
  status.observed_generation = 3;
  status.members = {{"db-0", "n1", {0}, 4}, {"db-1", "n1", {0, 1}, 8}, {"web-0", "n2", {}, 0}};
  status.numa_nodes_spanned = 2;
  status.moves_made = 5;
  status.conditions = {{"Aligned", false, "SplitAcrossNuma", "db-1 spans NUMA nodes 0 and 1", "2026-12-03T02:49:07Z"}};
  EXPECT_EQ(EncodeStatusPatch(status), json::parse(R"({"status": {
    "observedGeneration": 3,
    "memberCount": 3,
    "members": [{"pod": "db-0", "node": "n1", "numaNodes": [0], "cpus": 4},
                {"pod": "db-1", "node": "n1", "numaNodes": [0, 1], "cpus": 8},
                {"pod": "web-0", "node": "n2", "numaNodes": [], "cpus": 0}],
    "numaNodesSpanned": 2,
    "movesMade": 5,
    "conditions": [{"type": "Aligned", "status": "False", "reason": "SplitAcrossNuma",
                    "message": "db-1 spans NUMA nodes 0 and 1", "lastTransitionTime": "2026-12-03T02:49:07Z"}]}})"));
}

TEST(StatusPatchTest, AnEmptyStatusClearsTheListsRatherThanLeavingThemOut) {
  const json patch = EncodeStatusPatch({});
  EXPECT_EQ(patch["status"]["members"], json::array());
  EXPECT_EQ(patch["status"]["conditions"], json::array());
  EXPECT_EQ(patch["status"]["memberCount"], 0);
}

}  // namespace
}  // namespace huygens::kube

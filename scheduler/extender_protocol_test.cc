#include "scheduler/extender_protocol.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::scheduler {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const json kPod = {{"metadata", {{"name", "web"}, {"namespace", "default"}, {"uid", "u1"}}}, {"spec", json::object()}};

TEST(ExtenderProtocol, NodeNamesRequestIsAnsweredWithNodeNamesAndBothFailureMaps) {
  auto args = ParseExtenderArgs(json{{"pod", kPod}, {"nodenames", {"a", "b", "c"}}}.dump(), "filter");
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_THAT(args->node_names, ElementsAre("a", "b", "c"));
  EXPECT_FALSE(args->node_items.has_value());
  FilterVerdict v{.passed = {"a"}, .failed = {{"b", "Insufficient cpu"}}, .failed_unresolvable = {{"c", "gone"}}};
  EXPECT_EQ(json::parse(RenderFilterResult(*args, v)),
            json::parse(R"({"nodenames":["a"],"failedNodes":{"b":"Insufficient cpu"},
                            "failedAndUnresolvableNodes":{"c":"gone"}})"));
}

TEST(ExtenderProtocol, KubeSchedulersOwnFieldNamesAreRead) {
  // kube-scheduler v1.35.4 marshals extender/v1's untagged Go structs: field names as written,
  // a nil NodeList as null (nodeCacheCapable: true).
  auto args = ParseExtenderArgs(json{{"Pod", kPod}, {"Nodes", nullptr}, {"NodeNames", {"a", "b"}}}.dump(), "filter");
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_THAT(args->node_names, ElementsAre("a", "b"));
  EXPECT_EQ(args->pod["metadata"]["name"], "web");
  auto listed = ParseExtenderArgs(
      json{{"Pod", kPod}, {"Nodes", {{"Items", {{{"metadata", {{"name", "a"}}}}}}}}, {"NodeNames", nullptr}}.dump(),
      "prioritize");
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(listed->node_names, ElementsAre("a"));
  // Go's decoder ignores case: so does the bind verb's.
  auto bind = ParseBindingArgs(R"({"podName":"web","podnamespace":"default","PODUID":"u1","node":"n0"})");
  ASSERT_TRUE(bind.ok()) << bind.status();
  EXPECT_EQ(bind->pod_uid, "u1");
  EXPECT_EQ(bind->node, "n0");
}

TEST(ExtenderProtocol, NodeListRequestIsAnsweredWithTheSurvivingItemsUnchanged) {
  json a = {{"metadata", {{"name", "a"}, {"labels", {{"x", "1"}}}}}};
  json b = {{"metadata", {{"name", "b"}}}};
  auto args = ParseExtenderArgs(json{{"pod", kPod}, {"nodes", {{"items", {a, b}}}}}.dump(), "filter");
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_THAT(args->node_names, ElementsAre("a", "b"));
  json reply = json::parse(RenderFilterResult(*args, FilterVerdict{.passed = {"b"}}));
  EXPECT_FALSE(reply.contains("nodenames"));
  EXPECT_EQ(reply["nodes"]["items"], json::array({b}));
  EXPECT_EQ(reply["nodes"]["kind"], "NodeList");
}

TEST(ExtenderProtocol, AnErrorIsReportedInTheFilterResult) {
  auto args = ParseExtenderArgs(json{{"pod", kPod}, {"nodenames", json::array()}}.dump(), "filter");
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(json::parse(RenderFilterResult(*args, FilterVerdict{.error = "not synced"})),
            json::parse(R"({"nodenames":[],"error":"not synced"})"));
}

TEST(ExtenderProtocol, PrioritiesAndBindingResultsUseKubeSchedulersFieldNames) {
  EXPECT_EQ(json::parse(RenderHostPriorityList({{"a", 10}, {"b", 0}})),
            json::parse(R"([{"host":"a","score":10},{"host":"b","score":0}])"));
  EXPECT_EQ(json::parse(RenderBindingResult("")), json::parse(R"({"Error":""})"));
  auto args = ParseBindingArgs(R"({"PodName":"web","PodNamespace":"default","PodUID":"u1","Node":"n0"})");
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->pod_name, "web");
  EXPECT_EQ(args->pod_namespace, "default");
  EXPECT_EQ(args->pod_uid, "u1");
  EXPECT_EQ(args->node, "n0");
}

TEST(ExtenderProtocol, MalformedBodiesAreErrorsNamingTheField) {
  struct Case {
    std::string body;
    std::string field;
  };
  const Case cases[] = {
      {"", "body: not valid JSON"},
      {"[1]", "body: not a JSON object"},
      {json{{"nodenames", {"a"}}}.dump(), "pod: missing"},
      {json{{"pod", 3}, {"nodenames", {"a"}}}.dump(), "pod: not an object"},
      {json{{"pod", {{"spec", json::object()}}}, {"nodenames", {"a"}}}.dump(), "pod.metadata"},
      {json{{"pod", {{"metadata", {{"name", "x"}}}}}, {"nodenames", {"a"}}}.dump(), "pod.spec"},
      {json{{"pod", kPod}}.dump(), "exactly one of them"},
      {json{{"pod", kPod}, {"nodenames", {"a"}}, {"nodes", {{"items", json::array()}}}}.dump(), "exactly one of them"},
      {json{{"pod", kPod}, {"nodenames", "a"}}.dump(), "nodenames: not an array"},
      {json{{"pod", kPod}, {"nodes", {{"items", {{{"metadata", {{"name", 1}}}}}}}}}.dump(), "nodes.items[0].metadata.name"},
  };
  for (const Case& c : cases) {
    auto args = ParseExtenderArgs(c.body, "filter");
    ASSERT_FALSE(args.ok()) << c.body;
    EXPECT_THAT(std::string(args.status().message()), HasSubstr(c.field)) << c.body;
    EXPECT_THAT(std::string(args.status().message()), HasSubstr("extender filter request")) << c.body;
  }
  EXPECT_THAT(std::string(ParseBindingArgs(R"({"PodName":"w","PodNamespace":"d","PodUID":"","Node":"n"})").status().message()),
              HasSubstr("PodUID"));
  EXPECT_THAT(std::string(ParseBindingArgs(R"({"PodName":"w","PodNamespace":"d","PodUID":"u"})").status().message()),
              HasSubstr("Node"));
}

}  // namespace
}  // namespace huygens::scheduler

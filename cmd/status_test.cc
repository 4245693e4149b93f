// `huygens status` against the fake API server (kube/testing): NodeResourceTopology objects as
// the agent publishes them and pods as the scheduler and the agent annotate them.
#include <string>

#include "base/wire_names.h"
#include "cmd/run_huygens.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "nlohmann/json.hpp"
#include "topology/nrt.h"
#include "topology/testing/machines.h"

namespace {

using huygens::CpuSet;
using huygens::cmd::testing::RunHuygens;
using huygens::kube::testing::FakeApiServer;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNrtResource[] = "noderesourcetopologies.topology.node.k8s.io";

json Pod(const std::string& name, const std::string& node, const std::string& allocation,
         const std::string& status) {
  json annotations = {{huygens::kAllocationAnnotation, allocation}};
  if (!status.empty()) annotations[huygens::kAllocationStatusAnnotation] = status;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"annotations", annotations}}},
          {"spec", {{"nodeName", node}, {"containers", {{{"name", "app"}, {"image", "app"}}}}}}};
}

class StatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    // n1: DualSocketHT (NUMA node 0: CPUs 0-5,12-17; node 1: 6-11,18-23; core c = {c, c+12}),
    // system pool 0,12; the agent published 1,13 (a's) and 5,17 (kubelet's) as exclusive.
    const huygens::CpuTopology dual = huygens::testing::DualSocketHT();
    huygens::NrtInput n1{.node_name = "n1", .topology = &dual, .system_cpus = CpuSet{0, 12},
                         .exclusive_cpus = CpuSet{1, 5, 13, 17}, .policy = "single-numa-node"};
    ASSERT_TRUE(server_->Create(kNrtResource, *huygens::BuildNrt(n1)).ok());
    const huygens::CpuTopology single = huygens::testing::SingleSocketHT();
    huygens::NrtInput n2{.node_name = "n2", .topology = &single};
    ASSERT_TRUE(server_->Create(kNrtResource, *huygens::BuildNrt(n2)).ok());
    // Listed in name order: a-web (mark a), b-db (b), c-bad (c).
    ASSERT_TRUE(server_->Create("pods", Pod("a-web", "n1",
        R"({"version":1,"node":"n1","numaNodes":[0],"containers":[{"name":"app","cpuset":"1,13","mems":"0"}]})",
        R"({"version":1,"state":"applied","reason":"","observed":{"containers":{"app":"1,13"}}})")).ok());
    ASSERT_TRUE(server_->Create("pods", Pod("b-db", "n1",
        R"({"version":1,"node":"n1","numaNodes":[1],"containers":[{"name":"app","cpuset":"6-7,18-19","mems":"1"}]})",
        R"({"version":1,"state":"conflict","reason":"cpu 6 is held by another container","observed":{}})")).ok());
    ASSERT_TRUE(server_->Create("pods", Pod("c-bad", "n1", "{", "")).ok());
    ASSERT_TRUE(server_->Create("pods", Pod("elsewhere", "n2",
        R"({"version":1,"node":"n2","numaNodes":[0],"containers":[{"name":"app","cpuset":"1,5","mems":"0"}]})",
        "")).ok());
  }

  huygens::cmd::testing::RunResult Status(const std::string& flags) {
    return RunHuygens("status --master " + server_->url() + " " + flags);
  }

  std::unique_ptr<FakeApiServer> server_;
};

TEST_F(StatusTest, TheCpuMapMarksWhoHoldsEachCpu) {
  const auto r = Status("--node n1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("node n1  (topology policy single-numa-node, scope container, mode allocatable)\n"));
  EXPECT_THAT(r.out, HasSubstr("core 0    cpus 0(S),12(S)\n"));
  EXPECT_THAT(r.out, HasSubstr("core 1    cpus 1(a),13(a)\n"));
  EXPECT_THAT(r.out, HasSubstr("core 2    cpus 2,14\n"));
  EXPECT_THAT(r.out, HasSubstr("core 5    cpus 5(K),17(K)\n"));
  EXPECT_THAT(r.out, HasSubstr("core 6    cpus 6(b),18(b)\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("node n2")));
}

TEST_F(StatusTest, ListsFreeCpusPerNumaNodeEveryPodAndTheProblems) {
  const auto r = Status("--node n1");
  EXPECT_THAT(r.out, HasSubstr("free on NUMA node 0: 6 CPUs \"2-4,14-16\"\n"));
  EXPECT_THAT(r.out, HasSubstr("free on NUMA node 1: 8 CPUs \"8-11,20-23\"\n"));
  EXPECT_THAT(r.out, HasSubstr("  a default/a-web: NUMA node 0, cpuset 1,13 (app 1,13) [applied]\n"));
  EXPECT_THAT(r.out, HasSubstr("  b default/b-db: NUMA node 1, cpuset 6-7,18-19 (app 6-7,18-19) [conflict]\n"));
  EXPECT_THAT(r.out, HasSubstr("problems:\n  default/b-db: conflict: cpu 6 is held by another container\n"
                               "  default/c-bad: allocation: huygens.io/allocation: "));
  EXPECT_THAT(r.out, Not(HasSubstr("a-web: applied")));
}

TEST_F(StatusTest, WithoutNodeEveryNodeIsShown) {
  const auto r = Status("");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("node n1  "));
  EXPECT_THAT(r.out, HasSubstr("node n2  (topology policy none, scope container, mode allocatable)\n"));
  EXPECT_THAT(r.out, HasSubstr("core 1    cpus 1(a),5(a)\n"));
}

TEST_F(StatusTest, JsonHasTheSameFactsPerNode) {
  const auto r = Status("--node n1 --output json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json out = json::parse(r.out);
  ASSERT_EQ(out["nodes"].size(), 1u);
  const json& n1 = out["nodes"][0];
  EXPECT_EQ(n1["name"], "n1");
  EXPECT_EQ(n1["topologyPolicy"], "single-numa-node");
  EXPECT_EQ(n1["pools"]["system"], "0,12");
  EXPECT_EQ(n1["pools"]["exclusive"], "1,5-7,13,17-19");
  EXPECT_EQ(n1["numaNodes"][0]["free"], "2-4,14-16");
  EXPECT_EQ(n1["numaNodes"][1]["freeCount"], 8);
  ASSERT_EQ(n1["pods"].size(), 3u);
  EXPECT_EQ(n1["pods"][0]["mark"], "a");
  EXPECT_EQ(n1["pods"][0]["allocation"]["containers"][0]["cpuset"], "1,13");
  EXPECT_EQ(n1["pods"][0]["problem"], false);
  EXPECT_EQ(n1["pods"][1]["state"], "conflict");
  EXPECT_EQ(n1["pods"][1]["problem"], true);
  EXPECT_TRUE(n1["pods"][2].contains("allocationError"));
}

TEST_F(StatusTest, ANodeWithoutHuygensAnnotationsIsShownWithItsErrorAndExitsOne) {
  json nrt = *server_->Get(kNrtResource, "", "n2");
  nrt["metadata"].erase("annotations");
  nrt["metadata"]["name"] = "plain";
  nrt["metadata"].erase("resourceVersion");
  nrt["metadata"].erase("uid");
  ASSERT_TRUE(server_->Create(kNrtResource, nrt).ok());
  const auto r = Status("");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("node plain: "));
  EXPECT_THAT(r.out, HasSubstr("huygens.io/cpu-topology"));
}

TEST_F(StatusTest, AnUnknownNodeIsAnErrorNamingIt) {
  const auto r = RunHuygens("status --master " + server_->url() + " --node nope", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("huygens status: "));
  EXPECT_THAT(r.out, HasSubstr("nope"));
}

}  // namespace

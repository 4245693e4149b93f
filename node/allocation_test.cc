#include "node/allocation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/status.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;

TEST(Allocation, TheDesignExampleParsesAndPrintsBackIdentically) {
  const std::string text =
      R"({"version":1,"node":"n1","numaNodes":[0],"containers":[{"name":"app","cpuset":"4-7","mems":"0"}]})";
  auto a = AllocationFromJson(text, "uid-1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->pod_uid, "uid-1");
  EXPECT_EQ(a->node, "n1");
  EXPECT_EQ(a->containers.at(0).cpuset, CpuSet::Range(4, 7));
  EXPECT_TRUE(a->containers.at(0).exclusive);
  EXPECT_EQ(AllocationToJson(*a), text);
}

TEST(Allocation, InitSidecarAndSharedFlagsRoundTrip) {
  const std::string text =
      R"({"version":1,"node":"n1","numaNodes":[0,1],"containers":[{"name":"i","cpuset":"1","mems":"0","init":true},{"name":"s","cpuset":"2","mems":"0","init":true,"restartable":true},{"name":"w","cpuset":"3-9","mems":"0-1","exclusive":false}]})";
  auto a = AllocationFromJson(text, "u");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->containers[1].restartable);
  EXPECT_FALSE(a->containers[2].exclusive);
  EXPECT_EQ(AllocationToJson(*a), text);
}

TEST(Allocation, DescriptionNamesTheNumaNodesTheCpusetAndEachContainersShare) {
  struct Case {
    const char* name;
    const char* text;
    const char* description;
  };
  const Case cases[] = {
      {"one container on one NUMA node",
       R"({"version":1,"node":"n1","numaNodes":[0],"containers":[{"name":"app","cpuset":"4-7","mems":"0"}]})",
       "NUMA node 0, cpuset 4-7 (app 4-7)"},
      {"an init container reusing the app's CPUs and a sidecar",
       R"({"version":1,"node":"n1","numaNodes":[0],"containers":[{"name":"i","cpuset":"4-7","mems":"0","init":true},{"name":"s","cpuset":"8","mems":"0","init":true,"restartable":true},{"name":"app","cpuset":"4-7","mems":"0"}]})",
       "NUMA node 0, cpuset 4-8 (i 4-7, s 8, app 4-7)"},
      {"two NUMA nodes and a shared container",
       R"({"version":1,"node":"n1","numaNodes":[0,1],"containers":[{"name":"app","cpuset":"0-1,32-33","mems":"0-1"},{"name":"log","cpuset":"2-31","mems":"0-1","exclusive":false}]})",
       "NUMA nodes 0-1, cpuset 0-1,32-33 (app 0-1,32-33, log shared)"},
      {"only shared containers",
       R"({"version":1,"node":"n1","numaNodes":[],"containers":[{"name":"log","cpuset":"2-31","mems":"0-1","exclusive":false}]})",
       "no exclusive CPUs (log shared)"},
  };
  for (const Case& c : cases) {
    auto a = AllocationFromJson(c.text, "u");
    ASSERT_TRUE(a.ok()) << c.name << ": " << a.status();
    EXPECT_EQ(DescribeAllocation(*a), c.description) << c.name;
  }
}

TEST(Allocation, ErrorsNameTheField) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"{", "huygens.io/allocation: [json.exception.parse_error"},
      {R"({"node":"n","numaNodes":[],"containers":[]})", "version: missing"},
      {R"({"version":2,"node":"n","numaNodes":[],"containers":[]})", "version: 2 is not supported"},
      {R"({"version":1,"numaNodes":[],"containers":[]})", "node: missing"},
      {R"({"version":1,"node":"n","numaNodes":[-1],"containers":[]})", "numaNodes[0]"},
      {R"({"version":1,"node":"n","numaNodes":[0,0],"containers":[]})", "repeats"},
      {R"({"version":1,"node":"n","numaNodes":[],"containers":[{"name":"a","cpuset":"4-","mems":"0"}]})",
       "containers[0].cpuset"},
      {R"({"version":1,"node":"n","numaNodes":[],"containers":[{"name":"a","cpuset":"4","mems":"0","init":1}]})",
       "containers[0].init: expected true or false"},
      {R"({"version":1,"node":"n","numaNodes":[],"containers":[{"name":"a","cpuset":"4","mems":"0","restartable":true}]})",
       "containers[0].restartable"},
      {R"({"version":1,"node":"n","numaNodes":[],"containers":[{"name":"a","cpuset":"4","mems":"0"},{"name":"a","cpuset":"5","mems":"0"}]})",
       "containers[1].name"},
  };
  for (const Case& c : cases) {
    auto a = AllocationFromJson(c.text, "u");
    ASSERT_FALSE(a.ok()) << c.text;
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(c.error)) << c.text;
    EXPECT_THAT(std::string(a.status().message()), HasSubstr("huygens.io/allocation"));
  }
}

TEST(Allocation, ErrorsReadLikeEveryJsonReaderAfterTheAnnotationsName) {
  auto a = AllocationFromJson(
      R"({"version":1,"node":"n","numaNodes":[0],"containers":[{"name":"a","cpuset":"4","mems":"0","exclusive":"no"}]})",
      "u");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Msg(a.status()),
            "huygens.io/allocation: containers[0].exclusive: expected true or false, got string");
}

}  // namespace
}  // namespace huygens

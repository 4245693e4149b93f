#include "cri/verbose_info.h"

#include "gtest/gtest.h"

namespace huygens::cri {
namespace {

// Shaped like containerd 1.6's ContainerStatus(verbose) info["info"] (fields trimmed).
constexpr const char* kContainerdInfo = R"({
  "sandboxID": "5f1c",
  "pid": 4242,
  "removing": false,
  "snapshotKey": "abc",
  "runtimeSpec": {
    "ociVersion": "1.0.2-dev",
    "linux": {
      "resources": {
        "cpu": {"shares": 512, "quota": 50000, "period": 100000, "cpus": "0-1", "mems": "0"},
        "memory": {"limit": 268435456}
      },
      "cgroupsPath": "/kubepods/burstable/pod1/abc"
    }
  }
})";

TEST(VerboseInfoTest, ReadsPidCgroupsPathAndResources) {
  absl::StatusOr<VerboseInfo> info = ParseVerboseInfo(kContainerdInfo);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->pid, 4242);
  EXPECT_EQ(info->cgroups_path, "/kubepods/burstable/pod1/abc");
  EXPECT_EQ(info->resources.cpu_shares, 512);
  EXPECT_EQ(info->resources.cpu_quota, 50000);
  EXPECT_EQ(info->resources.cpu_period, 100000);
  EXPECT_EQ(info->resources.cpuset_cpus, "0-1");
  EXPECT_EQ(info->resources.cpuset_mems, "0");
  EXPECT_EQ(info->resources.memory_limit, 268435456);
  EXPECT_FALSE(info->resources.memory_swap.has_value());
}

TEST(VerboseInfoTest, AStoppedContainerHasNoPid) {
  absl::StatusOr<VerboseInfo> info = ParseVerboseInfo(R"({"pid": 0})");
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->pid.has_value());
  EXPECT_TRUE(info->cgroups_path.empty());
}

TEST(VerboseInfoTest, FieldsOfTheWrongTypeCountAsAbsent) {
  absl::StatusOr<VerboseInfo> info = ParseVerboseInfo(
      R"({"pid": "4242", "runtimeSpec": {"linux": {"cgroupsPath": 7,
          "resources": {"cpu": {"shares": 18446744073709551615, "quota": -1}}}}})");
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->pid.has_value());
  EXPECT_TRUE(info->cgroups_path.empty());
  EXPECT_FALSE(info->resources.cpu_shares.has_value()) << "above INT64_MAX";
  EXPECT_EQ(info->resources.cpu_quota, -1);
}

TEST(VerboseInfoTest, TextThatIsNotAJsonObjectIsAnError) {
  EXPECT_EQ(ParseVerboseInfo("{").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseVerboseInfo("[1]").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseVerboseInfo("").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace huygens::cri

#include "cri/cgroup_path.h"

#include <string>

#include "gtest/gtest.h"

namespace huygens::cri {
namespace {

struct PathCase {
  const char* name;
  const char* cgroups_path;
  const char* want;  // nullptr: an InvalidArgument error
};

class CgroupsPathTest : public ::testing::TestWithParam<PathCase> {};

TEST_P(CgroupsPathTest, ConvertsTheSpecPathToACgroupPath) {
  const PathCase& c = GetParam();
  absl::StatusOr<std::string> got = CgroupsPathToCgroup(c.cgroups_path);
  if (c.want == nullptr) {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << c.cgroups_path;
  } else {
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, c.want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, CgroupsPathTest,
    ::testing::Values(
        PathCase{"CgroupfsDriverPathIsKeptAsIs", "/kubepods/burstable/poduid-1/abc",
                 "/kubepods/burstable/poduid-1/abc"},
        PathCase{"CgroupfsDriverPathIsNormalised", "//kubepods//besteffort/pod1/abc/",
                 "/kubepods/besteffort/pod1/abc"},
        PathCase{"SystemdDriverExpandsTheSliceAndMakesAScope",
                 "kubepods-burstable-pod1234.slice:cri-containerd:abc",
                 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/"
                 "cri-containerd-abc.scope"},
        PathCase{"SystemdDriverGuaranteedPodSitsUnderKubepods",
                 "kubepods-pod1.slice:crio:abc", "/kubepods.slice/kubepods-pod1.slice/crio-abc.scope"},
        PathCase{"SystemdEmptySliceMeansSystemSlice", ":docker:abc",
                 "/system.slice/docker-abc.scope"},
        PathCase{"SystemdNameThatIsASliceIsUsedAsIs", "kubepods.slice::kubepods-x.slice",
                 "/kubepods.slice/kubepods-x.slice"},
        PathCase{"SystemdRootSlice", "-.slice:p:abc", "/p-abc.scope"},
        PathCase{"EmptyIsAnError", "", nullptr},
        PathCase{"DotDotCannotLeaveTheRoot", "/kubepods/../../etc", nullptr},
        PathCase{"RelativePathWithoutColonsIsAnError", "kubepods/pod1/abc", nullptr},
        PathCase{"SliceWithDoubleDashIsAnError", "kubepods--x.slice:p:abc", nullptr},
        PathCase{"SliceWithoutSuffixIsAnError", "kubepods:p:abc", nullptr},
        PathCase{"UnitNameWithSlashIsAnError", "kubepods.slice:p:a/b", nullptr}),
    [](const ::testing::TestParamInfo<PathCase>& param_info) { return param_info.param.name; });

TEST(ExpandSliceTest, EachDashSpellsAParentSlice) {
  EXPECT_EQ(ExpandSlice("a-b-c.slice").value(), "/a.slice/a-b.slice/a-b-c.slice");
  EXPECT_EQ(ExpandSlice("-.slice").value(), "/");
  EXPECT_FALSE(ExpandSlice("a-.slice").ok());
  EXPECT_FALSE(ExpandSlice(".slice").ok());
}

TEST(ProcCgroupTest, V1TakesTheLineWhoseControllersHoldCpuset) {
  const char* text =
      "12:pids:/kubepods/pod1/abc\n"
      "4:cpu,cpuacct:/kubepods/pod1/abc\n"
      "3:cpuset:/kubepods/pod1/abc\n"
      "1:name=systemd:/kubepods/pod1/abc\n"
      "0::/\n";
  EXPECT_EQ(CpusetPathFromProcCgroup(text, CgroupVersion::kV1).value(), "/kubepods/pod1/abc");
}

TEST(ProcCgroupTest, V2TakesTheZeroLine) {
  EXPECT_EQ(CpusetPathFromProcCgroup("0::/kubepods.slice/x.scope\n", CgroupVersion::kV2).value(),
            "/kubepods.slice/x.scope");
}

TEST(ProcCgroupTest, ACpusetNamedLikeAPrefixDoesNotMatch) {
  EXPECT_EQ(CpusetPathFromProcCgroup("3:cpusetx:/a\n", CgroupVersion::kV1).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ProcCgroupTest, AMissingLineIsNotFoundAndAMalformedLineIsInvalid) {
  EXPECT_EQ(CpusetPathFromProcCgroup("0::/\n", CgroupVersion::kV1).status().code(),
            absl::StatusCode::kNotFound);
  absl::Status bad = CpusetPathFromProcCgroup("3-cpuset\n", CgroupVersion::kV1).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("line 1"), absl::string_view::npos) << bad;
  EXPECT_EQ(CpusetPathFromProcCgroup("3:cpuset:/a/../..\n", CgroupVersion::kV1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace huygens::cri

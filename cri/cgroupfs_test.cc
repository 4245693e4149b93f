#include "cri/cgroupfs.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cri/cgroupfs_runtime.h"
#include "cri/testing/cgroup_tree.h"
#include "gtest/gtest.h"

namespace huygens::cri {
namespace {

using ::huygens::cri::testing::CgroupTree;

CpuSet Cpus(std::string_view list) { return CpuSet::Parse(list).value(); }

// Records, in order, the files closed after writing in a set of folders (inotify keeps one
// queue per descriptor, so events of different folders come out in the order they happened).
class WriteOrder {
 public:
  WriteOrder() : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}
  ~WriteOrder() { ::close(fd_); }
  void Watch(const std::string& dir, const std::string& label) {
    const int wd = inotify_add_watch(fd_, dir.c_str(), IN_CLOSE_WRITE);
    ASSERT_GE(wd, 0) << dir;
    if (static_cast<size_t>(wd) >= labels_.size()) labels_.resize(static_cast<size_t>(wd) + 1);
    labels_[static_cast<size_t>(wd)] = label;
  }
  // "label/file" per write, oldest first.
  std::vector<std::string> Events() {
    std::vector<std::string> out;
    alignas(inotify_event) char buf[8192];
    ssize_t n;
    while ((n = ::read(fd_, buf, sizeof buf)) > 0) {
      for (char* p = buf; p < buf + n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(p);
        out.push_back(labels_[static_cast<size_t>(ev->wd)] + "/" + ev->name);
        p += sizeof(inotify_event) + ev->len;
      }
    }
    return out;
  }

 private:
  int fd_;
  std::vector<std::string> labels_;
};

TEST(CgroupfsWriterTest, DetectsV2FromCgroupControllersAndV1Otherwise) {
  CgroupTree v1;
  v1.MakeDir("cpuset");
  EXPECT_EQ(CgroupfsWriter({.root = v1.root()}).version(), CgroupVersion::kV1);
  CgroupTree v2;
  v2.Write("cgroup.controllers", "cpuset cpu memory\n");
  EXPECT_EQ(CgroupfsWriter({.root = v2.root()}).version(), CgroupVersion::kV2);
}

TEST(CgroupfsWriterTest, V1CgroupfsDriverWritesAndReadsTheContainerCpuset) {
  CgroupTree tree;
  tree.V1Cgroup("/kubepods", "0-7", "0-1");
  tree.V1Cgroup("/kubepods/burstable", "0-7", "0-1");
  tree.V1Cgroup("/kubepods/burstable/pod1", "0-7", "0-1");
  tree.V1Cgroup("/kubepods/burstable/pod1/abc", "0-7", "0-1");
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  ASSERT_TRUE(w.SetCpuset("/kubepods/burstable/pod1/abc", Cpus("2-3"), Cpus("1")).ok());
  EXPECT_EQ(tree.Read("cpuset/kubepods/burstable/pod1/abc/cpuset.cpus"), "2-3");
  EXPECT_EQ(tree.Read("cpuset/kubepods/burstable/pod1/abc/cpuset.mems"), "1");
  EXPECT_EQ(tree.Read("cpuset/kubepods/burstable/pod1/cpuset.cpus"), "0-7")
      << "a parent that already holds the CPUs is not written";
  absl::StatusOr<CpusetResources> read = w.ReadCpuset("/kubepods/burstable/pod1/abc");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->cpus, Cpus("2-3"));
  EXPECT_EQ(read->mems, Cpus("1"));
}

TEST(CgroupfsWriterTest, V2SystemdDriverWritesCpusetAndReadsTheEffectiveFiles) {
  CgroupTree tree;
  tree.Write("cgroup.controllers", "cpuset cpu memory\n");
  const std::string scope =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/"
      "cri-containerd-abc.scope";
  tree.V2Cgroup("/kubepods.slice", "", "0-7");
  tree.V2Cgroup("/kubepods.slice/kubepods-burstable.slice", "", "0-7");
  tree.V2Cgroup("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice", "",
                "0-7");
  tree.V2Cgroup(scope, "", "4-5");
  CgroupfsWriter w({.root = tree.root()});
  ASSERT_EQ(w.version(), CgroupVersion::kV2);
  ASSERT_TRUE(w.SetCpuset(scope, Cpus("2-3"), Cpus("0")).ok());
  EXPECT_EQ(tree.Read(scope.substr(1) + "/cpuset.cpus"), "2-3");
  EXPECT_EQ(tree.Read(scope.substr(1) + "/cpuset.mems"), "0");
  EXPECT_EQ(tree.Read("kubepods.slice/cpuset.cpus"), "") << "an empty v2 parent inherits";
  // The kernel truth on v2 is the .effective file (the test tree still says 4-5).
  EXPECT_EQ(w.ReadCpuset(scope)->cpus, Cpus("4-5"));
}

TEST(CgroupfsWriterTest, V2WidensAParentWhoseConfiguredCpusetLacksTheCpus) {
  CgroupTree tree;
  tree.Write("cgroup.controllers", "cpuset\n");
  tree.V2Cgroup("/kubepods", "0-1", "0-1");
  tree.V2Cgroup("/kubepods/pod1", "", "0-1");
  tree.V2Cgroup("/kubepods/pod1/abc", "", "0-1");
  CgroupfsWriter w({.root = tree.root()});
  ASSERT_TRUE(w.SetCpuset("/kubepods/pod1/abc", Cpus("3"), Cpus("0")).ok());
  EXPECT_EQ(tree.Read("kubepods/cpuset.cpus"), "0-1,3");
  EXPECT_EQ(tree.Read("kubepods/pod1/cpuset.cpus"), "");
}

TEST(CgroupfsWriterTest, V1WideningWritesTheParentsFirstTopDown) {
  CgroupTree tree;
  tree.V1Cgroup("/kubepods", "0-1", "0");
  tree.V1Cgroup("/kubepods/pod1", "0-1", "0");
  tree.V1Cgroup("/kubepods/pod1/abc", "0", "0");
  WriteOrder order;
  order.Watch(tree.Path("cpuset/kubepods"), "kubepods");
  order.Watch(tree.Path("cpuset/kubepods/pod1"), "pod1");
  order.Watch(tree.Path("cpuset/kubepods/pod1/abc"), "abc");
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  ASSERT_TRUE(w.SetCpuset("/kubepods/pod1/abc", Cpus("2-3"), Cpus("0")).ok());
  EXPECT_EQ(tree.Read("cpuset/kubepods/cpuset.cpus"), "0-3");
  EXPECT_EQ(tree.Read("cpuset/kubepods/pod1/cpuset.cpus"), "0-3");
  EXPECT_EQ(tree.Read("cpuset/kubepods/pod1/abc/cpuset.cpus"), "2-3");
  EXPECT_EQ(order.Events(),
            (std::vector<std::string>{"kubepods/cpuset.cpus", "pod1/cpuset.cpus",
                                      "abc/cpuset.cpus", "abc/cpuset.mems"}));
}

TEST(CgroupfsWriterTest, V1NarrowingWritesTheChildrenFirstBottomUp) {
  CgroupTree tree;
  tree.V1Cgroup("/pod1", "0-7", "0");
  tree.V1Cgroup("/pod1/abc", "0-7", "0");
  tree.V1Cgroup("/pod1/abc/inner", "2-7", "0");
  tree.V1Cgroup("/pod1/abc/inner/deeper", "6-7", "0");
  tree.V1Cgroup("/pod1/abc/other", "5", "0");
  WriteOrder order;
  order.Watch(tree.Path("cpuset/pod1/abc"), "abc");
  order.Watch(tree.Path("cpuset/pod1/abc/inner"), "inner");
  order.Watch(tree.Path("cpuset/pod1/abc/inner/deeper"), "deeper");
  order.Watch(tree.Path("cpuset/pod1/abc/other"), "other");
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  ASSERT_TRUE(w.SetCpuset("/pod1/abc", Cpus("0-3,7"), Cpus("0")).ok());
  EXPECT_EQ(tree.Read("cpuset/pod1/abc/inner/cpuset.cpus"), "2-3,7");
  EXPECT_EQ(tree.Read("cpuset/pod1/abc/inner/deeper/cpuset.cpus"), "7");
  EXPECT_EQ(tree.Read("cpuset/pod1/abc/other/cpuset.cpus"), "5")
      << "a child left with no CPU is not written; the kernel's EBUSY on the parent says why";
  std::vector<std::string> events = order.Events();
  auto pos = [&](const std::string& e) {
    return std::find(events.begin(), events.end(), e) - events.begin();
  };
  ASSERT_EQ(events.size(), 4u) << ::testing::PrintToString(events);
  EXPECT_LT(pos("deeper/cpuset.cpus"), pos("inner/cpuset.cpus"));
  EXPECT_LT(pos("inner/cpuset.cpus"), pos("abc/cpuset.cpus"));
  EXPECT_LT(pos("abc/cpuset.cpus"), pos("abc/cpuset.mems"));
}

TEST(CgroupfsWriterTest, AMissingCgroupIsNotFoundAndNamesTheFolder) {
  CgroupTree tree;
  tree.MakeDir("cpuset");
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  absl::Status s = w.SetCpuset("/kubepods/pod1/gone", Cpus("0"), Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("cpuset/kubepods/pod1/gone"), absl::string_view::npos) << s;
  EXPECT_EQ(w.ReadCpuset("/kubepods/pod1/gone").status().code(), absl::StatusCode::kNotFound);
}

TEST(CgroupfsWriterTest, AMissingFileIsNotFoundWithTheFileAndErrno) {
  CgroupTree tree;
  tree.Write("cpuset/pod1/cpuset.cpus", "0-1");  // no cpuset.mems
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  absl::Status s = w.SetCpuset("/pod1", Cpus("0"), Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("pod1/cpuset.mems"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("ENOENT"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("cpuset.cpus was already set"), absl::string_view::npos) << s;
}

TEST(CgroupfsWriterTest, AFileTheKernelWouldRefuseIsAFailedPreconditionWithErrno) {
  CgroupTree tree;
  tree.MakeDir("cpuset/pod1/cpuset.cpus");  // a folder where the file should be: EISDIR
  tree.Write("cpuset/pod1/cpuset.mems", "0");
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  absl::Status s = w.SetCpuset("/pod1", Cpus("0"), Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("EISDIR"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("pod1/cpuset.cpus"), absl::string_view::npos) << s;
}

TEST(CgroupfsWriterTest, AReadOnlyFileIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes read-only files; needs a non-root user";
  CgroupTree tree;
  tree.V1Cgroup("/pod1", "0-1", "0");
  std::filesystem::permissions(tree.Path("cpuset/pod1/cpuset.cpus"),
                               std::filesystem::perms::owner_read);
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  absl::Status s = w.SetCpuset("/pod1", Cpus("0"), Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("EACCES"), absl::string_view::npos) << s;
}

TEST(CgroupfsWriterTest, BadInputIsInvalidArgument) {
  CgroupTree tree;
  tree.V1Cgroup("/pod1", "0-1", "0");
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  EXPECT_EQ(w.SetCpuset("/pod1", CpuSet(), Cpus("0")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.SetCpuset("/pod1/../..", Cpus("0"), Cpus("0")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.SetCpuset("/", Cpus("0"), Cpus("0")).code(), absl::StatusCode::kInvalidArgument);
  tree.Write("cpuset/pod1/cpuset.cpus", "zero");
  EXPECT_EQ(w.ReadCpuset("/pod1").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CgroupfsWriterTest, FindsAContainerCgroupUnderBothDrivers) {
  CgroupTree tree;
  tree.V1Cgroup("/kubepods/burstable/pod1/abc", "0", "0");
  tree.V1Cgroup("/kubepods.slice/kubepods-pod2.slice/cri-containerd-def.scope", "0", "0");
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  EXPECT_EQ(w.FindContainer("abc").value(), "/kubepods/burstable/pod1/abc");
  EXPECT_EQ(w.FindContainer("def").value(),
            "/kubepods.slice/kubepods-pod2.slice/cri-containerd-def.scope");
  EXPECT_EQ(w.FindContainer("zzz").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(w.FindContainer("a/b").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CgroupfsWriterTest, ProcsListsThePidsInFileOrder) {
  CgroupTree tree;
  tree.Write("cpuset/pod1/cgroup.procs", "42\n7\n");
  CgroupfsWriter w({.root = tree.root(), .version = CgroupVersion::kV1});
  EXPECT_EQ(w.Procs("/pod1").value(), (std::vector<int64_t>{42, 7}));
  tree.Write("cpuset/pod1/cgroup.procs", "42\nx\n");
  EXPECT_EQ(w.Procs("/pod1").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CgroupfsRuntimeTest, SetsReadsAndFindsThePidByContainerId) {
  CgroupTree tree;
  tree.V1Cgroup("/kubepods", "0-3", "0");
  tree.V1Cgroup("/kubepods/pod1", "0-3", "0");
  tree.V1Cgroup("/kubepods/pod1/abc", "0-3", "0");
  tree.Write("cpuset/kubepods/pod1/abc/cgroup.procs", "99\n");
  CgroupfsRuntime rt({.root = tree.root(), .version = CgroupVersion::kV1});
  ContainerInfo c;
  c.id = "abc";
  absl::Status s = rt.UpdateCpuset(c, Cpus("1"), Cpus("0"));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(rt.ReadCpuset(c)->cpus, Cpus("1"));
  EXPECT_EQ(rt.Pid(c), 99);
  EXPECT_EQ(rt.ListContainers().status().code(), absl::StatusCode::kUnimplemented);
  ContainerInfo gone;
  gone.id = "nope";
  EXPECT_EQ(rt.UpdateCpuset(gone, Cpus("1"), Cpus("0")).code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(rt.Pid(gone).has_value());
}

}  // namespace
}  // namespace huygens::cri

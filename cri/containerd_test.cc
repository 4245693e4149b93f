// The runtime layer against a real containerd + runc (CTest label `containerd`): cpusets set
// through CRI and through cgroupfs reach the container's process. Skips only when not root or
// when containerd, runc or busybox-static are missing. Uses CPUs 0 and 1 (every machine has 2).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "cri/cgroupfs.h"
#include "cri/cgroupfs_runtime.h"
#include "cri/cri_runtime.h"
#include "cri/fallback_runtime.h"
#include "cri/testing/containerd_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::cri {
namespace {

using ::huygens::cri::testing::ContainerdEnv;
using ::huygens::cri::testing::EnvPod;

CpuSet Cpus(std::string_view list) { return CpuSet::Parse(list).value(); }

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The Cpus_allowed_list line of /proc/<pid>/status: the affinity the kernel gives the process.
std::string CpusAllowed(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Cpus_allowed_list:")) {
      std::string v = line.substr(line.find(':') + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "<no Cpus_allowed_list>";
}

// The cpus a runtime reads for a container, or the error text (never aborts: an abort would skip
// the environment's teardown).
std::string CpusOf(ContainerRuntime& runtime, const ContainerInfo& container) {
  absl::StatusOr<CpusetResources> read = runtime.ReadCpuset(container);
  return read.ok() ? read->cpus.ToString() : "<error: " + read.status().ToString() + ">";
}

// The machine's online CPUs must include 0 and 1 for these tests.
bool HasTwoCpus() {
  absl::StatusOr<CpuSet> online = CpuSet::Parse(ReadText("/sys/devices/system/cpu/online"));
  return online.ok() && Cpus("0-1").IsSubsetOf(*online);
}

class ContainerdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::optional<std::string> why = ContainerdEnv::Unsupported()) GTEST_SKIP() << *why;
    ASSERT_TRUE(HasTwoCpus()) << "these tests need CPUs 0 and 1 online";
    absl::StatusOr<std::unique_ptr<ContainerdEnv>> env = ContainerdEnv::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = *std::move(env);
    absl::StatusOr<EnvPod> pod = env_->RunPodSandbox("uid-e2e-1", "web", "default");
    ASSERT_TRUE(pod.ok()) << pod.status();
    pod_ = *pod;
    absl::StatusOr<std::string> id = env_->StartContainer(pod_, "app");
    ASSERT_TRUE(id.ok()) << id.status() << "\n" << env_->LogTail();
    container_.id = *id;
    cri_ = std::make_unique<CriRuntime>(env_->RuntimeOptions());
  }

  // The container's cgroup folder in the cpuset hierarchy.
  std::string CpusetDir(const std::string& id) const {
    return cri_->cgroupfs().CpusetDir(pod_.cgroup_parent + "/" + id);
  }
  int64_t PidOf(const std::string& id) const {
    absl::StatusOr<int64_t> pid = env_->ContainerPid(id);
    EXPECT_TRUE(pid.ok()) << pid.status();
    return pid.value_or(-1);
  }

  std::unique_ptr<ContainerdEnv> env_;
  EnvPod pod_;
  ContainerInfo container_;
  std::unique_ptr<CriRuntime> cri_;
};

TEST_F(ContainerdTest, ListContainersMapsKubeletLabels) {
  absl::StatusOr<std::vector<ContainerInfo>> list = cri_->ListContainers();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  const ContainerInfo& c = (*list)[0];
  EXPECT_EQ(c.id, container_.id);
  EXPECT_EQ(c.sandbox_id, pod_.sandbox_id);
  EXPECT_EQ(c.pod_uid, "uid-e2e-1");
  EXPECT_EQ(c.pod_name, "web");
  EXPECT_EQ(c.pod_namespace, "default");
  EXPECT_EQ(c.container_name, "app");
  EXPECT_EQ(c.state, ContainerState::kRunning);
  EXPECT_GT(c.created_at_ns, 0);
  absl::StatusOr<std::string> version = cri_->Version();
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_NE(version->find("containerd"), std::string::npos) << *version;
}

TEST_F(ContainerdTest, AHostNetworkSandboxHasNoPodIpAndAPodNetworkNeedsAnEnvironmentWithOne) {
  EXPECT_EQ(pod_.ip, "");
  absl::StatusOr<EnvPod> pod = env_->RunPodSandbox("uid-e2e-2", "db", "default", /*pod_network=*/true);
  EXPECT_EQ(pod.status().code(), absl::StatusCode::kFailedPrecondition) << pod.status();
  EXPECT_THAT(std::string(pod.status().message()), ::testing::HasSubstr("pod db: a pod network needs"));
}

TEST_F(ContainerdTest, ACriUpdateReachesTheProcessAndTheCgroupAndKeepsCpuShares) {
  const int64_t pid = PidOf(container_.id);
  ASSERT_EQ(cri_->Pid(container_), pid);
  absl::Status s = cri_->UpdateCpuset(container_, Cpus("1"), Cpus("0"));
  ASSERT_TRUE(s.ok()) << s << "\n" << env_->LogTail();
  EXPECT_EQ(CpusAllowed(pid), "1");
  const std::string dir = CpusetDir(container_.id);
  const bool v1 = cri_->cgroupfs().version() == CgroupVersion::kV1;
  EXPECT_EQ(ReadText(dir + (v1 ? "/cpuset.cpus" : "/cpuset.cpus.effective")), "1");
  absl::StatusOr<CpusetResources> read = cri_->ReadCpuset(container_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->cpus, Cpus("1"));
  EXPECT_EQ(read->mems, Cpus("0"));
  if (v1) {
    // CPU shares 512 were set at creation; an update of the cpuset must not reset them.
    EXPECT_EQ(ReadText(cri_->cgroupfs().root() + "/cpu" + pod_.cgroup_parent + "/" +
                       container_.id + "/cpu.shares"),
              "512");
  }
  ASSERT_TRUE(cri_->UpdateCpuset(container_, Cpus("0-1"), Cpus("0")).ok());
  EXPECT_EQ(CpusAllowed(pid), "0-1");
}

TEST_F(ContainerdTest, ACgroupfsUpdateReachesTheProcess) {
  const int64_t pid = PidOf(container_.id);
  CgroupfsRuntime cgroupfs;
  absl::Status s = cgroupfs.UpdateCpuset(container_, Cpus("0"), Cpus("0"));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(CpusAllowed(pid), "0");
  EXPECT_EQ(CpusOf(cgroupfs, container_), "0");
  EXPECT_EQ(CpusOf(*cri_, container_), "0") << "CRI reads the same kernel truth";
  EXPECT_EQ(cgroupfs.Pid(container_), pid);
}

TEST_F(ContainerdTest, ARestartedContainerHasANewPidWhoseCpusetIsReadAgain) {
  const int64_t old_pid = PidOf(container_.id);
  ASSERT_TRUE(cri_->UpdateCpuset(container_, Cpus("1"), Cpus("0")).ok());
  absl::StatusOr<std::string> next = env_->RestartContainer(pod_, container_.id);
  ASSERT_TRUE(next.ok()) << next.status();
  ContainerInfo restarted;
  restarted.id = *next;
  const int64_t new_pid = PidOf(*next);
  EXPECT_NE(new_pid, old_pid);
  // A new container starts on its parent's cpuset, not on what the old one had.
  EXPECT_EQ(CpusOf(*cri_, restarted), "0-1");
  EXPECT_EQ(CpusAllowed(new_pid), "0-1");
  ASSERT_TRUE(cri_->UpdateCpuset(restarted, Cpus("1"), Cpus("0")).ok());
  EXPECT_EQ(CpusAllowed(new_pid), "1");
  absl::StatusOr<std::vector<ContainerInfo>> list = cri_->ListContainers();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  for (const ContainerInfo& c : *list) {
    EXPECT_EQ(c.state, c.id == *next ? ContainerState::kRunning : ContainerState::kExited);
    EXPECT_EQ(c.attempt, c.id == *next ? 1u : 0u);
  }
}

TEST_F(ContainerdTest, ARuntimeThatIsDownIsUnavailableQuicklyAndCgroupfsTakesOver) {
  const int64_t pid = PidOf(container_.id);
  env_->StopContainerd();
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = cri_->UpdateCpuset(container_, Cpus("1"), Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find(container_.id), absl::string_view::npos) << s;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  FallbackRuntime fallback(std::make_unique<CriRuntime>(env_->RuntimeOptions()),
                           std::make_unique<CgroupfsRuntime>());
  ASSERT_TRUE(fallback.UpdateCpuset(container_, Cpus("1"), Cpus("0")).ok());
  EXPECT_EQ(fallback.last_used(), "cgroupfs");
  EXPECT_EQ(CpusAllowed(pid), "1") << "the container kept running without containerd";
  ASSERT_TRUE(env_->RestartContainerd().ok()) << env_->LogTail();
  // The client reconnects by itself once containerd is back (its reconnect backoff is at most
  // 1 s; a loaded CI machine may need a few attempts).
  std::string cpus;
  for (int i = 0; i < 150; ++i) {
    cpus = CpusOf(*cri_, container_);
    if (cpus == "1") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(cpus, "1");
}

TEST_F(ContainerdTest, CpusOutsideTheParentCpusetAreAClearErrorThatCgroupfsCanFix) {
  if (cri_->cgroupfs().version() != CgroupVersion::kV1) {
    GTEST_SKIP() << "on cgroup v2 a parent does not refuse a child's wider cpuset";
  }
  const int64_t pid = PidOf(container_.id);
  // Narrow the pod's cgroup to CPU 0 (CgroupfsWriter narrows the containers first).
  ASSERT_TRUE(cri_->cgroupfs().SetCpuset(pod_.cgroup_parent, Cpus("0"), Cpus("0")).ok());
  absl::Status s = cri_->UpdateCpuset(container_, Cpus("1"), Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("UpdateContainerResources " + container_.id),
            absl::string_view::npos)
      << s;
  EXPECT_EQ(CpusAllowed(pid), "0");
  // The fallback widens the pod's cgroup first, then the container's.
  FallbackRuntime fallback(std::make_unique<CriRuntime>(env_->RuntimeOptions()),
                           std::make_unique<CgroupfsRuntime>());
  absl::Status fixed = fallback.UpdateCpuset(container_, Cpus("1"), Cpus("0"));
  ASSERT_TRUE(fixed.ok()) << fixed;
  EXPECT_EQ(fallback.last_used(), "cgroupfs");
  EXPECT_EQ(CpusAllowed(pid), "1");
}

TEST_F(ContainerdTest, CpusTheMachineDoesNotHaveAreRefusedWithTheKernelsErrno) {
  absl::StatusOr<CpuSet> online = CpuSet::Parse(ReadText("/sys/devices/system/cpu/online"));
  ASSERT_TRUE(online.ok());
  const CpuSet missing{online->Max() + 1};
  absl::Status s = CgroupfsRuntime().UpdateCpuset(container_, missing, Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  // EINVAL for an offline CPU, ERANGE beyond the kernel's CPU count.
  EXPECT_TRUE(s.message().find("EINVAL") != absl::string_view::npos ||
              s.message().find("ERANGE") != absl::string_view::npos)
      << s;
  EXPECT_NE(s.message().find("cpuset.cpus"), absl::string_view::npos) << s;
  absl::Status via_cri = cri_->UpdateCpuset(container_, missing, Cpus("0"));
  EXPECT_FALSE(via_cri.ok());
  EXPECT_NE(via_cri.message().find(container_.id), absl::string_view::npos) << via_cri;
}

// The v1 write order on the real kernel, without containerd: a child cannot be wider than its
// parent (EINVAL) and a parent cannot be narrower than a child (EBUSY).
TEST(CgroupfsKernelTest, V1OrderWidensParentsFirstAndNarrowsChildrenFirst) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create cgroups";
  CgroupfsWriter w;
  if (w.version() != CgroupVersion::kV1) GTEST_SKIP() << "cgroup v1 only";
  ASSERT_TRUE(HasTwoCpus());
  const std::string base = "/huygens-order-" + std::to_string(::getpid());
  const std::string a = base + "/a";
  const std::string b = a + "/b";
  for (const std::string& cg : {base, a, b}) {
    ASSERT_EQ(::mkdir(w.CpusetDir(cg).c_str(), 0755), 0) << w.CpusetDir(cg);
    ASSERT_TRUE(w.SetCpuset(cg, Cpus("0"), Cpus("0")).ok()) << cg;
  }
  struct Cleanup {
    const CgroupfsWriter& w;
    std::vector<std::string> dirs;
    ~Cleanup() {
      for (const std::string& d : dirs) ::rmdir(w.CpusetDir(d).c_str());
    }
  } cleanup{w, {b, a, base}};
  // Widening b to 0-1 needs a and base widened first.
  absl::Status widen = w.SetCpuset(b, Cpus("0-1"), Cpus("0"));
  ASSERT_TRUE(widen.ok()) << widen;
  EXPECT_EQ(ReadText(w.CpusetDir(base) + "/cpuset.cpus"), "0-1");
  EXPECT_EQ(ReadText(w.CpusetDir(a) + "/cpuset.cpus"), "0-1");
  EXPECT_EQ(ReadText(w.CpusetDir(b) + "/cpuset.cpus"), "0-1");
  // Narrowing base to 1 needs b and a narrowed first.
  absl::Status narrow = w.SetCpuset(base, Cpus("1"), Cpus("0"));
  ASSERT_TRUE(narrow.ok()) << narrow;
  EXPECT_EQ(ReadText(w.CpusetDir(b) + "/cpuset.cpus"), "1");
  EXPECT_EQ(ReadText(w.CpusetDir(a) + "/cpuset.cpus"), "1");
  // A child left with nothing in common makes the kernel refuse: EBUSY, naming the file.
  absl::Status refused = w.SetCpuset(a, Cpus("0"), Cpus("0"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find(w.CpusetDir(a) + "/cpuset.cpus"), absl::string_view::npos)
      << refused;
  EXPECT_NE(refused.message().find("EBUSY"), absl::string_view::npos) << refused;
}

}  // namespace
}  // namespace huygens::cri

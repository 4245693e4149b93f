#include "cri/fallback_runtime.h"

#include <memory>
#include <sstream>

#include "cri/cgroupfs_runtime.h"
#include "cri/testing/cgroup_tree.h"
#include "cri/testing/fake_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace huygens::cri {
namespace {

using ::huygens::cri::testing::CgroupTree;
using ::huygens::cri::testing::FakeRuntime;

CpuSet Cpus(std::string_view list) { return CpuSet::Parse(list).value(); }

TEST(ShouldFallBackTest, OnlyErrorsCgroupfsCanFixFallBack) {
  EXPECT_TRUE(ShouldFallBack(absl::UnavailableError("down")));
  EXPECT_TRUE(ShouldFallBack(absl::DeadlineExceededError("slow")));
  EXPECT_TRUE(ShouldFallBack(absl::FailedPreconditionError("EBUSY")));
  EXPECT_TRUE(ShouldFallBack(absl::UnknownError("runc failed")));
  EXPECT_TRUE(ShouldFallBack(absl::UnimplementedError("no such call")));
  EXPECT_FALSE(ShouldFallBack(absl::NotFoundError("no container")));
  EXPECT_FALSE(ShouldFallBack(absl::InvalidArgumentError("bad cpuset")));
  EXPECT_FALSE(ShouldFallBack(absl::PermissionDeniedError("EACCES")));
}

// A fake CRI runtime in front of a cgroupfs tree that holds the fake container's cgroup.
class FallbackRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = std::make_unique<FakeRuntime>(Cpus("0-3"), Cpus("0"));
    fake_ = fake.get();
    container_ = fake_->AddPodContainer("uid-1", "default", "web", "app");
    tree_.V1Cgroup("/kubepods", "0-3", "0");
    tree_.V1Cgroup("/kubepods/poduid-1", "0-3", "0");
    tree_.V1Cgroup("/kubepods/poduid-1/" + container_.id, "0-3", "0");
    runtime_ = std::make_unique<FallbackRuntime>(
        std::move(fake), std::make_unique<CgroupfsRuntime>(
                             CgroupfsOptions{.root = tree_.root(), .version = CgroupVersion::kV1}));
  }
  std::string CgroupCpus() const {
    return tree_.Read("cpuset/kubepods/poduid-1/" + container_.id + "/cpuset.cpus");
  }

  CgroupTree tree_;
  FakeRuntime* fake_ = nullptr;
  ContainerInfo container_;
  std::unique_ptr<FallbackRuntime> runtime_;
};

TEST_F(FallbackRuntimeTest, APrimaryThatWorksIsUsedAlone) {
  ASSERT_TRUE(runtime_->UpdateCpuset(container_, Cpus("1"), Cpus("0")).ok());
  EXPECT_EQ(runtime_->last_used(), "fake");
  EXPECT_EQ(fake_->CpusetOf(container_.id)->cpus, Cpus("1"));
  EXPECT_EQ(CgroupCpus(), "0-3") << "cgroupfs untouched";
  EXPECT_EQ(runtime_->counters().primary_ok, 1);
  EXPECT_EQ(runtime_->Name(), "fake+cgroupfs");
}

TEST_F(FallbackRuntimeTest, ARuntimeThatIsDownFallsBackToCgroupfs) {
  fake_->SetDown(true);
  ASSERT_TRUE(runtime_->UpdateCpuset(container_, Cpus("2"), Cpus("0")).ok());
  EXPECT_EQ(runtime_->last_used(), "cgroupfs");
  EXPECT_EQ(runtime_->last_primary_error().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CgroupCpus(), "2");
  absl::StatusOr<CpusetResources> read = runtime_->ReadCpuset(container_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->cpus, Cpus("2"));
  EXPECT_EQ(runtime_->counters().secondary_ok, 2);
  EXPECT_EQ(runtime_->ListContainers().status().code(), absl::StatusCode::kUnavailable)
      << "listing never falls back";
}

TEST_F(FallbackRuntimeTest, AKernelRefusalInTheRuntimeFallsBackToCgroupfs) {
  fake_->FailUpdates(container_.id, "runc update: write cpuset.cpus: device or resource busy");
  ASSERT_TRUE(runtime_->UpdateCpuset(container_, Cpus("3"), Cpus("0")).ok());
  EXPECT_EQ(runtime_->last_used(), "cgroupfs");
  EXPECT_EQ(CgroupCpus(), "3");
}

TEST_F(FallbackRuntimeTest, AFallbackIsLoggedAtDebugLevelNamingThePodContainerAndBothResults) {
  fake_->FailUpdates(container_.id, "runc update: write cpuset.cpus: device or resource busy");
  auto run_at = [&](spdlog::level::level_enum level) {
    std::ostringstream log;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
    const spdlog::level::level_enum before = spdlog::get_level();
    spdlog::default_logger()->sinks().push_back(sink);
    spdlog::set_level(level);
    EXPECT_TRUE(runtime_->UpdateCpuset(container_, Cpus("2"), Cpus("0")).ok());
    spdlog::set_level(before);
    spdlog::default_logger()->sinks().pop_back();
    return log.str();
  };
  const std::string debug = run_at(spdlog::level::debug);
  EXPECT_THAT(debug, ::testing::HasSubstr("pod default/web container app: UpdateCpuset through fake failed (runc "
                                          "update: write cpuset.cpus: device or resource busy); falling back to "
                                          "cgroupfs\n"));
  EXPECT_THAT(debug, ::testing::HasSubstr("pod default/web container app: UpdateCpuset through cgroupfs: ok\n"));
  EXPECT_EQ(run_at(spdlog::level::info), "");
}

TEST_F(FallbackRuntimeTest, AnUnknownContainerDoesNotFallBack) {
  ContainerInfo ghost = container_;
  ghost.id = "ghost";
  EXPECT_EQ(runtime_->UpdateCpuset(ghost, Cpus("1"), Cpus("0")).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(runtime_->last_used(), "fake");
  EXPECT_EQ(runtime_->counters().primary_failed, 1);
}

TEST_F(FallbackRuntimeTest, WhenBothFailTheErrorHasThePrimaryCodeAndBothMessages) {
  fake_->SetDown(true);
  std::filesystem::remove_all(tree_.Path("cpuset/kubepods"));
  absl::Status s = runtime_->UpdateCpuset(container_, Cpus("1"), Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("fake runtime is down"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("fallback cgroupfs"), absl::string_view::npos) << s;
  EXPECT_EQ(runtime_->counters().both_failed, 1);
}

TEST_F(FallbackRuntimeTest, PidComesFromThePrimaryThenTheSecondary) {
  EXPECT_EQ(runtime_->Pid(container_), fake_->Pid(container_));
  tree_.Write("cpuset/kubepods/poduid-1/" + container_.id + "/cgroup.procs", "77\n");
  fake_->SetDown(true);
  EXPECT_EQ(runtime_->Pid(container_), 77);
}

}  // namespace
}  // namespace huygens::cri

#include "cri/testing/fake_runtime.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace huygens::cri::testing {
namespace {

CpuSet Cpus(std::string_view list) { return CpuSet::Parse(list).value(); }

class FakeRuntimeTest : public ::testing::Test {
 protected:
  // A two-socket node: CPUs 0-7, NUMA nodes 0-1.
  FakeRuntime runtime_{Cpus("0-7"), Cpus("0-1")};
};

TEST_F(FakeRuntimeTest, ANewContainerRunsOnTheWholeNodeWithAPid) {
  ContainerInfo c = runtime_.AddPodContainer("uid-1", "default", "web", "app");
  EXPECT_EQ(c.state, ContainerState::kRunning);
  EXPECT_EQ(c.sandbox_id, "sandbox-uid-1");
  absl::StatusOr<CpusetResources> cs = runtime_.ReadCpuset(c);
  ASSERT_TRUE(cs.ok()) << cs.status();
  EXPECT_EQ(cs->cpus, Cpus("0-7"));
  EXPECT_EQ(cs->mems, Cpus("0-1"));
  EXPECT_TRUE(runtime_.Pid(c).has_value());
  absl::StatusOr<std::vector<ContainerInfo>> list = runtime_.ListContainers();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].pod_name, "web");
}

TEST_F(FakeRuntimeTest, UpdateSetsBothCpusAndMemsAndIsRecorded) {
  ContainerInfo c = runtime_.AddPodContainer("uid-1", "default", "web", "app");
  ASSERT_TRUE(runtime_.UpdateCpuset(c, Cpus("2-3"), Cpus("0")).ok());
  EXPECT_EQ(runtime_.CpusetOf(c.id)->cpus, Cpus("2-3"));
  EXPECT_EQ(runtime_.CpusetOf(c.id)->mems, Cpus("0"));
  std::vector<FakeRuntime::UpdateCall> calls = runtime_.Updates();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].container_id, c.id);
  EXPECT_EQ(calls[0].cpus, Cpus("2-3"));
  EXPECT_TRUE(calls[0].result.ok());
  runtime_.ClearUpdates();
  EXPECT_TRUE(runtime_.Updates().empty());
}

TEST_F(FakeRuntimeTest, CpusOutsideTheNodeAreRefusedLikeTheKernelDoes) {
  ContainerInfo c = runtime_.AddPodContainer("uid-1", "default", "web", "app");
  absl::Status s = runtime_.UpdateCpuset(c, Cpus("6-9"), Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("EINVAL"), std::string_view::npos) << s;
  EXPECT_EQ(runtime_.UpdateCpuset(c, Cpus("1"), Cpus("2")).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(runtime_.CpusetOf(c.id)->cpus, Cpus("0-7")) << "a refused update changes nothing";
  EXPECT_EQ(runtime_.Updates().size(), 2u) << "failed calls are recorded too";
}

TEST_F(FakeRuntimeTest, AnUnknownContainerIsNotFound) {
  ContainerInfo ghost;
  ghost.id = "nope";
  EXPECT_EQ(runtime_.UpdateCpuset(ghost, Cpus("0"), Cpus("0")).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(runtime_.ReadCpuset(ghost).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(runtime_.Pid(ghost).has_value());
}

TEST_F(FakeRuntimeTest, ARuntimeThatIsDownFailsEveryCallWithUnavailable) {
  ContainerInfo c = runtime_.AddPodContainer("uid-1", "default", "web", "app");
  runtime_.SetDown(true);
  EXPECT_EQ(runtime_.ListContainers().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(runtime_.UpdateCpuset(c, Cpus("1"), Cpus("0")).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(runtime_.ReadCpuset(c).status().code(), absl::StatusCode::kUnavailable);
  runtime_.SetDown(false);
  EXPECT_TRUE(runtime_.UpdateCpuset(c, Cpus("1"), Cpus("0")).ok());
}

TEST_F(FakeRuntimeTest, AnInjectedFailureRefusesUpdatesUntilCleared) {
  ContainerInfo c = runtime_.AddPodContainer("uid-1", "default", "web", "app");
  runtime_.FailUpdates(c.id, "write cpuset.cpus: Device or resource busy (EBUSY)");
  absl::Status s = runtime_.UpdateCpuset(c, Cpus("1"), Cpus("0"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("EBUSY"), std::string_view::npos);
  EXPECT_EQ(runtime_.CpusetOf(c.id)->cpus, Cpus("0-7"));
  runtime_.ClearFailure(c.id);
  EXPECT_TRUE(runtime_.UpdateCpuset(c, Cpus("1"), Cpus("0")).ok());
}

TEST_F(FakeRuntimeTest, DriftChangesTheCpusetWithoutRecordingAnUpdate) {
  ContainerInfo c = runtime_.AddPodContainer("uid-1", "default", "web", "app");
  ASSERT_TRUE(runtime_.SetCpusetBehindTheAgentsBack(c.id, Cpus("5"), Cpus("1")));
  EXPECT_EQ(runtime_.ReadCpuset(c)->cpus, Cpus("5"));
  EXPECT_EQ(runtime_.ReadCpuset(c)->mems, Cpus("1"));
  EXPECT_TRUE(runtime_.Updates().empty());
}

TEST_F(FakeRuntimeTest, ARestartMakesANewContainerWithTheDefaultCpusetAndTheOldOneExits) {
  ContainerInfo c = runtime_.AddPodContainer("uid-1", "default", "web", "app");
  ASSERT_TRUE(runtime_.UpdateCpuset(c, Cpus("2"), Cpus("0")).ok());
  const int64_t old_pid = *runtime_.Pid(c);
  absl::StatusOr<ContainerInfo> next = runtime_.RestartContainer(c.id);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_NE(next->id, c.id);
  EXPECT_EQ(next->attempt, c.attempt + 1);
  EXPECT_EQ(next->pod_uid, "uid-1");
  EXPECT_EQ(next->container_name, "app");
  EXPECT_EQ(runtime_.CpusetOf(next->id)->cpus, Cpus("0-7"));
  ASSERT_TRUE(runtime_.Pid(*next).has_value());
  EXPECT_NE(*runtime_.Pid(*next), old_pid);
  EXPECT_FALSE(runtime_.Pid(c).has_value());
  std::vector<ContainerInfo> list = runtime_.ListContainers().value();
  auto old_it = std::find_if(list.begin(), list.end(),
                             [&](const ContainerInfo& i) { return i.id == c.id; });
  ASSERT_NE(old_it, list.end());
  EXPECT_EQ(old_it->state, ContainerState::kExited);
  EXPECT_EQ(runtime_.RestartContainer("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(FakeRuntimeTest, RemovedContainersDisappearFromTheList) {
  ContainerInfo c = runtime_.AddPodContainer("uid-1", "default", "web", "app");
  EXPECT_TRUE(runtime_.RemoveContainer(c.id));
  EXPECT_FALSE(runtime_.RemoveContainer(c.id));
  EXPECT_TRUE(runtime_.ListContainers()->empty());
}

TEST_F(FakeRuntimeTest, SetStateControlsThePid) {
  ContainerInfo c = runtime_.AddPodContainer("uid-1", "default", "web", "app");
  ASSERT_TRUE(runtime_.SetState(c.id, ContainerState::kExited));
  EXPECT_FALSE(runtime_.Pid(c).has_value());
  ASSERT_TRUE(runtime_.SetState(c.id, ContainerState::kRunning));
  EXPECT_TRUE(runtime_.Pid(c).has_value());
  EXPECT_FALSE(runtime_.SetState("nope", ContainerState::kRunning));
}

}  // namespace
}  // namespace huygens::cri::testing

// kill -9 and restart: the real huygens-scheduler binary against a fake API server, killed with
// SIGKILL mid-run and started again; the final state must be complete and overlap-free.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "scheduler/test_cluster.h"

namespace huygens::scheduler {
namespace {

using kube::testing::FakeApiServer;

pid_t StartScheduler(const std::string& url, int n) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string log = fmt::format("/tmp/huygens-scheduler-restart-{}-{}.log", getppid(), n);
    FILE* out = freopen(log.c_str(), "w", stdout);
    (void)out;
    dup2(fileno(stdout), 2);
    execl(HUYGENS_SCHEDULER_BIN, HUYGENS_SCHEDULER_BIN, "--master", url.c_str(), "--no-leader-elect",
          "--metrics-address", "127.0.0.1:0", "--log-level", "warn", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

TEST(Restart, KillNineMidRunAndRestartLosesNothingAndNeverDoubleAllocates) {
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok());
  FakeApiServer& s = **server;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(testing::AddMachine(s, fmt::format("n{}", i), 16));
  constexpr int kPods = 150;
  for (int i = 0; i < kPods; ++i) ASSERT_TRUE(s.Create("pods", testing::GuaranteedPod(fmt::format("p{}", i), 2)).ok());

  // Kill twice: once early, once later in the run, at whatever step the scheduler is in.
  int killed_at[2] = {0, 0};
  for (int round = 0; round < 2; ++round) {
    pid_t pid = StartScheduler(s.url(), round);
    ASSERT_GT(pid, 0);
    int target = round == 0 ? kPods / 4 : kPods / 2;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (testing::CheckCluster(s).bound < target && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    killed_at[round] = testing::CheckCluster(s).bound;
  }
  EXPECT_LT(killed_at[1], kPods) << "the second kill came after the end: the test proves less";

  pid_t pid = StartScheduler(s.url(), 2);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (testing::CheckCluster(s).bound < kPods && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "clean exit on SIGTERM";
  testing::ClusterCheck check = testing::CheckCluster(s);
  EXPECT_EQ(check.bound, kPods);
  EXPECT_EQ(check.annotated, kPods);
  EXPECT_THAT(check.problems, ::testing::IsEmpty());
}

}  // namespace
}  // namespace huygens::scheduler

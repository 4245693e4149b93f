// At scale, with a restart: 200 nodes of the simulator's real server presets and 2,000 pods of
// the built-in workload's mix (exclusive and shared, whole and fractional CPUs), scheduled by the
// real huygens-scheduler binary, which is killed with SIGKILL mid-run and started again. Every
// pod must end bound with a valid allocation on its node, and no CPU may be held by two pods.
// Label `apiserver` runs it on the fake store, label `cluster` on the real kube-apiserver (the
// fake forwarding to it, kube/testing/upstream.h), where the Binding, the patches and the
// watches are the real server's.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "scheduler/test_cluster.h"
#include "sim/example.h"

namespace huygens::scheduler {
namespace {

using kube::testing::FakeApiServer;
using nlohmann::json;

constexpr int kNodes = 200;
constexpr int kPods = 2000;

pid_t StartScheduler(const std::string& url, int n) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string log = fmt::format("/tmp/huygens-scheduler-scale-{}-{}.log", getppid(), n);
    FILE* out = freopen(log.c_str(), "w", stdout);
    (void)out;
    dup2(fileno(stdout), 2);
    execl(HUYGENS_SCHEDULER_BIN, HUYGENS_SCHEDULER_BIN, "--master", url.c_str(), "--no-leader-elect",
          "--metrics-address", "127.0.0.1:0", "--log-level", "warn", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

int BoundPods(const FakeApiServer& s) { return testing::CheckCluster(s).bound; }

TEST(Scale, TwoHundredRealShapesTwoThousandPodsAndAKillNineLoseNothing) {
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  FakeApiServer& s = **server;

  auto cluster = sim::MixedShapesCluster(kNodes);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  int64_t cluster_cpus = 0;
  int made = 0;
  for (const sim::NodeGroupSpec& group : cluster->groups) {
    for (int i = 0; i < group.count; ++i) {
      ASSERT_TRUE(testing::AddNode(s, fmt::format("{}-{}", group.name, i), *group.topology)) << group.name;
      cluster_cpus += group.topology->NumCpus();
      ++made;
    }
  }
  ASSERT_EQ(made, kNodes);

  // The built-in workload's template mix, scaled to 2,000 pods; they all stay (no departures
  // happen through the API), which the cluster holds at about a third of its CPUs.
  auto workload = sim::ScaledExampleWorkload(kPods, cluster_cpus, 0.3);
  ASSERT_TRUE(workload.ok()) << workload.status();
  std::vector<sim::PodArrival> arrivals = sim::GenerateArrivals(*workload, 1);
  ASSERT_GE(arrivals.size(), static_cast<std::size_t>(kPods));
  arrivals.resize(kPods);

  // Pods arrive while the first scheduler runs; it is killed a third of the way in.
  pid_t pid = StartScheduler(s.url(), 0);
  ASSERT_GT(pid, 0);
  for (int i = 0; i < kPods; ++i) {
    auto created = s.Create("pods", testing::PodObject(arrivals[static_cast<std::size_t>(i)].pod, fmt::format("pod-{:04}", i)));
    ASSERT_TRUE(created.ok()) << created.status();
  }
  ASSERT_TRUE(testing::WaitFor([&] { return BoundPods(s) >= kPods / 3; }, std::chrono::seconds(300)));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  int bound_at_kill = BoundPods(s);
  EXPECT_LT(bound_at_kill, kPods) << "the kill came after the end: the test proves less";

  pid = StartScheduler(s.url(), 1);
  ASSERT_GT(pid, 0);
  bool all = testing::WaitFor([&] { return BoundPods(s) == kPods; }, std::chrono::seconds(600));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(all) << BoundPods(s) << " of " << kPods << " bound";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "clean exit on SIGTERM";

  testing::ClusterCheck check = testing::CheckCluster(s);
  EXPECT_EQ(check.pods, kPods);
  EXPECT_EQ(check.bound, kPods);
  EXPECT_EQ(check.annotated, kPods) << "every bound pod carries an allocation on its node";
  EXPECT_THAT(check.problems, ::testing::IsEmpty());
}

}  // namespace
}  // namespace huygens::scheduler

// kill -9 and restart: the real huygens-scheduler binary, killed with SIGKILL mid-run and
// started again; the final state must be complete and overlap-free. Label `apiserver` runs them
// on the fake store; `cluster` (HUYGENS_CLUSTER_CONFORMANCE) on the real kube-apiserver through
// the fake's upstream mode (kube/testing/upstream.h), where the Bindings, the watches and the
// resourceVersions are the real server's.
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "scheduler/test_cluster.h"
#include "sim/example.h"

namespace huygens::scheduler {
namespace {

using kube::testing::FakeApiServer;
using nlohmann::json;

// The log of the `n`th scheduler process of test `name`.
std::string Log(const char* name, int n) { return fmt::format("{}/huygens-scheduler-{}-{}.log", ::testing::TempDir(), name, n); }

TEST(StartUp, AnUnknownLogLevelExitsTwoNamingTheFlagAndTheAcceptedValues) {
  // spdlog's from_str read "INFO" as `off`: the scheduler ran with logging silently off.
  const std::string err = fmt::format("{}/log-level.err", ::testing::TempDir());
  // Bounded: a scheduler that accepted the flag would run on (against an unreachable master).
  const int rc = std::system(fmt::format("timeout 20 '{}' --master http://127.0.0.1:1 --log-level INFO 2>'{}'",
                                         HUYGENS_SCHEDULER_BIN, err).c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  std::stringstream text;
  text << std::ifstream(err).rdbuf();
  EXPECT_THAT(text.str(), ::testing::HasSubstr("--log-level: unknown level \"INFO\" (accepted: trace, debug"));
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
    auto scheduler = testing::StartScheduler(HUYGENS_SCHEDULER_BIN, s.url(), Log("restart", round));
    int target = round == 0 ? kPods / 4 : kPods / 2;
    testing::WaitFor([&] { return testing::CheckCluster(s).bound >= target; }, std::chrono::seconds(30),
                     std::chrono::milliseconds(10));
    scheduler->Kill();
    killed_at[round] = testing::CheckCluster(s).bound;
  }
  EXPECT_LT(killed_at[1], kPods) << "the second kill came after the end: the test proves less";

  auto scheduler = testing::StartScheduler(HUYGENS_SCHEDULER_BIN, s.url(), Log("restart", 2));
  testing::WaitFor([&] { return testing::CheckCluster(s).bound == kPods; }, std::chrono::seconds(40));
  EXPECT_EQ(scheduler->Stop(), 0) << "clean exit on SIGTERM";
  testing::ClusterCheck check = testing::CheckCluster(s);
  EXPECT_EQ(check.bound, kPods);
  EXPECT_EQ(check.annotated, kPods);
  EXPECT_THAT(check.problems, ::testing::IsEmpty());
}

// At scale: 200 nodes of the simulator's real server presets and 2,000 pods of the built-in
// workload's mix (exclusive and shared, whole and fractional CPUs, init containers), killed a
// third of the way in. Polls once a second: listing 2,000 pods is the test's own load.
TEST(Restart, TwoHundredRealShapesTwoThousandPodsAndAKillNineLoseNothing) {
  constexpr int kNodes = 200;
  constexpr int kPods = 2000;
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  FakeApiServer& s = **server;
  auto cluster = sim::MixedShapesCluster(kNodes);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  int64_t cluster_cpus = 0;
  int made = 0;
  for (const sim::NodeGroupSpec& group : cluster->groups) {
    for (int i = 0; i < group.count; ++i, ++made) {
      ASSERT_TRUE(testing::AddNode(s, fmt::format("{}-{}", group.name, i), *group.topology)) << group.name;
      cluster_cpus += group.topology->NumCpus();
    }
  }
  ASSERT_EQ(made, kNodes);
  // The template mix scaled to 2,000 pods, which all stay (no departures through the API): the
  // cluster ends about a third full.
  auto workload = sim::ScaledExampleWorkload(kPods, cluster_cpus, 0.3);
  ASSERT_TRUE(workload.ok()) << workload.status();
  std::vector<sim::PodArrival> arrivals = sim::GenerateArrivals(*workload, 1);
  ASSERT_GE(arrivals.size(), static_cast<std::size_t>(kPods));
  arrivals.resize(kPods);
  // They must all fit: at most half of the user CPUs requested.
  int64_t requested_milli = 0;
  for (const sim::PodArrival& a : arrivals) {
    for (const ContainerSpec& c : a.pod.spec.containers) requested_milli += c.cpu_request_milli;
  }
  const int64_t user_cpus = cluster_cpus - 2 * kNodes;  // systemCpuCount 2
  ASSERT_LE(requested_milli, 500 * user_cpus) << requested_milli / 1000 << " CPUs asked of " << user_cpus;

  // The simulator's node groups bind packed unless they say otherwise (sim/cluster_spec.h), and
  // the mix is made for that: its pods have 1-CPU containers that full-cores (the scheduler's
  // default) cannot place on SMT machines.
  //
  // Leader election is on, as in production: the restarted scheduler waits out the killed
  // one's lease (3 s here), which is what gives a Binding the killed one had sent time to land
  // before anyone decides again. (Restarted at once without leader election, such a Binding can
  // land after the new scheduler listed the pod as pending: docs/scheduler-service.md.)
  const std::string config = ::testing::TempDir() + "/huygens-scheduler-scale.yaml";
  std::ofstream(config) << "profiles:\n- defaultBindPolicy: packed\n"
                        << "leaderElection: {leaderElect: true, leaseDuration: 3s, renewDeadline: 2s, retryPeriod: 500ms}\n";
  const std::vector<std::string> flags = {"--config", config, "--log-level", "info"};
  auto count_bound = [&] { return testing::CheckCluster(s).bound; };
  auto unbound = [&] { return testing::UnboundPods(s, "default"); };
  constexpr auto kPoll = std::chrono::seconds(1);
  auto scheduler = testing::StartScheduler(HUYGENS_SCHEDULER_BIN, s.url(), Log("scale", 0), flags, true);
  // The kill comes while pods still arrive (two thirds created, a third bound), so the killed
  // scheduler is mid-stream on any server speed, and the last third arrives to nobody.
  int bound_at_kill = 0;
  for (int i = 0; i < kPods; ++i) {
    if (i == 2 * kPods / 3) {
      ASSERT_TRUE(testing::WaitFor([&] { return count_bound() >= kPods / 3; }, std::chrono::seconds(300), kPoll))
          << count_bound() << " bound\n" << unbound();
      scheduler->Kill();
      bound_at_kill = count_bound();
    }
    auto created = s.Create("pods", testing::PodObject(arrivals[static_cast<std::size_t>(i)].pod, fmt::format("pod-{:04}", i)));
    ASSERT_TRUE(created.ok()) << created.status();
  }

  scheduler = testing::StartScheduler(HUYGENS_SCHEDULER_BIN, s.url(), Log("scale", 1), flags, true);
  EXPECT_TRUE(testing::WaitFor([&] { return count_bound() == kPods; }, std::chrono::seconds(300), kPoll))
      << count_bound() << " of " << kPods << " bound (" << bound_at_kill << " at the kill)\n"
      << unbound();
  // Within Stop's 10 s: the events still queued behind the client's rate limit are dropped.
  EXPECT_EQ(scheduler->Stop(), 0) << "clean exit on SIGTERM";
  testing::ClusterCheck check = testing::CheckCluster(s);
  EXPECT_EQ(check.pods, kPods);
  EXPECT_EQ(check.bound, kPods);
  EXPECT_EQ(check.annotated, kPods) << "every bound pod carries an allocation on its node";
  EXPECT_THAT(check.problems, ::testing::IsEmpty());
}

}  // namespace
}  // namespace huygens::scheduler

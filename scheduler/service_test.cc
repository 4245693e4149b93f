#include "scheduler/service.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/api_error.h"
#include "kube/informer.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/tcp_proxy.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/test_client.h"
#include "sched/plugins.h"
#include "scheduler/event_sink.h"
#include "scheduler/test_cluster.h"
#include "spdlog/sinks/base_sink.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "topology/testing/machines.h"

namespace huygens::scheduler {
namespace {

using kube::testing::FakeApiServer;
using testing::AddMachine;
using testing::CheckCluster;
using testing::GuaranteedPod;
using testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeApiServer::Start(server_options_);
    ASSERT_TRUE(server.ok());
    server_ = *std::move(server);
  }
  std::unique_ptr<kube::Client> NewClient() { return kube::testing::ClientFor(*server_, &clock_); }

  std::unique_ptr<SchedulerService> NewService(kube::Client* client, serving::MetricsRegistry* registry,
                                               bool leader_elect = false, std::string identity = "a") {
    ServiceOptions options;
    options.config.leader_election.leader_elect = leader_elect;
    options.config.leader_election.lease_duration = std::chrono::milliseconds(3000);
    options.config.leader_election.renew_deadline = std::chrono::milliseconds(2000);
    options.config.leader_election.retry_period = std::chrono::milliseconds(200);
    options.identity = std::move(identity);
    options.clock = &clock_;
    if (configure_) configure_(options.config);
    auto service = SchedulerService::Create(client, options, registry);
    EXPECT_TRUE(service.ok()) << service.status();
    return service.ok() ? *std::move(service) : nullptr;
  }

  int Bound() { return CheckCluster(*server_).bound; }

  // From now until the test ends, what spdlog's default logger writes is copied into log_.
  void CaptureLog() {
    spdlog::default_logger()->sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    capturing_ = true;
  }
  void TearDown() override {
    if (capturing_) spdlog::default_logger()->sinks().pop_back();
    // Lets the pods DeleteHeld held go, also after a failure (on the real server they would
    // otherwise outlive the test).
    for (const std::string& name : held_) {
      (void)server_->MergePatch("pods", "default", name, {{"metadata", {{"finalizers", nullptr}}}});
    }
  }
  // Deletes pod `name` (in default) held by a finalizer, so it stays, being deleted (its
  // metadata.deletionTimestamp set by the server), until the test ends.
  void DeleteHeld(const std::string& name) {
    held_.push_back(name);
    ASSERT_TRUE(server_->MergePatch("pods", "default", name, {{"metadata", {{"finalizers", {"test.huygens.io/hold"}}}}}).ok());
    auto writer = NewClient();
    ASSERT_TRUE(writer->Delete(kube::Pods(), "default", name).ok());
    ASSERT_TRUE(server_->Get("pods", "default", name)->at("metadata").contains("deletionTimestamp"));
  }
  // Whether log_ (CaptureLog) holds `text`.
  bool Logged(const std::string& text) const { return log_.str().find(text) != std::string::npos; }

  // Polls `done` as WaitFor does, moving the service's fake clock on by kTick at each poll that
  // finds it false, so the queue's backoff and unschedulable timeouts pass without a sleep.
  static constexpr std::chrono::milliseconds kTick{500};
  template <typename F>
  bool Eventually(F done, std::chrono::milliseconds limit = std::chrono::seconds(40)) {
    return WaitFor(
        [&] {
          if (done()) return true;
          clock_.Advance(kTick);
          return false;
        },
        limit);
  }
  // The attempts counted with `result` so far (huygens_scheduler_schedule_attempts_total).
  static bool Counted(const serving::MetricsRegistry& registry, const char* result) {
    return registry.Expose().find(fmt::format("huygens_scheduler_schedule_attempts_total{{result=\"{}\"}}", result)) !=
           std::string::npos;
  }

  // Schedules an 8-CPU pod "a" over nodes "small" (4 CPUs) and "big" (16 CPUs) with spdlog's
  // default logger at `level`, and returns what it logged.
  std::string LogOfOneAttempt(spdlog::level::level_enum level) {
    CaptureLog();
    const spdlog::level::level_enum before = spdlog::get_level();
    spdlog::set_level(level);
    EXPECT_TRUE(AddMachine(*server_, "small", 4));
    EXPECT_TRUE(AddMachine(*server_, "big", 16));
    auto client = NewClient();
    serving::MetricsRegistry registry;
    auto service = NewService(client.get(), &registry);
    service->Start();
    // The pod comes once both nodes are in the cache, so that the attempt sees both.
    EXPECT_TRUE(Eventually([&] {
      return registry.Expose().find("huygens_scheduler_cache_size{type=\"nodes\"} 2") != std::string::npos;
    }));
    EXPECT_TRUE(server_->Create("pods", GuaranteedPod("a", 8)).ok());
    EXPECT_TRUE(Eventually([&] { return Bound() == 1; }));
    service->Stop();
    spdlog::set_level(before);
    return log_.str();
  }

  // Adds node n0 of `cpus` CPUs, starts service_ (on client_, with registry_), waits until it
  // has synced, holds every Binding and creates Guaranteed pod "a" (2 CPUs); returns once a's
  // Binding is held (in flight).
  void StartWithTheBindingOfAHeld(int cpus) {
    ASSERT_TRUE(AddMachine(*server_, "n0", cpus));
    client_ = NewClient();
    service_ = NewService(client_.get(), &registry_);
    ASSERT_NE(service_, nullptr);
    service_->Start();
    ASSERT_TRUE(WaitFor([&] { return service_->Synced(); }));
    server_->HoldRequests("create", "pods/binding");
    ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2)).ok());
    ASSERT_TRUE(WaitFor([&] { return server_->HeldRequests() == 1; }));
  }


  // Waits until one pod is bound and stops `service`; expects that pod to be "b", on n0, and
  // "a" pending.
  void ExpectBBoundAndANot(SchedulerService& service) {
    ASSERT_TRUE(Eventually([&] { return Bound() == 1; }));
    service.Stop();
    EXPECT_EQ(server_->Get("pods", "default", "b")->at("spec").value("nodeName", ""), "n0");
    EXPECT_EQ(server_->Get("pods", "default", "a")->at("spec").value("nodeName", ""), "");
    EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
  }

  std::ostringstream log_;  // CaptureLog's
  bool capturing_ = false;
  std::vector<std::string> held_;  // DeleteHeld's pods
  std::function<void(SchedulerConfig&)> configure_;  // NewService's changes to the defaults
  huygens::testing::FakeClock clock_;  // the client's and the service's
  kube::testing::FakeApiServerOptions server_options_;  // SetUp's
  std::unique_ptr<FakeApiServer> server_;
  // The service of StartWithTheBindingOfAHeld and RebalancerTest::Start (after server_: they
  // go first).
  std::unique_ptr<kube::Client> client_;
  serving::MetricsRegistry registry_;
  std::unique_ptr<SchedulerService> service_;
};

TEST_F(ServiceTest, HundredsOfPodsOnTensOfNodesEndBoundAnnotatedAndWithoutOverlap) {
  for (int i = 0; i < 24; ++i) ASSERT_TRUE(AddMachine(*server_, fmt::format("n{}", i), 16));
  for (int i = 0; i < 180; ++i) {
    ASSERT_TRUE(server_->Create("pods", GuaranteedPod(fmt::format("p{}", i), 2)).ok());
  }
  // A pod of another scheduler is left alone.
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("other", 2, "default-scheduler")).ok());
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return Bound() == 180; })) << Bound();
  service->Stop();
  testing::ClusterCheck check = CheckCluster(*server_);
  EXPECT_EQ(check.annotated, 180);
  EXPECT_THAT(check.problems, IsEmpty());
  EXPECT_TRUE(server_->Get("pods", "default", "other")->at("spec").value("nodeName", "").empty());
  std::string metrics = registry.Expose();
  EXPECT_THAT(metrics, ::testing::HasSubstr("huygens_scheduler_schedule_attempts_total{result=\"scheduled\"} 180"));
}

TEST_F(ServiceTest, AFrozenApiServerConnectionFailsReadinessNamingEachStaleInformerUntilTheyReconnect) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  auto proxy = kube::testing::TcpProxy::Start(server_->port());
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  kube::RestConfig config = kube::testing::TestRestConfig((*proxy)->url());
  config.watch_idle_timeout = std::chrono::seconds(1);
  auto client = kube::testing::ClientFor(config, &clock_);
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  EXPECT_THAT(std::string(service->Ready().message()), HasSubstr("has not started"));
  service->Start();
  ASSERT_TRUE(Eventually([&] { return service->Ready().ok(); })) << service->Ready();

  (*proxy)->Freeze();
  clock_.Advance(std::chrono::seconds(1) + kube::kStaleMargin + std::chrono::seconds(1));
  absl::Status stale = service->Ready();
  EXPECT_EQ(stale.code(), absl::StatusCode::kUnavailable);
  for (const char* informer : {"nodes", "noderesourcetopologies", "pods"}) {
    EXPECT_THAT(std::string(stale.message()),
                HasSubstr(fmt::format("{} informer heard nothing from the API server for", informer)));
  }
  EXPECT_TRUE(service->Healthy().ok()) << "liveness is not readiness";

  (*proxy)->Thaw();
  EXPECT_TRUE(WaitFor([&] { return service->Ready().ok(); })) << service->Ready();
  service->Stop();
}

// A server that sends no bookmarks: a quiet watch is heard only when its objects change.
class QuietServerTest : public ServiceTest {
 protected:
  QuietServerTest() { server_options_.bookmark_interval = std::chrono::hours(1); }
};

TEST_F(QuietServerTest, AStaleCachePausesSchedulingAndItResumesByItselfOnceTheWatchesAreBack) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  CaptureLog();
  // The informers list, and the API server takes their watches and sends nothing, as a frozen
  // connection would. A watch it answered after the clock moved on would count as heard then
  // (the real server answers a forwarded watch some milliseconds after the list).
  server_->HoldRequests("watch", "*");
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return service->Ready().ok(); })) << service->Ready();

  // Every informer is past its stale bound (the default idle limit, 120 s, + the margin), whether
  // or not the scheduling thread has looked at them since they synced.
  clock_.Advance(std::chrono::minutes(3));
  ASSERT_TRUE(WaitFor([&] { return Logged("scheduling paused"); })) << log_.str();
  // The pods' and NRTs' watches are answered (heard again); the nodes' watch stays silent.
  server_->HoldRequests("watch", "nodes");
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2)).ok());
  // The pods informer heard the pod and the loop queued it; the nodes informer is still stale.
  ASSERT_TRUE(WaitFor([&] {
    return registry.Expose().find("huygens_scheduler_pending_pods{queue=\"active\"} 1") != std::string::npos;
  })) << registry.Expose();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Bound(), 0) << "bound from a stale cache";
  EXPECT_THAT(std::string(service->Ready().message()), HasSubstr("nodes informer heard nothing"));

  // The nodes' watch is answered too (as after a frozen connection was cut): heard again.
  server_->ReleaseRequests();
  ASSERT_TRUE(WaitFor([&] { return Bound() == 1; })) << log_.str();
  service->Stop();
  const std::string text = log_.str();
  EXPECT_THAT(text, ::testing::ContainsRegex(
                        "scheduling paused: no pod is reserved or bound until the informers are current again: "
                        "nodes informer heard nothing from the API server for 18[0-9] s \\(bound 150 s\\); "
                        "noderesourcetopologies informer heard nothing"));
  EXPECT_THAT(text, HasSubstr("scheduling resumed: the noderesourcetopologies, nodes, pods informer(s) heard from the "
                              "API server again (paused for "));
  // Once each way.
  EXPECT_EQ(text.find("scheduling paused"), text.rfind("scheduling paused"));
  EXPECT_EQ(text.find("scheduling resumed"), text.rfind("scheduling resumed"));
}

TEST_F(ServiceTest, MetricsCarryTheBuildInfoWithTheVersion) {
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return service->Synced(); }));
  service->Stop();
  EXPECT_THAT(registry.Expose(),
              ::testing::HasSubstr("huygens_build_info{version=\"" + std::string(Version()) + "\"} 1\n"));
}

TEST_F(ServiceTest, WatchDropsGoneConflictsAndServerErrorsChangeNothingInTheOutcome) {
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(AddMachine(*server_, fmt::format("n{}", i), 16));
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return service->Synced(); }));
  for (int i = 0; i < 90; ++i) {
    ASSERT_TRUE(server_->Create("pods", GuaranteedPod(fmt::format("p{}", i), 2)).ok());
    if (i % 15 == 5) server_->DropWatches();
    if (i % 15 == 10) server_->RestartApiServer();  // resumed watches get 410 and relist
    if (i % 30 == 0) server_->FailNext("patch", "pods", 3, 409);
    if (i % 30 == 15) server_->FailNext("create", "pods/binding", 2, 500);
    if (i % 30 == 20) server_->FailNext("patch", "pods", 2, 500);
  }
  ASSERT_TRUE(Eventually([&] { return Bound() == 90; })) << Bound();
  service->Stop();
  testing::ClusterCheck check = CheckCluster(*server_);
  EXPECT_EQ(check.annotated, 90);
  EXPECT_THAT(check.problems, IsEmpty());
}

TEST_F(ServiceTest, KubeletHeldCpusPublishedInTheNrtAreNeverHandedOut) {
  // 4 CPUs, kubelet holds 0 and 2 (one core's siblings are 0/2 on this 1-socket SMT2 shape);
  // two 2-CPU pods ask for 4: only one fits.
  ASSERT_TRUE(AddMachine(*server_, "n0", 4, *CpuSet::Parse("0,2")));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2)).ok());
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("b", 2)).ok());
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  // b's attempt found no room (its FailedScheduling event follows); nothing else gets bound.
  ASSERT_TRUE(Eventually([&] { return Bound() == 1 && Counted(registry, "unschedulable"); }));
  service->Stop();
  EXPECT_EQ(Bound(), 1);
  for (const auto& pod : server_->List("pods")) {
    auto annotations = pod["metadata"].value("annotations", nlohmann::json::object());
    if (!annotations.contains(kAllocationAnnotation)) continue;
    auto a = AllocationFromJson(annotations[kAllocationAnnotation].get<std::string>(), "");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->containers[0].cpuset.ToString(), "1,3");
  }
  // The pod that did not fit got kube-scheduler's FitError text in an event.
  bool failed_event = false;
  for (const auto& e : server_->List("events.events.k8s.io")) {
    if (e.value("reason", "") == "FailedScheduling" &&
        e.value("note", "").find("0/1 nodes are available") != std::string::npos) {
      failed_event = true;
    }
  }
  EXPECT_TRUE(failed_event);
}

// The note of the first event of `reason` ("" when none).
std::string EventNote(FakeApiServer& server, const std::string& reason) {
  for (const auto& e : server.List("events.events.k8s.io")) {
    if (e.value("reason", "") == reason) return e.value("note", "");
  }
  return "";
}

TEST_F(ServiceTest, ANodeWhoseAgentStoppedBeatingTakesNoExclusivePodUntilItBeatsAgain) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 8));
  auto beat = [&](const char* value) {
    return server_
        ->MergePatch(testing::kNrtResource, "", "n0", {{"metadata", {{"annotations", {{kAgentHeartbeatAnnotation, value}}}}}})
        .ok();
  };
  ASSERT_TRUE(beat("2026-12-07T10:00:00.000000Z"));
  configure_ = [](SchedulerConfig& c) { c.agent_heartbeat_timeout = std::chrono::seconds(30); };
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(WaitFor([&] { return service->Synced(); }));
  clock_.Advance(std::chrono::seconds(31));  // the value seen at start has not changed since
  ASSERT_TRUE(WaitFor([&] { return !EventNote(*server_, "AgentSilent").empty(); }));
  EXPECT_THAT(EventNote(*server_, "AgentSilent"), HasSubstr("2026-12-07T10:00:00.000000Z"));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2)).ok());
  ASSERT_TRUE(WaitFor([&] { return EventNote(*server_, "FailedScheduling").find(sched::kAgentSilentReason) != std::string::npos; }))
      << EventNote(*server_, "FailedScheduling");
  EXPECT_EQ(Bound(), 0);
  ASSERT_TRUE(beat("2026-12-07T10:01:00.000000Z"));
  ASSERT_TRUE(Eventually([&] { return Bound() == 1; }));
  EXPECT_THAT(EventNote(*server_, "AgentReporting"), HasSubstr("2026-12-07T10:01:00.000000Z"));
  service->Stop();
}

TEST_F(ServiceTest, TheBindLogLineAndTheScheduledEventNameNodeNumaNodesAndCpuset) {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  ASSERT_TRUE(AddMachine(*server_, "n0", 4, *CpuSet::Parse("0,2")));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2)).ok());
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  const std::string note = "Successfully assigned default/a to n0: NUMA node 0, cpuset 1,3 (app 1,3)";
  auto scheduled_event = [&] {
    for (const auto& e : server_->List("events.events.k8s.io")) {
      if (e.value("reason", "") == "Scheduled") return e.value("note", "");
    }
    return std::string();
  };
  ASSERT_TRUE(Eventually([&] { return !scheduled_event().empty(); }));
  service->Stop();
  spdlog::default_logger()->sinks().pop_back();
  EXPECT_EQ(scheduled_event(), note);
  EXPECT_THAT(log.str(), ::testing::HasSubstr("pod default/a: bound to n0: NUMA node 0, cpuset 1,3 (app 1,3)\n"));
}

TEST_F(ServiceTest, DebugLogsNameThePodEachNodesVerdictAndTheChosenNodeAndCpuset) {
  const std::string log = LogOfOneAttempt(spdlog::level::debug);
  EXPECT_THAT(log, ::testing::HasSubstr("pod default/a: node small refused: Insufficient cpu\n"));
  EXPECT_THAT(log, ::testing::HasSubstr("pod default/a: node big feasible\n"));
  EXPECT_THAT(log, ::testing::ContainsRegex("pod default/a: chose node big \\(1 of 2 visited nodes feasible\\): "
                                            "NUMA node [01], cpuset [0-9,-]+ \\(app [0-9,-]+\\)\n"));
}

TEST_F(ServiceTest, AtInfoLevelThereAreNoDebugLines) {
  const std::string log = LogOfOneAttempt(spdlog::level::info);
  EXPECT_THAT(log, ::testing::HasSubstr("pod default/a: bound to big"));
  EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr("refused")));
  EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr("chose node")));
}

TEST_F(ServiceTest, TheEventSinkFoldsARepeatedEventIntoTheFirstEventsSeries) {
  auto client = NewClient();
  EventSink sink(client.get(), "a", &clock_);
  const nlohmann::json pod = {{"metadata", {{"namespace", "default"}, {"name", "p"}, {"uid", "u-1"}}}};
  for (int i = 0; i < 3; ++i) sink.Post(pod, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available");
  sink.Start();
  sink.Stop();
  auto events = server_->List("events.events.k8s.io", "default");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["series"]["count"], 3);
}

// A node whose NodeResourceTopology is invalid costs that node only: a Warning event on the NRT
// names it and the offending field, the other nodes go on scheduling, and a valid NRT brings the
// node back.
TEST_F(ServiceTest, AnInvalidNrtLeavesItsNodeOutWithAnEventNamingTheFieldAndTheOthersSchedule) {
  ASSERT_TRUE(AddMachine(*server_, "good", 4));
  auto shape = sim::ShapeForCpuCount(16);
  ASSERT_TRUE(shape.ok());
  NrtInput in;
  in.node_name = "bad";
  in.topology = shape->topology.get();
  in.policy = "single-numa-node";
  absl::StatusOr<nlohmann::json> valid = BuildNrt(in);
  ASSERT_TRUE(valid.ok()) << valid.status();
  nlohmann::json bad = *valid;
  nlohmann::json topology_json =
      nlohmann::json::parse(bad["metadata"]["annotations"][kCpuTopologyAnnotation].get<std::string>());
  topology_json["cpus"][1]["core"] = 1000000000;
  bad["metadata"]["annotations"][kCpuTopologyAnnotation] = topology_json.dump();
  ASSERT_TRUE(testing::CreateReadyNode(*server_, testing::NodeObject("bad", 16)));
  ASSERT_TRUE(server_->Create(testing::kNrtResource, bad).ok());
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("small", 2)).ok());
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("large", 8)).ok());  // fits "bad" alone
  CaptureLog();
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  auto invalid_event = [&] {
    for (const auto& e : server_->List("events.events.k8s.io")) {
      if (e.value("reason", "") == "InvalidNodeResourceTopology") return e;
    }
    return nlohmann::json();
  };
  ASSERT_TRUE(Eventually([&] { return !invalid_event().is_null() && Bound() == 1; })) << log_.str();
  const nlohmann::json event = invalid_event();
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["regarding"]["kind"], "NodeResourceTopology");
  EXPECT_EQ(event["regarding"]["name"], "bad");
  EXPECT_EQ(event["regarding"]["uid"], server_->Get(testing::kNrtResource, "", "bad")->at("metadata").at("uid"));
  EXPECT_THAT(event.value("note", ""), HasSubstr("NodeResourceTopology \"bad\""));
  EXPECT_THAT(event.value("note", ""), HasSubstr("cpus[1].core: 1000000000 is outside [0, 8192)"));
  EXPECT_THAT(event.value("note", ""), HasSubstr("node bad is left out of scheduling"));
  EXPECT_TRUE(Logged("node bad: left out of scheduling until its NodeResourceTopology is valid: "
                     "NodeResourceTopology \"bad\""));
  EXPECT_EQ(server_->Get("pods", "default", "small")->at("spec").value("nodeName", ""), "good");
  EXPECT_EQ(server_->Get("pods", "default", "large")->at("spec").value("nodeName", ""), "");

  // The agent publishes a valid NRT: the node is back and takes the pod that fits it alone.
  ASSERT_TRUE(server_->MergePatch(testing::kNrtResource, "", "bad",
                                  {{"metadata", {{"annotations", (*valid)["metadata"]["annotations"]}}}})
                  .ok());
  ASSERT_TRUE(Eventually([&] { return Bound() == 2; })) << log_.str();
  service->Stop();
  EXPECT_EQ(server_->Get("pods", "default", "large")->at("spec").value("nodeName", ""), "bad");
}

// The pod's PodScheduled condition as the API server holds it ({} when it has none).
nlohmann::json PodScheduledOf(FakeApiServer& server, const std::string& name) {
  nlohmann::json found = nlohmann::json::object();
  auto pod = server.Get("pods", "default", name);
  if (!pod) return found;
  for (const nlohmann::json& c : pod->value("status", nlohmann::json::object()).value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == "PodScheduled") found = c;
  }
  return found;
}

// Whether huygens_scheduler_schedule_attempts_total{result} reads `count`.
bool AttemptsAre(const serving::MetricsRegistry& registry, const char* result, int count) {
  return registry.Expose().find(fmt::format("huygens_scheduler_schedule_attempts_total{{result=\"{}\"}} {}\n", result,
                                            count)) != std::string::npos;
}

// kube-scheduler's handleSchedulingFailure: an unschedulable pod's PodScheduled condition says
// why (the FitError text), written once while the reason stays; once a node is added the pod is
// bound and the Binding turns the condition True.
TEST_F(ServiceTest, AnUnschedulablePodSaysWhyOnceAndIsBoundOnceANodeIsAdded) {
  ASSERT_TRUE(AddMachine(*server_, "small", 4));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("big", 8)).ok());
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return PodScheduledOf(*server_, "big").value("reason", "") == "Unschedulable"; }));
  EXPECT_EQ(PodScheduledOf(*server_, "big")["message"], "0/1 nodes are available: 1 Insufficient cpu.");
  // A node update retries the pod; the same reason is not written again.
  ASSERT_TRUE(server_->MergePatch("nodes", "", "small", {{"metadata", {{"labels", {{"touched", "yes"}}}}}}).ok());
  ASSERT_TRUE(Eventually([&] { return AttemptsAre(registry, "unschedulable", 2); }));
  EXPECT_EQ(server_->RequestCount("patch", "pods/status"), 1);
  ASSERT_TRUE(AddMachine(*server_, "large", 16));
  ASSERT_TRUE(Eventually([&] { return Bound() == 1; }));
  service->Stop();
  EXPECT_EQ(server_->Get("pods", "default", "big")->at("spec").value("nodeName", ""), "large");
  EXPECT_EQ(PodScheduledOf(*server_, "big")["status"], "True");
}

// kube-scheduler's SchedulingGates PreEnqueue: a gated pod is never attempted (no Binding the
// API server would refuse, no attempt counted), carries PodScheduled=False SchedulingGated, and
// is bound as soon as its last gate goes, without a backoff (the fake clock does not move).
TEST_F(ServiceTest, AGatedPodIsNeverAttemptedAndIsBoundAtOnceWhenItsGatesGo) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 8));
  nlohmann::json gated = GuaranteedPod("g", 2);
  gated["spec"]["schedulingGates"] = {{{"name", "example.com/quota"}}};
  ASSERT_TRUE(server_->Create("pods", gated).ok());
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("b", 2)).ok());
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  // "b", created after "g", is bound: "g" was applied before it.
  ASSERT_TRUE(WaitFor([&] { return Bound() == 1; }));
  ASSERT_TRUE(WaitFor([&] { return PodScheduledOf(*server_, "g").value("reason", "") == "SchedulingGated"; }));
  EXPECT_EQ(PodScheduledOf(*server_, "g")["message"], "Scheduling is blocked due to non-empty scheduling gates");
  EXPECT_EQ(PodScheduledOf(*server_, "g")["status"], "False");
  EXPECT_EQ(server_->RequestCount("create", "pods/binding"), 1) << "no Binding of the gated pod";
  EXPECT_FALSE(Counted(registry, "unschedulable"));
  EXPECT_FALSE(Counted(registry, "error"));
  ASSERT_TRUE(server_->MergePatch("pods", "default", "g", {{"spec", {{"schedulingGates", nullptr}}}}).ok());
  ASSERT_TRUE(WaitFor([&] { return Bound() == 2; }));
  service->Stop();
  EXPECT_EQ(server_->RequestCount("create", "pods/binding"), 2);
  EXPECT_EQ(PodScheduledOf(*server_, "g")["status"], "True");
}

// What huygens-scheduler cannot honour yet waits, named (UnsupportedFeatures); RuntimeClass
// overhead and pod-level requests count in the fit.
TEST_F(ServiceTest, PodsAskingForWhatCannotBeHonouredOrThatDoNotFitWithOverheadWaitNamingWhy) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  nlohmann::json claim = GuaranteedPod("claim", 2);
  claim["spec"]["volumes"] = {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "data"}}}}};
  // The real API server's RuntimeClass admission sets spec.overhead from the pod's RuntimeClass
  // and refuses a pod whose own overhead differs; the fake runs no admission, so the pod carries
  // the same overhead itself. Cluster-scoped: a RuntimeClass an earlier run left is reused.
  const nlohmann::json runtime_class = {{"apiVersion", "node.k8s.io/v1"},
                                        {"kind", "RuntimeClass"},
                                        {"metadata", {{"name", "vm"}}},
                                        {"handler", "runc"},
                                        {"overhead", {{"podFixed", {{"cpu", "64"}}}}}};
  const absl::Status made = server_->Create("runtimeclasses.node.k8s.io", runtime_class).status();
  ASSERT_TRUE(made.ok() || kube::IsApiAlreadyExists(made)) << made;
  nlohmann::json overhead = GuaranteedPod("overhead", 2);
  overhead["spec"]["runtimeClassName"] = "vm";
  overhead["spec"]["overhead"] = {{"cpu", "64"}};
  nlohmann::json pod_level = GuaranteedPod("pod-level", 2);
  pod_level["spec"]["resources"] = {{"requests", {{"cpu", "64"}}}, {"limits", {{"cpu", "64"}}}};
  for (const nlohmann::json& pod : {claim, overhead, pod_level}) ASSERT_TRUE(server_->Create("pods", pod).ok());
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  auto message = [&](const std::string& name) { return PodScheduledOf(*server_, name).value("message", ""); };
  ASSERT_TRUE(WaitFor([&] { return !message("claim").empty() && !message("overhead").empty() && !message("pod-level").empty(); }));
  service->Stop();
  EXPECT_EQ(message("claim"),
            "0/1 nodes are available: pod asks for persistentVolumeClaim or ephemeral volumes, which "
            "huygens-scheduler does not support yet.");
  EXPECT_EQ(message("overhead"), "0/1 nodes are available: 1 Insufficient cpu.");
  EXPECT_EQ(message("pod-level"), "0/1 nodes are available: 1 Insufficient cpu.");
  EXPECT_EQ(Bound(), 0);
  EXPECT_EQ(server_->RequestCount("create", "pods/binding"), 0);
  bool named = false;
  for (const nlohmann::json& e : server_->List("events.events.k8s.io", "default")) {
    named = named || (e.value("reason", "") == "FailedScheduling" &&
                      e.value("note", "").find("persistentVolumeClaim") != std::string::npos);
  }
  EXPECT_TRUE(named) << "a FailedScheduling event names the feature";
}

// A Guaranteed 2-CPU pod (GuaranteedPod) labelled `labels`, with `affinity` as its
// spec.affinity when not null.
nlohmann::json AffinePod(const std::string& name, const nlohmann::json& labels,
                         const nlohmann::json& affinity = nullptr) {
  nlohmann::json pod = GuaranteedPod(name, 2);
  pod["metadata"]["labels"] = labels;
  if (!affinity.is_null()) pod["spec"]["affinity"] = affinity;
  return pod;
}

// A required inter-pod affinity (`kind` podAffinity or podAntiAffinity) to pods labelled
// app=`app` on the same node.
nlohmann::json SameNodeAs(const char* kind, const std::string& app) {
  return {{kind,
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{{"labelSelector", {{"matchLabels", {{"app", app}}}}}, {"topologyKey", "kubernetes.io/hostname"}}}}}}};
}

TEST_F(ServiceTest, ReplicasWithRequiredAntiAffinityOnHostnameLandOnThreeNodes) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(AddMachine(*server_, fmt::format("n{}", i), 16));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(server_->Create("pods", AffinePod(fmt::format("web-{}", i), {{"app", "web"}},
                                                  SameNodeAs("podAntiAffinity", "web")))
                    .ok());
  }
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return Bound() == 3; })) << Bound();
  service->Stop();
  std::set<std::string> nodes;
  for (int i = 0; i < 3; ++i) {
    nodes.insert(server_->Get("pods", "default", fmt::format("web-{}", i))->at("spec").value("nodeName", ""));
  }
  EXPECT_EQ(nodes.size(), 3u);  // packing alone puts them on one node
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

TEST_F(ServiceTest, APodWithRequiredAffinityToADbPodLandsOnTheDbsNode) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(AddMachine(*server_, fmt::format("n{}", i), 16));
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  // The db first, then an 8-CPU pod on every other node, which packing then prefers.
  ASSERT_TRUE(server_->Create("pods", AffinePod("db", {{"app", "db"}})).ok());
  ASSERT_TRUE(Eventually([&] { return Bound() == 1; }));
  const std::string db_node = server_->Get("pods", "default", "db")->at("spec").value("nodeName", "");
  for (int i = 0; i < 4; ++i) {
    const std::string node = fmt::format("n{}", i);
    if (node == db_node) continue;
    nlohmann::json filler = GuaranteedPod("filler-" + node, 8);
    filler["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", node}};
    ASSERT_TRUE(server_->Create("pods", filler).ok());
  }
  ASSERT_TRUE(Eventually([&] { return Bound() == 4; })) << Bound();
  ASSERT_TRUE(server_->Create("pods", AffinePod("app", {{"app", "app"}}, SameNodeAs("podAffinity", "db"))).ok());
  ASSERT_TRUE(Eventually([&] { return Bound() == 5; })) << Bound();
  service->Stop();
  EXPECT_EQ(server_->Get("pods", "default", "app")->at("spec").value("nodeName", ""), db_node);
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

// The issue's case: zones a, a, b, c and six replicas spread with maxSkew 1 over zones land
// 2/2/2 (packing alone would put them on one node).
TEST_F(ServiceTest, SixReplicasSpreadOverZonesLandTwoTwoTwo) {
  const std::map<std::string, std::string> zones = {{"n0", "a"}, {"n1", "a"}, {"n2", "b"}, {"n3", "c"}};
  for (const auto& [node, zone] : zones) {
    ASSERT_TRUE(AddMachine(*server_, node, 16, {}, {{"metadata", {{"labels", {{"topology.kubernetes.io/zone", zone}}}}}}));
  }
  const nlohmann::json spread = {{{"maxSkew", 1},
                                  {"topologyKey", "topology.kubernetes.io/zone"},
                                  {"whenUnsatisfiable", "DoNotSchedule"},
                                  {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}};
  for (int i = 0; i < 6; ++i) {
    nlohmann::json pod = AffinePod(fmt::format("web-{}", i), {{"app", "web"}});
    pod["spec"]["topologySpreadConstraints"] = spread;
    ASSERT_TRUE(server_->Create("pods", pod).ok());
  }
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return Bound() == 6; })) << Bound();
  service->Stop();
  std::map<std::string, int> per_zone;
  for (int i = 0; i < 6; ++i) {
    ++per_zone[zones.at(server_->Get("pods", "default", fmt::format("web-{}", i))->at("spec").value("nodeName", ""))];
  }
  EXPECT_EQ(per_zone, (std::map<std::string, int>{{"a", 2}, {"b", 2}, {"c", 2}}));
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

// A pod author cannot decide CPUs: the allocation a user writes on a pending pod holds nothing
// and steers nothing. The pod is filtered (here its nodeSelector and a taint it does not
// tolerate keep it off the node its annotation names) and gets the CPUs its request and QoS
// give it; the Binding replaces the annotation.
TEST_F(ServiceTest, APendingPodsOwnAllocationHoldsNothingAndThePodGoesThroughTheFilters) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(AddMachine(*server_, "n1", 16, {},
                         {{"spec", {{"taints", {{{"key", "dedicated"}, {"value", "db"}, {"effect", "NoSchedule"}}}}}}}));
  nlohmann::json claims = GuaranteedPod("claims", 2);
  claims["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", "n0"}};
  claims["metadata"]["annotations"][kAllocationAnnotation] =
      R"({"version":1,"node":"n1","numaNodes":[0],"containers":[{"name":"app","cpuset":"4,12","mems":"0"}]})";
  ASSERT_TRUE(server_->Create("pods", claims).ok());
  // A BestEffort pod claiming every CPU of n0.
  nlohmann::json greedy = GuaranteedPod("greedy", 1);
  greedy["spec"]["containers"][0].erase("resources");
  greedy["metadata"]["annotations"][kAllocationAnnotation] =
      R"({"version":1,"node":"n0","numaNodes":[0,1],"containers":[{"name":"app","cpuset":"0-15","mems":"0-1"}]})";
  ASSERT_TRUE(server_->Create("pods", greedy).ok());
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return Bound() == 2; }));
  // Every exclusive CPU of n0 but the system pool's is still there for others.
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(server_->Create("pods", GuaranteedPod(fmt::format("p{}", i), 2)).ok());
  ASSERT_TRUE(Eventually([&] { return Bound() == 8; }));
  service->Stop();
  auto allocation_of = [&](const std::string& name) {
    const nlohmann::json pod = *server_->Get("pods", "default", name);
    auto a = AllocationFromJson(pod["metadata"]["annotations"].value(kAllocationAnnotation, ""), "");
    EXPECT_TRUE(a.ok()) << name << ": " << a.status();
    return std::pair(pod["spec"].value("nodeName", ""), a.ok() ? *a : PodAllocation());
  };
  const auto [claims_node, claims_allocation] = allocation_of("claims");
  EXPECT_EQ(claims_node, "n0");
  EXPECT_EQ(claims_allocation.node, "n0");
  EXPECT_EQ(claims_allocation.ExclusiveCpus().Size(), 2);
  const auto [greedy_node, greedy_allocation] = allocation_of("greedy");
  EXPECT_EQ(greedy_node, "n0");
  EXPECT_TRUE(greedy_allocation.ExclusiveCpus().Empty()) << DescribeAllocation(greedy_allocation);
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

// A pending pod whose annotation names CPUs a bound pod holds is scheduled like any other and
// gets other CPUs (the Binding replaces the annotation).
TEST_F(ServiceTest, APendingPodAnnotatedWithABoundPodsCpusGetsOthers) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  const char* kAlloc =
      R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"4,12","mems":"0"}]})";
  nlohmann::json bound = GuaranteedPod("bound", 2);
  bound["metadata"]["annotations"][kAllocationAnnotation] = kAlloc;
  bound["spec"]["nodeName"] = "n0";
  ASSERT_TRUE(server_->Create("pods", bound).ok());
  nlohmann::json stale = GuaranteedPod("stale", 2);
  stale["metadata"]["annotations"][kAllocationAnnotation] = kAlloc;  // the same CPUs
  ASSERT_TRUE(server_->Create("pods", stale).ok());
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return Bound() == 2; }));
  service->Stop();
  testing::ClusterCheck check = CheckCluster(*server_);
  EXPECT_EQ(check.annotated, 2);
  EXPECT_THAT(check.problems, IsEmpty());
}

TEST_F(ServiceTest, OnlyTheLeaderSchedulesAndTheStandbyTakesOverWhenItStops) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(AddMachine(*server_, "n1", 16));
  auto client_a = NewClient();
  auto client_b = NewClient();
  serving::MetricsRegistry registry_a, registry_b;
  auto a = NewService(client_a.get(), &registry_a, true, "a");
  auto b = NewService(client_b.get(), &registry_b, true, "b");
  a->Start();
  ASSERT_TRUE(Eventually([&] { return a->Leading(); }));
  b->Start();
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(server_->Create("pods", GuaranteedPod(fmt::format("p{}", i), 2)).ok());
  ASSERT_TRUE(Eventually([&] { return Bound() == 6; }));
  EXPECT_FALSE(b->Leading());
  EXPECT_EQ(b->BoundPods(), 0);
  a->Stop();  // releases the lease
  ASSERT_TRUE(Eventually([&] { return b->Leading(); }, std::chrono::seconds(10)));
  for (int i = 6; i < 12; ++i) ASSERT_TRUE(server_->Create("pods", GuaranteedPod(fmt::format("p{}", i), 2)).ok());
  ASSERT_TRUE(Eventually([&] { return Bound() == 12; }));
  b->Stop();
  EXPECT_EQ(a->BoundPods(), 6);
  EXPECT_EQ(b->BoundPods(), 6);
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

TEST_F(ServiceTest, ANewLeaderWritesEveryPendingPodFirstSoTheDeposedLeadersLateBindingIsRefused) {
  // The deposed leader read pod "late" and sent its Binding, which sits in a frozen connection.
  // The pod fits nowhere for the new leader (one 4-CPU node), so only the takeover fence writes
  // it; without that write the late Binding would land on CPUs the new leader may reuse.
  ASSERT_TRUE(AddMachine(*server_, "small", 4));
  auto created = server_->Create("pods", GuaranteedPod("late", 8));
  ASSERT_TRUE(created.ok());
  const std::string read_rv = (*created)["metadata"]["resourceVersion"];
  const std::string uid = (*created)["metadata"]["uid"];
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ASSERT_TRUE(Eventually([&] { return Counted(registry, "unschedulable"); }));
  const nlohmann::json fenced = *server_->Get("pods", "default", "late");
  EXPECT_FALSE(
      fenced["metadata"].value("annotations", nlohmann::json::object()).value(kSchedulerFenceAnnotation, "").empty());
  EXPECT_NE(fenced["metadata"]["resourceVersion"], read_rv);

  absl::Status late = client->Bind("default", "late", "small", uid,
                                   {{kAllocationAnnotation, "{}"}}, read_rv);
  service->Stop();
  EXPECT_EQ(kube::HttpCode(late), 409) << late;
  EXPECT_EQ(server_->Get("pods", "default", "late")->at("spec").value("nodeName", ""), "");
}

// A new leader's fence writes every pending pod one by one; over a large backlog that takes
// minutes, and each write is progress: /healthz (Healthy) must not fail meanwhile, or the
// liveness probe would restart every leader mid-fence. Each request is delayed 50 ms while the
// service's clock moves on 5 s per 100 ms: without progress marked per write, the fence of 40
// pods would pass the 60 s liveness bound.
TEST_F(ServiceTest, ANewLeaderWritingItsFenceOnManyPendingPodsStaysLive) {
  ASSERT_TRUE(AddMachine(*server_, "small", 4));
  constexpr int kPending = 40;
  for (int i = 0; i < kPending; ++i) {
    ASSERT_TRUE(server_->Create("pods", GuaranteedPod(fmt::format("w{}", i), 8)).ok());  // fits nowhere
  }
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  server_->SetDelay(std::chrono::milliseconds(50));
  service->Start();
  int unhealthy = 0;
  for (int tick = 0; tick < 600 && server_->RequestCount("patch", "pods") < kPending; ++tick) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    clock_.Advance(std::chrono::seconds(5));
    if (!service->Healthy().ok()) ++unhealthy;
  }
  server_->SetDelay(std::chrono::milliseconds(0));
  service->Stop();
  EXPECT_EQ(server_->RequestCount("patch", "pods"), kPending) << "the fence wrote every pending pod";
  EXPECT_EQ(unhealthy, 0) << "Healthy() failed while the fence was being written";
}

// The takeover fence's bound on its wait (docs/scheduler-service.md, "Leader election"). The pod
// informer lists, and its watch is taken and stays silent (a frozen connection that the stale
// bound, 150 s, has not caught yet): it never shows the fence write. Every 10 s of waiting the
// scheduler reads every pod itself: the pod it reads carries the token, and one that is gone,
// or replaced by a new pod of its name, is no longer awaited. Pod "a" is then bound, which
// needs the pod as read back: the Binding carries the resourceVersion of the fence write, and
// one from the informer's copy would be refused (409) for ever. A deleted pod is dropped from
// the cache (never bound again); a new pod the read shows is scheduled.
struct RecheckCase {
  const char* name;
  // What happens to a second pending pod "b" once the fence is written, unseen by the informer;
  // no pod "b" when empty.
  std::function<absl::Status(FakeApiServer&, kube::Client&)> unseen;
  int bound;  // pods bound in the end

  friend void PrintTo(const RecheckCase& c, std::ostream* os) { *os << c.name; }
};

class FenceRecheckTest : public ServiceTest, public ::testing::WithParamInterface<RecheckCase> {
 protected:
  // The pod's huygens.io/scheduler-fence as the API server holds it ("" when none or no pod).
  std::string FenceOf(const char* name) {
    auto pod = server_->Get("pods", "default", name);
    if (!pod.has_value()) return "";
    return pod->at("metadata").value("annotations", nlohmann::json::object()).value(kSchedulerFenceAnnotation, "");
  }
};

TEST_P(FenceRecheckTest, AFenceWriteThePodInformerNeverShowsIsReadBackAfterTenSeconds) {
  const RecheckCase& c = GetParam();
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2)).ok());
  if (c.unseen) {
    ASSERT_TRUE(server_->Create("pods", GuaranteedPod("b", 2)).ok());
  }
  server_->HoldRequests("watch", "pods");
  CaptureLog();
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  // Written, and the wait (with its first recheck time) in place.
  ASSERT_TRUE(WaitFor([&] { return Logged("takeover fence: read"); })) << log_.str();
  ASSERT_FALSE(FenceOf("a").empty());
  if (c.unseen) {
    ASSERT_FALSE(FenceOf("b").empty());
    ASSERT_TRUE(c.unseen(*server_, *client).ok());
  }

  clock_.Advance(std::chrono::seconds(9));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Bound(), 0) << "bound before the fence write was seen";
  ASSERT_TRUE(Eventually([&] { return Bound() == c.bound; })) << "never bound: the fence still waits";
  EXPECT_EQ(server_->Get("pods", "default", "a")->at("spec").value("nodeName", ""), "n0");
  // The deleted "b" is out of the cache: no Binding of it is tried (and refused) again.
  for (int i = 0; i < 6; ++i) {
    clock_.Advance(std::chrono::seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(Logged("lost the race")) << log_.str();
  EXPECT_EQ(Bound(), c.bound);
  server_->ReleaseRequests();
  service->Stop();
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FenceRecheckTest,
    ::testing::Values(
        RecheckCase{"AFencedPodTheInformerNeverShowsIsReadBackAndBound", nullptr, 1},
        RecheckCase{"AFencedPodDeletedMeanwhileNoLongerHoldsUpScheduling",
                  [](FakeApiServer&, kube::Client& writer) { return writer.Delete(kube::Pods(), "default", "b"); }, 1},
        RecheckCase{"AFencedPodReplacedByANewPodOfItsNameNoLongerHoldsUpSchedulingAndTheNewOneIsBound",
                  [](FakeApiServer& server, kube::Client& writer) {
                    absl::Status deleted = writer.Delete(kube::Pods(), "default", "b");
                    if (!deleted.ok()) return deleted;
                    return server.Create("pods", GuaranteedPod("b", 2)).status();
                  },
                  2}),
    [](const ::testing::TestParamInfo<RecheckCase>& p) { return std::string(p.param.name); });

TEST_F(ServiceTest, APodTheOtherReplicaBoundJustBeforeTheTakeoverHoldsItsCpusBeforeTheNewLeaderSchedules) {
  // The hole the 10,000-event chaos run found (2026-12-03): replica "other" leads and binds pod
  // "b" to CPUs 0,8 (the first two this node gives) just before its lease runs out; this
  // replica's pod informer has not shown that Binding (its watch is frozen) when it takes over.
  // The fence's list no longer shows "b" pending, so no fence write awaits it: the fence must
  // also wait until the cache holds every pod change up to the list's version (here the
  // recheck's own read brings it), else pod "a" gets CPUs 0,8 too.
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2)).ok());
  // Of another scheduler, so "a" is the only pod this replica queues (whatever the queue's order).
  nlohmann::json other = GuaranteedPod("b", 2);
  other["spec"]["schedulerName"] = "other-scheduler";
  auto b = server_->Create("pods", other);
  ASSERT_TRUE(b.ok());
  const std::string now = "2026-12-03T12:00:00.000000Z";
  ASSERT_TRUE(server_
                  ->Create("leases.coordination.k8s.io", {{"apiVersion", "coordination.k8s.io/v1"},
                                      {"kind", "Lease"},
                                      {"metadata", {{"name", "huygens-scheduler"}, {"namespace", "kube-system"}}},
                                      {"spec",
                                       {{"holderIdentity", "other"},
                                        {"leaseDurationSeconds", 3},
                                        {"acquireTime", now},
                                        {"renewTime", now}}}})
                  .ok());
  CaptureLog();
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry, true, "a");
  service->Start();
  ASSERT_TRUE(WaitFor([&] { return service->Synced(); }));
  ASSERT_FALSE(service->Leading());
  server_->HoldRequests("watch", "pods");
  server_->DropWatches();
  ASSERT_TRUE(WaitFor([&] { return server_->HeldRequests() >= 1; }));
  ASSERT_TRUE(client
                  ->Bind("default", "b", "n0", (*b)["metadata"]["uid"].get<std::string>(),
                         {{kAllocationAnnotation,
                           R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"0,8","mems":"0"}]})"}},
                         (*b)["metadata"]["resourceVersion"].get<std::string>())
                  .ok());
  ASSERT_TRUE(Eventually([&] { return service->Leading(); }, std::chrono::seconds(20)));
  ASSERT_TRUE(Eventually([&] { return Bound() == 2; })) << log_.str();
  server_->ReleaseRequests();
  service->Stop();
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
  EXPECT_TRUE(Logged("wrote 1 pending pods")) << log_.str();  // "a" only
}

// A pod changed while its Binding is out: the Binding loses the race (409 on its
// resourceVersion precondition), and the next attempt decides on the version that changed it,
// so its Binding lands. (Requeued with the version it was popped at, it lost the race for ever:
// the version that arrived meanwhile is not queued while the Binding is out.)
TEST_F(ServiceTest, APodChangedWhileItsBindingIsOutIsBoundOnItsNewVersion) {
  ASSERT_NO_FATAL_FAILURE(StartWithTheBindingOfAHeld(16));
  ASSERT_TRUE(server_->MergePatch("pods", "default", "a", {{"metadata", {{"labels", {{"tier", "db"}}}}}}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the informer shows the change
  server_->ReleaseRequests();
  EXPECT_TRUE(Eventually([&] { return Bound() == 1; }, std::chrono::seconds(20)));
  service_->Stop();
  EXPECT_GE(server_->RequestCount("create", "pods/binding"), 2) << "the first Binding lost the race";
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

TEST_F(ServiceTest, ANodeRebuiltWhileABindingIsInFlightKeepsThatPodsCpus) {
  // An NRT update rebuilds the node from the informer, which still shows the pod whose Binding
  // is in flight as pending: its CPUs stay held, so the next pod gets others.
  ASSERT_NO_FATAL_FAILURE(StartWithTheBindingOfAHeld(8));
  ASSERT_TRUE(server_->MergePatch(testing::kNrtResource, "", "n0",
                                  {{"metadata", {{"annotations", {{"test.huygens.io/touched", "1"}}}}}})
                  .ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the rebuild lands first
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("b", 2)).ok());
  ASSERT_TRUE(WaitFor([&] { return server_->HeldRequests() == 2; }));
  server_->ReleaseRequests();
  ASSERT_TRUE(WaitFor([&] { return Bound() == 2; })) << Bound();
  service_->Stop();
  testing::ClusterCheck check = CheckCluster(*server_);
  EXPECT_EQ(check.annotated, 2);
  EXPECT_THAT(check.problems, IsEmpty());
}

TEST_F(ServiceTest, APendingPodBeingDeletedIsNeverBound) {
  // "a" (being deleted: a finalizer holds it) comes first in the queue and would take every CPU
  // of the node; it is skipped, so "b" gets them.
  ASSERT_TRUE(AddMachine(*server_, "n0", 4));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 4)).ok());
  ASSERT_NO_FATAL_FAILURE(DeleteHeld("a"));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("b", 4)).ok());
  auto client = NewClient();
  serving::MetricsRegistry registry;
  auto service = NewService(client.get(), &registry);
  service->Start();
  ExpectBBoundAndANot(*service);
}

TEST_F(ServiceTest, APodDeletedWhileItsBindingIsOutReleasesItsCpus) {
  // The API server refuses the Binding of a pod being deleted: its reservation must not keep
  // the CPUs. "b" fits only on the CPUs "a" was given.
  ASSERT_NO_FATAL_FAILURE(StartWithTheBindingOfAHeld(4));
  ASSERT_NO_FATAL_FAILURE(DeleteHeld("a"));
  ASSERT_TRUE(WaitFor([&] {
    return registry_.Expose().find("huygens_scheduler_cache_size{type=\"pods\"} 0") != std::string::npos;
  })) << "the reservation of a pod being deleted kept its CPUs";
  server_->ReleaseRequests();
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("b", 4)).ok());
  ExpectBBoundAndANot(*service_);
}

// ---- The rebalancer (scheduler/rebalancer.h) -----------------------------------------------

// Node n0: 2 NUMA nodes of 4 cores x 2 threads (NUMA node 0 = CPUs 0-3,8-11, node 1 = 4-7,12-15).
// Bound pods web-a (NUMA node 0, CPUs 0-1,8-9) and web-b (NUMA node 1, CPUs 4-5,12-13) of
// affinity group "web", each with `annotations` added.
class RebalancerTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    configure_ = [](SchedulerConfig& c) { c.rebalancer.interval = std::chrono::seconds(2); };
    topology_ = huygens::testing::BuildMachine({.sockets = 2, .cores_per_numa = 4});
    ASSERT_TRUE(testing::AddNode(*server_, "n0", topology_));
  }
  void AddBound(const std::string& name, const std::string& cpuset, int numa,
                const nlohmann::json& annotations = nlohmann::json::object(),
                const std::string& group = "web", const nlohmann::json& labels = nlohmann::json::object()) {
    nlohmann::json pod = GuaranteedPod(name, 4);
    pod["spec"]["nodeName"] = "n0";
    pod["metadata"]["annotations"] = annotations;
    if (!labels.empty()) pod["metadata"]["labels"] = labels;
    if (!group.empty()) pod["metadata"]["annotations"][kAffinityGroupAnnotation] = group;
    pod["metadata"]["annotations"][kAllocationAnnotation] = fmt::format(
        R"({{"version":1,"node":"n0","numaNodes":[{0}],"containers":[{{"name":"app","cpuset":"{1}","mems":"{0}"}}]}})",
        numa, cpuset);
    ASSERT_TRUE(server_->Create("pods", pod).ok());
  }
  // The pod's allocation as the API server holds it ("" when none).
  std::string AllocationOf(const std::string& name) {
    auto pod = server_->Get("pods", "default", name);
    if (!pod.has_value()) return "";
    return pod->at("metadata").value("annotations", nlohmann::json::object()).value(kAllocationAnnotation, "");
  }
  static constexpr char kGroups[] = "numaaffinitygroups.huygens.io";
  // A NumaAffinityGroup named `name` in namespace default with `selector` (policy: the default).
  static nlohmann::json Group(const std::string& name, const nlohmann::json& selector) {
    return {{"apiVersion", "huygens.io/v1alpha1"},
            {"kind", "NumaAffinityGroup"},
            {"metadata", {{"name", name}, {"namespace", "default"}}},
            {"spec", {{"selector", selector}}}};
  }
  nlohmann::json StatusOf(const std::string& group) {
    auto object = server_->Get(kGroups, "default", group);
    return object.has_value() ? object->value("status", nlohmann::json::object()) : nlohmann::json::object();
  }
  // The status of the group's Aligned condition ("" when none).
  std::string AlignedOf(const std::string& group) {
    for (const nlohmann::json& c : StatusOf(group).value("conditions", nlohmann::json::array())) {
      if (c.value("type", "") == "Aligned") return c.value("status", "");
    }
    return "";
  }
  std::string RebalancedNote() {
    for (const auto& e : server_->List("events.events.k8s.io")) {
      if (e.value("reason", "") == "Rebalanced") return e.value("note", "");
    }
    return "";
  }
  // Starts the service over the pods added so far; Stop() ends it.
  void Start() {
    client_ = NewClient();
    service_ = NewService(client_.get(), &registry_);
    service_->Start();
  }
  void Stop() { service_->Stop(); }

  CpuTopology topology_;
};

TEST_F(RebalancerTest, AGroupMemberMovesBesideItsPeerAndTheCacheHoldsItsNewCpusNotItsOldOnes) {
  AddBound("web-a", "0-1,8-9", 0);
  AddBound("web-b", "4-5,12-13", 1);
  Start();
  // Equal CPUs to move either way: the lower NUMA id, so web-b joins web-a on NUMA node 0.
  ASSERT_TRUE(Eventually([&] { return AllocationOf("web-b").find(R"("numaNodes":[0])") != std::string::npos; }));
  EXPECT_EQ(AllocationOf("web-b"),
            R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"2-3,10-11","mems":"0"}]})");
  ASSERT_TRUE(Eventually([&] { return !RebalancedNote().empty(); }));
  EXPECT_EQ(RebalancedNote(),
            "moved to NUMA node 0, cpuset 2-3,10-11 (app 2-3,10-11): group web: join NUMA node 0 (4 cpus "
            "moved)");
  EXPECT_THAT(registry_.Expose(), HasSubstr("huygens_scheduler_rebalance_moves_total{result=\"moved\"} 1"));
  EXPECT_THAT(registry_.Expose(), HasSubstr("huygens_scheduler_rebalance_cpus_moved_total 4"));
  // The CPUs web-b left are free in the cache; the ones it took are not: an 8-CPU pod fits only
  // on NUMA node 1 now, whole.
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("late", 8)).ok());
  ASSERT_TRUE(Eventually([&] { return Bound() == 3; }));
  Stop();
  EXPECT_THAT(AllocationOf("late"), HasSubstr(R"("cpuset":"4-7,12-15")"));
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

TEST_F(RebalancerTest, APodThatOptsOutStaysAndItsPeerComesToIt) {
  AddBound("web-a", "0-1,8-9", 0);
  AddBound("web-b", "4-5,12-13", 1, {{kRebalanceAnnotation, "false"}});
  Start();
  ASSERT_TRUE(Eventually([&] { return AllocationOf("web-a").find(R"("numaNodes":[1])") != std::string::npos; }));
  Stop();
  EXPECT_THAT(AllocationOf("web-b"), HasSubstr(R"("cpuset":"4-5,12-13")"));
  EXPECT_THAT(AllocationOf("web-a"), HasSubstr(R"("cpuset":"6-7,14-15")"));
}

TEST_F(RebalancerTest, TheCacheFollowsAMoveAnotherReplicaWrote) {
  configure_ = [](SchedulerConfig& c) { c.rebalancer.enabled = false; };
  AddBound("web-a", "0-1,8-9", 0);
  AddBound("web-b", "4-5,12-13", 1);
  Start();
  ASSERT_TRUE(Eventually([&] {
    return registry_.Expose().find("huygens_scheduler_cache_size{type=\"pods\"} 2") != std::string::npos;
  }));
  ASSERT_TRUE(server_
                  ->MergePatch("pods", "default", "web-b",
                               {{"metadata",
                                 {{"annotations",
                                   {{kAllocationAnnotation,
                                     R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"2-3,10-11","mems":"0"}]})"}}}}}})
                  .ok());
  // Only NUMA node 1 can hold 8 CPUs once web-b left it, and only if the cache knows.
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("late", 8)).ok());
  ASSERT_TRUE(Eventually([&] { return Bound() == 3; }));
  Stop();
  EXPECT_THAT(AllocationOf("late"), HasSubstr(R"("cpuset":"4-7,12-15")"));
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

// Observed affinity: no annotation on the pods, only the agent's traffic summary on the NRT.
TEST_F(RebalancerTest, PodsThatTalkEnoughAreBroughtTogetherWithoutAnyAnnotation) {
  AddBound("web-a", "0-1,8-9", 0, nlohmann::json::object(), "");
  AddBound("web-b", "4-5,12-13", 1, nlohmann::json::object(), "");
  auto observe = [&](int bytes_per_second) {
    const std::string traffic = fmt::format(
        R"({{"version":1,"windowSeconds":30,"pairs":[{{"a":"default/web-a","b":"default/web-b","bytesPerSecond":{}}}]}})",
        bytes_per_second);
    ASSERT_TRUE(server_
                    ->MergePatch(testing::kNrtResource, "", "n0",
                                 {{"metadata", {{"annotations", {{kPodTrafficAnnotation, traffic}}}}}})
                    .ok());
  };
  observe(1000);  // below the default 1 MB/s
  Start();
  EXPECT_FALSE(Eventually([&] { return !RebalancedNote().empty(); }, std::chrono::seconds(3)));
  observe(5000000);
  ASSERT_TRUE(Eventually([&] { return !RebalancedNote().empty(); }));
  Stop();
  EXPECT_THAT(RebalancedNote(), HasSubstr("group observed:default/web-a: join NUMA node 0"));
  EXPECT_THAT(AllocationOf("web-b"), HasSubstr(R"("cpuset":"2-3,10-11")"));
}

// Declared affinity: a NumaAffinityGroup selects pods by label (no annotation on them); its
// status shows the members, the move and, once they sit together, Aligned.
TEST_F(RebalancerTest, ANumaAffinityGroupBringsItsMembersTogetherAndItsStatusShowsItAligned) {
  AddBound("db-a", "0-1,8-9", 0, nlohmann::json::object(), "", {{"app", "orders"}, {"role", "db"}});
  AddBound("db-b", "4-5,12-13", 1, nlohmann::json::object(), "", {{"app", "orders"}, {"role", "cache"}});
  AddBound("other", "6-7,14-15", 1, nlohmann::json::object(), "", {{"app", "orders"}, {"role", "batch"}});
  ASSERT_TRUE(server_->Create(kGroups, Group("orders", {{"matchLabels", {{"app", "orders"}}},
                                                         {"matchExpressions",
                                                          {{{"key", "role"}, {"operator", "In"}, {"values", {"db", "cache"}}}}}}))
                  .ok());
  Start();
  ASSERT_TRUE(Eventually([&] { return StatusOf("orders").value("movesMade", 0) == 1 && AlignedOf("orders") == "True"; }))
      << StatusOf("orders").dump();
  // Later rounds change nothing: the status is not rewritten, so its movesMade and the
  // condition's lastTransitionTime (whole seconds of the wall clock) stay as they are.
  const nlohmann::json aligned = StatusOf("orders");
  for (int round = 0; round < 3; ++round) {
    clock_.Advance(std::chrono::seconds(2));  // the rebalancer's interval here
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  }
  EXPECT_EQ(StatusOf("orders"), aligned);
  Stop();
  EXPECT_THAT(RebalancedNote(), HasSubstr("group default/orders: join NUMA node 0"));
  EXPECT_THAT(AllocationOf("db-b"), HasSubstr(R"("cpuset":"2-3,10-11")"));
  EXPECT_THAT(AllocationOf("other"), HasSubstr(R"("cpuset":"6-7,14-15")"));  // not selected: stays
  const nlohmann::json status = StatusOf("orders");
  EXPECT_EQ(status["members"], nlohmann::json::parse(R"([{"pod":"db-a","node":"n0","numaNodes":[0],"cpus":4},
                                                         {"pod":"db-b","node":"n0","numaNodes":[0],"cpus":4}])"));
  EXPECT_EQ(status["memberCount"], 2);
  EXPECT_EQ(status["numaNodesSpanned"], 1);
  EXPECT_EQ(status["observedGeneration"], 1);
  EXPECT_EQ(status["conditions"][0]["reason"], "Aligned");
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

TEST_F(RebalancerTest, ASpreadGroupMovesAMemberAwayFromItsPeer) {
  AddBound("a", "0-1,8-9", 0, nlohmann::json::object(), "", {{"app", "bw"}});
  AddBound("b", "2-3,10-11", 0, nlohmann::json::object(), "", {{"app", "bw"}});
  nlohmann::json group = Group("bw", {{"matchLabels", {{"app", "bw"}}}});
  group["spec"]["policy"] = "spread";
  ASSERT_TRUE(server_->Create(kGroups, group).ok());
  Start();
  ASSERT_TRUE(Eventually([&] { return AlignedOf("bw") == "True" && StatusOf("bw").value("movesMade", 0) == 1; }))
      << StatusOf("bw").dump();
  Stop();
  EXPECT_EQ(StatusOf("bw")["numaNodesSpanned"], 2);
  EXPECT_THAT(AllocationOf("a") + AllocationOf("b"), HasSubstr(R"("numaNodes":[1])"));
}

TEST_F(RebalancerTest, AGroupThatCannotMoveSaysWhyInItsStatus) {
  const nlohmann::json stay = {{kRebalanceAnnotation, "false"}};
  AddBound("a", "0-1,8-9", 0, stay, "", {{"app", "pinned"}});
  AddBound("b", "4-5,12-13", 1, stay, "", {{"app", "pinned"}});
  ASSERT_TRUE(server_->Create(kGroups, Group("pinned", {{"matchLabels", {{"app", "pinned"}}}})).ok());
  Start();
  ASSERT_TRUE(Eventually([&] { return AlignedOf("pinned") == "False"; })) << StatusOf("pinned").dump();
  Stop();
  const nlohmann::json condition = StatusOf("pinned")["conditions"][0];
  EXPECT_EQ(condition["reason"], "Blocked");
  EXPECT_THAT(condition["message"].get<std::string>(), HasSubstr("node n0: "));
  EXPECT_EQ(StatusOf("pinned")["numaNodesSpanned"], 2);
  EXPECT_EQ(StatusOf("pinned").value("movesMade", -1), 0);
  EXPECT_THAT(RebalancedNote(), IsEmpty());
}

// The rebalancer's lines of spdlog's default logger, readable while the service writes.
class RebalancerLog final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // How many lines kept hold `text`.
  int Count(const std::string& text) {
    std::lock_guard<std::mutex> lock(this->mutex_);
    return static_cast<int>(std::count_if(lines_.begin(), lines_.end(),
                                          [&](const std::string& l) { return l.find(text) != std::string::npos; }));
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    if (text.starts_with("rebalancer:")) lines_.emplace_back(text);
  }
  void flush_() override {}

 private:
  std::vector<std::string> lines_;
};

// The group informer gates the rebalancer (not scheduling): while NumaAffinityGroups cannot be
// listed (here the first list hangs, then lists get 404, as without the CRD) nothing moves and
// the log says why, once; once they can be listed, the next round runs. The first list is held
// until the warning shows: the first round comes after the takeover fence, and a fixed number
// of quick 404s alone were all through before it on a loaded machine (failing for good instead
// is no test either: the informer's backoff sleeps on the shared fake clock, which then runs
// ahead and pauses scheduling as stale).
TEST_F(RebalancerTest, NothingMovesUntilNumaAffinityGroupsCanBeListed) {
  AddBound("web-a", "0-1,8-9", 0);
  AddBound("web-b", "4-5,12-13", 1);
  auto sink = std::make_shared<RebalancerLog>();
  spdlog::default_logger()->sinks().push_back(sink);
  const std::string warning = "rebalancer: no pod is moved while NumaAffinityGroups are not current";
  auto logged = [&](const std::string& text) { return sink->Count(text); };
  server_->HoldRequests("list", "numaaffinitygroups");
  server_->FailNext("list", "numaaffinitygroups", 3, 404);
  Start();
  ASSERT_TRUE(Eventually([&] { return logged(warning) > 0; }));
  EXPECT_THAT(RebalancedNote(), IsEmpty());
  EXPECT_THAT(AllocationOf("web-b"), HasSubstr(R"("cpuset":"4-5,12-13")"));
  server_->ReleaseRequests();
  ASSERT_TRUE(Eventually([&] { return !RebalancedNote().empty(); }));
  EXPECT_GE(server_->RequestCount("list", "numaaffinitygroups"), 4);
  Stop();
  spdlog::default_logger()->sinks().pop_back();
  EXPECT_THAT(AllocationOf("web-b"), HasSubstr(R"("cpuset":"2-3,10-11")"));
  EXPECT_EQ(logged(warning), 1);
  EXPECT_EQ(logged("rebalancer: NumaAffinityGroups are current again"), 1);
}

TEST_F(RebalancerTest, ADisabledRebalancerMovesNothing) {
  configure_ = [](SchedulerConfig& c) {
    c.rebalancer.interval = std::chrono::seconds(2);
    c.rebalancer.enabled = false;
  };
  AddBound("web-a", "0-1,8-9", 0);
  AddBound("web-b", "4-5,12-13", 1);
  Start();
  // Thirty intervals of the fake clock.
  EXPECT_FALSE(Eventually([&] { return !RebalancedNote().empty(); }, std::chrono::seconds(3)));
  Stop();
  EXPECT_THAT(AllocationOf("web-b"), HasSubstr(R"("cpuset":"4-5,12-13")"));
}

}  // namespace
}  // namespace huygens::scheduler

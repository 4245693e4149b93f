// Extender mode over real HTTP, driven the way kube-scheduler drives an extender: for each pod
// filter -> prioritize (pick the best score) -> bind, against the fake API server.
#include <httplib.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "base/wire_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/api_error.h"
#include "kube/testing/fake_apiserver.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/test_client.h"
#include "scheduler/service.h"
#include "scheduler/test_cluster.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {
namespace {

using kube::testing::FakeApiServer;
using nlohmann::json;
using testing::AddMachine;
using testing::CheckCluster;
using testing::GuaranteedPod;
using testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeApiServer::Start(server_options_);
    ASSERT_TRUE(server.ok());
    server_ = *std::move(server);
  }
  void TearDown() override {
    if (http_ != nullptr) http_->Stop();
    if (service_ != nullptr) service_->Stop();
  }

  // Starts the service in extender mode and its HTTP server; waits until filter answers unless
  // `wait` is false.
  void StartExtender(bool wait = true) {
    client_ = kube::testing::ClientFor(*server_, &clock_);
    ServiceOptions options;
    options.config.extender_enabled = true;
    options.identity = "extender";
    options.clock = &clock_;
    auto service = SchedulerService::Create(client_.get(), options, &registry_);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    http_ = std::make_unique<serving::HttpServer>(serving::HttpServerOptions{}, nullptr);
    service_->ServeExtender(*http_);
    ASSERT_TRUE(http_->Start().ok());
    service_->Start();
    http_client_ = std::make_unique<httplib::Client>("127.0.0.1", http_->port());
    http_client_->set_read_timeout(30, 0);
    if (!wait) return;
    json probe_pod = GuaranteedPod("probe", 1);
    probe_pod["metadata"]["uid"] = "probe-uid";
    ASSERT_TRUE(WaitFor([&] {
      json probe = Post("/filter", {{"Pod", probe_pod}, {"NodeNames", json::array()}});
      return probe.is_object() && !probe.contains("error");
    }));
  }

  // POSTs `body` and returns the parsed reply (null when the status is not 200).
  json Post(const std::string& path, const json& body, int* status = nullptr) {
    auto r = http_client_->Post(path, body.dump(), "application/json");
    if (!r) return json();
    if (status != nullptr) *status = r->status;
    if (r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }

  // The ExtenderArgs kube-scheduler sends for `pod` over every node.
  json Args(const json& pod, bool node_cache_capable) {
    json args = {{"Pod", pod}};
    if (node_cache_capable) {
      json names = json::array();
      for (const json& n : server_->List("nodes")) names.push_back(n["metadata"]["name"]);
      args["NodeNames"] = names;
    } else {
      args["Nodes"] = {{"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", server_->List("nodes")}};
    }
    return args;
  }

  // One kube-scheduler attempt: filter, prioritize the survivors, bind to the best (ties: the
  // first). Returns the bind's Error ("" = bound), or why the attempt stopped.
  std::string ScheduleLikeKubeScheduler(const std::string& name, bool node_cache_capable) {
    json pod = *server_->Get("pods", "default", name);
    json filtered = Post("/filter", Args(pod, node_cache_capable));
    if (!filtered.is_object() || filtered.contains("error")) return "filter failed: " + filtered.dump();
    json survivors = json::array();
    if (node_cache_capable) {
      survivors = filtered.value("nodenames", json::array());
      if (filtered.contains("nodes")) return "answered nodes to a nodenames request";
    } else {
      if (filtered.contains("nodenames")) return "answered nodenames to a nodes request";
      for (const json& n : filtered["nodes"]["items"]) survivors.push_back(n["metadata"]["name"]);
    }
    if (survivors.empty()) return "no node passed: " + filtered.dump();
    json args = {{"Pod", pod}};
    if (node_cache_capable) {
      args["NodeNames"] = survivors;
    } else {
      args["Nodes"] = filtered["nodes"];
    }
    json priorities = Post("/prioritize", args);
    if (!priorities.is_array() || priorities.size() != survivors.size()) return "prioritize failed";
    std::string best;
    int64_t best_score = -1;
    for (const json& hp : priorities) {
      int64_t score = hp.at("score").get<int64_t>();
      if (score < 0 || score > 10) return "score out of 0..10";
      if (score > best_score) {
        best_score = score;
        best = hp.at("host").get<std::string>();
      }
    }
    json bound = Post("/bind", {{"PodName", name},
                                {"PodNamespace", "default"},
                                {"PodUID", pod["metadata"]["uid"]},
                                {"Node", best}});
    if (!bound.is_object() || !bound.contains("Error")) return "bind failed: " + bound.dump();
    return bound["Error"].get<std::string>();
  }

  void ManyPodsEndBoundAnnotatedAndWithoutOverlap(bool node_cache_capable, int nodes, int pods) {
    for (int i = 0; i < nodes; ++i) ASSERT_TRUE(AddMachine(*server_, fmt::format("n{}", i), 16));
    for (int i = 0; i < pods; ++i) {
      ASSERT_TRUE(server_->Create("pods", GuaranteedPod(fmt::format("p{}", i), 2, "default-scheduler")).ok());
    }
    StartExtender();
    for (int i = 0; i < pods; ++i) {
      ASSERT_EQ(ScheduleLikeKubeScheduler(fmt::format("p{}", i), node_cache_capable), "") << "pod p" << i;
    }
    testing::ClusterCheck check = CheckCluster(*server_);
    EXPECT_EQ(check.bound, pods);
    EXPECT_EQ(check.annotated, pods);
    EXPECT_THAT(check.problems, IsEmpty());
  }

  huygens::testing::FakeClock clock_;
  kube::testing::FakeApiServerOptions server_options_;  // SetUp's
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  serving::MetricsRegistry registry_;
  std::unique_ptr<SchedulerService> service_;
  std::unique_ptr<serving::HttpServer> http_;
  std::unique_ptr<httplib::Client> http_client_;
};

TEST_F(ExtenderTest, WithNodeNamesEveryPodEndsBoundAnnotatedAndWithoutOverlap) {
  ManyPodsEndBoundAnnotatedAndWithoutOverlap(/*node_cache_capable=*/true, 24, 180);
}

TEST_F(ExtenderTest, WithFullNodeListsEveryPodEndsBoundAnnotatedAndWithoutOverlap) {
  ManyPodsEndBoundAnnotatedAndWithoutOverlap(/*node_cache_capable=*/false, 12, 90);
}

TEST_F(ExtenderTest, APodThatFitsNoSingleNumaNodeIsFilteredOutWithTheReason) {
  // 64 CPUs: 2 sockets, one NUMA node of 32 each; 40 CPUs fit the node but no NUMA node.
  // 42 CPUs: one socket, one NUMA node (sim::ShapeForCpuCount): 40 fit there.
  ASSERT_TRUE(AddMachine(*server_, "big", 64));
  ASSERT_TRUE(AddMachine(*server_, "huge", 42));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("wide", 40, "default-scheduler")).ok());
  StartExtender();
  json filtered = Post("/filter", Args(*server_->Get("pods", "default", "wide"), true));
  EXPECT_EQ(filtered["nodenames"], json::array({"huge"})) << filtered.dump();
  ASSERT_TRUE(filtered["failedNodes"].contains("big")) << filtered.dump();
  EXPECT_THAT(filtered["failedNodes"]["big"].get<std::string>(), HasSubstr("NUMA: no single NUMA node fits 40 CPUs"));
}

TEST_F(ExtenderTest, OnlyTheLeadingReplicaAnswersAndAStandbyTakesOverWhenTheLeaderGoes) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  // Two replicas of the extender on one Lease, with short lease times (the elector runs on the
  // real clock).
  struct Replica {
    std::unique_ptr<kube::Client> client;
    serving::MetricsRegistry registry;
    std::unique_ptr<SchedulerService> service;
    std::unique_ptr<serving::HttpServer> http;
  };
  auto start = [&](Replica& r, const std::string& identity) {
    r.client = kube::testing::ClientFor(*server_, &clock_);
    ServiceOptions options;
    options.config.extender_enabled = true;
    options.config.leader_election = {.leader_elect = true,
                                      .resource_name = "huygens-extender",
                                      .resource_namespace = "default",
                                      .lease_duration = std::chrono::seconds(3),
                                      .renew_deadline = std::chrono::seconds(2),
                                      .retry_period = std::chrono::milliseconds(200)};
    options.identity = identity;
    auto service = SchedulerService::Create(r.client.get(), options, &r.registry);
    ASSERT_TRUE(service.ok()) << service.status();
    r.service = *std::move(service);
    r.http = std::make_unique<serving::HttpServer>(serving::HttpServerOptions{}, nullptr);
    r.service->ServeExtender(*r.http);
    ASSERT_TRUE(r.http->Start().ok());
    r.service->Start();
  };
  json pod = GuaranteedPod("p", 1);
  pod["metadata"]["uid"] = "p-uid";
  const std::string args = json{{"Pod", pod}, {"NodeNames", {"n0"}}}.dump();
  auto filter_status = [&](Replica& r) {
    httplib::Client c("127.0.0.1", r.http->port());
    auto res = c.Post("/filter", args, "application/json");
    return res ? res->status : -1;
  };
  Replica a, b;
  start(a, "a");
  ASSERT_TRUE(WaitFor([&] { return a.service->Leading() && a.service->Synced(); }));
  start(b, "b");
  ASSERT_TRUE(WaitFor([&] { return b.service->Synced(); }));
  EXPECT_FALSE(b.service->Leading());
  EXPECT_EQ(filter_status(a), 200);
  EXPECT_EQ(filter_status(b), 503) << "a standby answered kube-scheduler";
  // The leader goes (and releases the Lease): the standby leads and answers.
  a.http->Stop();
  a.service->Stop();
  ASSERT_TRUE(WaitFor([&] { return b.service->Leading(); }, std::chrono::seconds(10)));
  EXPECT_EQ(filter_status(b), 200);
  b.http->Stop();
  b.service->Stop();
}

TEST_F(ExtenderTest, AFailedBindingReturnsTheErrorRemovesTheAnnotationAndUnreserves) {
  // One 4-CPU node: a 4-CPU pod whose Binding fails must leave the node free for another.
  ASSERT_TRUE(AddMachine(*server_, "n0", 4));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("first", 4, "default-scheduler")).ok());
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("second", 4, "default-scheduler")).ok());
  StartExtender();
  server_->FailNext("create", "pods/binding", 1, 409);
  EXPECT_THAT(ScheduleLikeKubeScheduler("first", true), HasSubstr("Binding"));
  json first = *server_->Get("pods", "default", "first");
  EXPECT_TRUE(first["spec"].value("nodeName", "").empty());
  EXPECT_FALSE(first["metadata"].value("annotations", json::object()).contains(kAllocationAnnotation));
  EXPECT_EQ(ScheduleLikeKubeScheduler("second", true), "");
  testing::ClusterCheck check = CheckCluster(*server_);
  EXPECT_EQ(check.bound, 1);
  EXPECT_EQ(check.annotated, 1);
  // The node is now full: the first pod is filtered out there.
  json filtered = Post("/filter", Args(*server_->Get("pods", "default", "first"), true));
  EXPECT_EQ(filtered["nodenames"], json::array());
}

TEST_F(ExtenderTest, APodWithoutExclusiveCpusPassesScoresNeutrallyAndIsOnlyBound) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(AddMachine(*server_, "n1", 16));
  json pod = GuaranteedPod("burstable", 2, "default-scheduler");
  pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "4";  // Burstable: shared pool
  ASSERT_TRUE(server_->Create("pods", pod).ok());
  StartExtender();
  json stored = *server_->Get("pods", "default", "burstable");
  json filtered = Post("/filter", Args(stored, true));
  EXPECT_EQ(filtered["nodenames"], json::array({"n0", "n1"}));
  json priorities = Post("/prioritize", Args(stored, true));
  EXPECT_EQ(priorities, json::parse(R"([{"host":"n0","score":0},{"host":"n1","score":0}])"));
  EXPECT_EQ(ScheduleLikeKubeScheduler("burstable", true), "");
  json bound = *server_->Get("pods", "default", "burstable");
  EXPECT_EQ(bound["spec"].value("nodeName", ""), "n0");
  EXPECT_FALSE(bound["metadata"].value("annotations", json::object()).contains(kAllocationAnnotation));
}

TEST_F(ExtenderTest, FilterAndPrioritizeAnswerWhileABindingIsHeldAndASecondBindOfThatPodIsRefused) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2, "default-scheduler")).ok());
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("b", 2, "default-scheduler")).ok());
  StartExtender();
  json a = *server_->Get("pods", "default", "a");
  const json bind_a = {{"PodName", "a"}, {"PodNamespace", "default"}, {"PodUID", a["metadata"]["uid"]}, {"Node", "n0"}};
  ASSERT_EQ(Post("/filter", Args(a, true))["nodenames"], json::array({"n0"}));
  // a's bind, on a connection of its own, waits for its Binding, which the API server holds.
  server_->HoldRequests("create", "pods/binding");
  json a_bound;
  std::thread binder([&] {
    httplib::Client other("127.0.0.1", http_->port());
    other.set_read_timeout(30, 0);
    auto r = other.Post("/bind", bind_a.dump(), "application/json");
    if (r) a_bound = json::parse(r->body, nullptr, false);
  });
  ASSERT_TRUE(WaitFor([&] { return server_->HeldRequests() == 1; }));
  // Meanwhile the verbs answer (a bind that held the cache's lock across the Binding would keep
  // them waiting past this timeout), with a's CPUs held.
  http_client_->set_read_timeout(5, 0);
  json b = *server_->Get("pods", "default", "b");
  EXPECT_EQ(Post("/filter", Args(b, true))["nodenames"], json::array({"n0"}));
  EXPECT_EQ(Post("/prioritize", Args(b, true)), json::parse(R"([{"host":"n0","score":0}])"));
  EXPECT_EQ(Post("/filter", Args(a, true))["nodenames"], json::array({"n0"}));
  EXPECT_THAT(Post("/bind", bind_a).value("Error", ""), HasSubstr("a bind of this pod is still in flight"));
  server_->ReleaseRequests();
  binder.join();
  EXPECT_EQ(a_bound, json::parse(R"({"Error":""})"));
  EXPECT_EQ(ScheduleLikeKubeScheduler("b", true), "");
  testing::ClusterCheck check = CheckCluster(*server_);
  EXPECT_EQ(check.bound, 2);
  EXPECT_THAT(check.problems, IsEmpty());
}

TEST_F(ExtenderTest, BindIsRefusedForANodeThePodWasNotFilteredOnto) {
  // n1 is too small for the 4-CPU pod: filter passes n0 only.
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(AddMachine(*server_, "n1", 2));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("big", 4, "default-scheduler")).ok());
  json burstable = GuaranteedPod("burstable", 2, "default-scheduler");
  burstable["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "4";
  ASSERT_TRUE(server_->Create("pods", burstable).ok());
  StartExtender();
  auto bind = [&](const std::string& name, const std::string& node) {
    json pod = *server_->Get("pods", "default", name);
    json reply = Post("/bind", {{"PodName", name}, {"PodNamespace", "default"},
                                {"PodUID", pod["metadata"]["uid"]}, {"Node", node}});
    return reply.value("Error", std::string("no reply"));
  };
  json big = *server_->Get("pods", "default", "big");
  EXPECT_EQ(Post("/filter", Args(big, true))["nodenames"], json::array({"n0"}));
  EXPECT_THAT(bind("big", "n1"), HasSubstr("was not filtered onto node n1"));
  // A pod without exclusive CPUs that was never filtered is not bound either.
  EXPECT_THAT(bind("burstable", "n0"), HasSubstr("was not filtered onto node n0"));
  testing::ClusterCheck check = CheckCluster(*server_);
  EXPECT_EQ(check.bound, 0);
  EXPECT_EQ(check.annotated, 0);
  // A filter serves one bind: after the refused one, kube-scheduler filters again and binds.
  EXPECT_EQ(ScheduleLikeKubeScheduler("big", true), "");
  EXPECT_EQ((*server_->Get("pods", "default", "big"))["spec"].value("nodeName", ""), "n0");
  EXPECT_THAT(registry_.Expose(), HasSubstr("huygens_scheduler_extender_requests_total{verb=\"bind\",result=\"refused\"} 2"));
}

TEST_F(ExtenderTest, DebugLogsNameThePodAndEachNodesFilterVerdictAsStandaloneDoes) {
  ASSERT_TRUE(AddMachine(*server_, "small", 4));
  ASSERT_TRUE(AddMachine(*server_, "big", 16));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 8, "default-scheduler")).ok());
  StartExtender();
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  const spdlog::level::level_enum before = spdlog::get_level();
  spdlog::default_logger()->sinks().push_back(sink);
  spdlog::set_level(spdlog::level::debug);
  json filtered = Post("/filter", Args(*server_->Get("pods", "default", "a"), true));
  spdlog::set_level(before);
  spdlog::default_logger()->sinks().pop_back();
  EXPECT_EQ(filtered["nodenames"], json::array({"big"})) << filtered.dump();
  EXPECT_THAT(log.str(), HasSubstr("pod default/a: node small refused: Insufficient cpu\n"));
  EXPECT_THAT(log.str(), HasSubstr("pod default/a: node big feasible\n"));
}

// A server that sends no bookmarks: a quiet watch is heard only when its objects change.
class QuietServerExtenderTest : public ExtenderTest {
 protected:
  QuietServerExtenderTest() { server_options_.bookmark_interval = std::chrono::hours(1); }
};

TEST_F(QuietServerExtenderTest, WhileAnInformerIsStaleFilterAndBindAnswerWhyAndBindNothingUntilItIsBack) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2, "default-scheduler")).ok());
  // The informers list, and the API server takes their watches and sends nothing (a watch
  // answered after the clock moved on would count as heard then).
  server_->HoldRequests("watch", "*");
  StartExtender(/*wait=*/false);
  const json pod = *server_->Get("pods", "default", "a");
  // The pod informer never shows the takeover fence's write: the loop's reread (every 10 s)
  // completes it.
  ASSERT_TRUE(WaitFor([&] {
    clock_.Advance(std::chrono::seconds(1));
    json reply = Post("/filter", Args(pod, true));  // null while not leading yet (503)
    return reply.is_object() && !reply.contains("error");
  }));
  clock_.Advance(std::chrono::minutes(3));  // every informer past its stale bound (150 s)
  json filtered = Post("/filter", Args(pod, true));
  ASSERT_TRUE(filtered.contains("error")) << filtered.dump();
  EXPECT_THAT(filtered["error"].get<std::string>(),
              HasSubstr("huygens-scheduler: scheduling paused: nodes informer heard nothing from the API server"));
  json bound = Post("/bind", {{"PodName", "a"}, {"PodNamespace", "default"}, {"PodUID", pod["metadata"]["uid"]},
                              {"Node", "n0"}});
  EXPECT_THAT(bound.value("Error", ""), HasSubstr("not bound to n0: scheduling paused: nodes informer heard nothing"));
  EXPECT_EQ(CheckCluster(*server_).bound, 0);

  server_->ReleaseRequests();  // the watches are answered: heard again
  ASSERT_TRUE(WaitFor([&] { return !Post("/filter", Args(pod, true)).contains("error"); }));
  EXPECT_EQ(ScheduleLikeKubeScheduler("a", true), "");
  EXPECT_EQ(CheckCluster(*server_).bound, 1);
}

// The takeover fence in extender mode (scheduler/scheduling_loop.h): a replica that starts
// answering kube-scheduler first writes huygens.io/scheduler-fence on every pending pod it could
// bind with CPUs, so a Binding the previous extender sent from its read of the pod is refused.
TEST_F(ExtenderTest, ItFencesThePendingExclusivePodsFirstSoADeposedExtendersLateBindingIsRefused) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  auto created = server_->Create("pods", GuaranteedPod("late", 4, "default-scheduler"));
  ASSERT_TRUE(created.ok());
  json burstable = GuaranteedPod("burstable", 2, "default-scheduler");
  burstable["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "4";  // no CPUs of its own
  ASSERT_TRUE(server_->Create("pods", burstable).ok());
  const std::string read_rv = (*created)["metadata"]["resourceVersion"];
  StartExtender();
  const json fenced = *server_->Get("pods", "default", "late");
  EXPECT_FALSE(fenced["metadata"].value("annotations", json::object()).value(kSchedulerFenceAnnotation, "").empty());
  EXPECT_NE(fenced["metadata"]["resourceVersion"], read_rv);
  EXPECT_FALSE(server_->Get("pods", "default", "burstable")->at("metadata").value("annotations", json::object())
                   .contains(kSchedulerFenceAnnotation));

  // The deposed extender's Binding, from its read of the pod: refused.
  absl::Status late = client_->Bind("default", "late", "n0", (*created)["metadata"].value("uid", ""),
                                    {{kAllocationAnnotation, "{}"}}, read_rv);
  EXPECT_EQ(kube::HttpCode(late), 409) << late;
  EXPECT_EQ(ScheduleLikeKubeScheduler("late", true), "");
  EXPECT_THAT(CheckCluster(*server_).problems, IsEmpty());
}

TEST_F(ExtenderTest, TheFenceWritesSeveralPendingPodsAtOnce) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(server_->Create("pods", GuaranteedPod(fmt::format("p{}", i), 2, "default-scheduler")).ok());
  }
  // Written one after another, the fence would have one write held at a time.
  server_->HoldRequests("patch", "pods");
  StartExtender(/*wait=*/false);
  EXPECT_TRUE(WaitFor([&] { return server_->HeldRequests() == 4; })) << server_->HeldRequests();
  server_->ReleaseRequests();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(WaitFor([&] {
      return !server_->Get("pods", "default", fmt::format("p{}", i))->at("metadata").value("annotations", json::object())
                  .value(kSchedulerFenceAnnotation, "").empty();
    })) << "p" << i;
  }
  // Once the pod informer has shown the writes, the verbs answer.
  const json p0 = *server_->Get("pods", "default", "p0");
  ASSERT_TRUE(WaitFor([&] {
    json filtered = Post("/filter", Args(p0, true));
    return filtered.is_object() && !filtered.contains("error");
  }));
  EXPECT_EQ(ScheduleLikeKubeScheduler("p0", true), "");
}

// Until the pod informer shows the fence writes, filter and bind answer why and bind nothing;
// the loop's reread of the awaited pods (every 10 s) completes the fence when the watch stays
// silent.
TEST_F(ExtenderTest, UntilTheFenceIsSeenFilterAndBindAnswerWhyAndBindNothing) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("a", 2, "default-scheduler")).ok());
  server_->HoldRequests("watch", "pods");  // listed; its watch taken and silent
  StartExtender(/*wait=*/false);
  ASSERT_TRUE(WaitFor([&] {
    return !server_->Get("pods", "default", "a")->at("metadata").value("annotations", json::object())
                .value(kSchedulerFenceAnnotation, "").empty();
  }));
  const json pod = *server_->Get("pods", "default", "a");
  json filtered = Post("/filter", Args(pod, true));
  EXPECT_THAT(filtered.value("error", ""), HasSubstr("huygens-scheduler: takeover fence: this leader's writes"))
      << filtered.dump();
  json bound = Post("/bind", {{"PodName", "a"}, {"PodNamespace", "default"}, {"PodUID", pod["metadata"]["uid"]},
                              {"Node", "n0"}});
  EXPECT_THAT(bound.value("Error", ""), HasSubstr("not bound to n0: takeover fence"));
  EXPECT_EQ(CheckCluster(*server_).bound, 0);

  ASSERT_TRUE(WaitFor([&] {
    clock_.Advance(std::chrono::seconds(1));  // to the loop's reread
    json reply = Post("/filter", Args(pod, true));  // null while not leading yet (503)
    return reply.is_object() && !reply.contains("error");
  }));
  EXPECT_EQ(ScheduleLikeKubeScheduler("a", true), "");
  EXPECT_EQ(CheckCluster(*server_).bound, 1);
  server_->ReleaseRequests();
}

TEST_F(ExtenderTest, MalformedRequestsGet400WithAJsonErrorAndChangeNothing) {
  ASSERT_TRUE(AddMachine(*server_, "n0", 16));
  ASSERT_TRUE(server_->Create("pods", GuaranteedPod("p", 2, "default-scheduler")).ok());
  StartExtender();
  json pod = *server_->Get("pods", "default", "p");
  struct Case {
    std::string path;
    std::string body;
    std::string error_key;
    std::string says;
  };
  const Case cases[] = {
      {"/filter", "{", "error", "not valid JSON"},
      {"/filter", R"({"nodenames":["n0"]})", "error", "pod: missing"},
      {"/prioritize", json{{"pod", pod}}.dump(), "error", "exactly one of them"},
      {"/filter", json{{"pod", pod}, {"nodenames", {1}}}.dump(), "error", "nodenames[0]"},
      {"/filter", json{{"pod", pod}, {"nodes", {{"items", {{{"metadata", json::object()}}}}}}}.dump(), "error",
       "nodes.items[0].metadata.name"},
      {"/bind", R"({"PodName":"p","PodNamespace":"default","Node":"n0"})", "Error", "PodUID"},
      {"/bind", "[]", "Error", "not a JSON object"},
  };
  for (const Case& c : cases) {
    auto r = http_client_->Post(c.path, c.body, "application/json");
    ASSERT_TRUE(r) << c.path << " " << c.body;
    EXPECT_EQ(r->status, 400) << c.body;
    json reply = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(reply.is_object() && reply.contains(c.error_key)) << r->body;
    EXPECT_THAT(reply[c.error_key].get<std::string>(), HasSubstr(c.says)) << c.body;
  }
  testing::ClusterCheck check = CheckCluster(*server_);
  EXPECT_EQ(check.bound, 0);
  EXPECT_EQ(check.annotated, 0);
  EXPECT_THAT(registry_.Expose(), HasSubstr("huygens_scheduler_extender_requests_total{verb=\"bind\",result=\"bad_request\"} 2"));
}

}  // namespace
}  // namespace huygens::scheduler

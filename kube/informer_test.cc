#include "kube/informer.h"

#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/tcp_proxy.h"
#include "kube/testing/test_client.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace huygens::kube {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using ::testing::HasSubstr;

json Node(const std::string& name) { return {{"metadata", {{"name", name}}}}; }

// Records handler calls as "add n1", "update n1", "delete n1".
struct Recorder {
  std::mutex mu;
  std::vector<std::string> calls;
  InformerHandlers Handlers() {
    auto name = [](const json& o) { return o["metadata"]["name"].get<std::string>(); };
    return InformerHandlers{
        [this, name](const json& o) { Add("add " + name(o)); },
        [this, name](const json&, const json& o) { Add("update " + name(o)); },
        [this, name](const json& o) { Add("delete " + name(o)); }};
  }
  void Add(std::string s) {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(std::move(s));
  }
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::exchange(calls, {});
  }
};

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeApiServerOptions options;
    options.bookmark_interval = std::chrono::milliseconds(100);
    auto server = FakeApiServer::Start(options);
    ASSERT_TRUE(server.ok());
    server_ = std::move(*server);
    client_ = testing::ClientFor(*server_, &clock_);
  }
  InformerOptions Options() {
    InformerOptions o;
    o.watch_timeout = std::chrono::seconds(1);  // each watch step ends within a second
    return o;
  }
  // A client to `url` whose watches are cut after 1 s without a byte; stale_after() of its
  // informers is then 1 s + kStaleMargin.
  std::unique_ptr<Client> IdleLimitedClient(std::string url) {
    RestConfig config = testing::TestRestConfig(std::move(url));
    config.watch_idle_timeout = std::chrono::seconds(1);
    return testing::ClientFor(config, &clock_);
  }
  // Nodes n1 and n2, and an informer on nodes (not started; 300 s watches) whose client
  // reaches the server through proxy_ with a 1 s idle limit; null if either cannot be made.
  std::unique_ptr<Informer> BehindProxy(Recorder& recorder) {
    if (!client_->Create(Nodes(), "", Node("n1")).ok() || !client_->Create(Nodes(), "", Node("n2")).ok()) {
      return nullptr;
    }
    auto proxy = testing::TcpProxy::Start(server_->port());
    if (!proxy.ok()) return nullptr;
    proxy_ = std::move(*proxy);
    proxied_client_ = IdleLimitedClient(proxy_->url());
    InformerOptions options = Options();
    options.watch_timeout = std::chrono::seconds(300);
    return std::make_unique<Informer>(proxied_client_.get(), Nodes(), options, recorder.Handlers(), &clock_);
  }
  // Freezes proxy_, then deletes n1 and labels n2 (a=b) behind it. Returns the connections
  // proxy_ had accepted when it froze.
  int FreezeAndChangeNodes() {
    proxy_->Freeze();
    const int connections = proxy_->accepted();
    EXPECT_TRUE(client_->Delete(Nodes(), "", "n1").ok());
    EXPECT_TRUE(client_->MergePatch(Nodes(), "", "n2", {{"metadata", {{"labels", {{"a", "b"}}}}}}).ok());
    return connections;
  }
  // Waits (real time, bounded) until `done` holds.
  static bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 200; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  }
  huygens::testing::FakeClock clock_;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<testing::TcpProxy> proxy_;       // BehindProxy's
  std::unique_ptr<Client> proxied_client_;         // through proxy_
};

TEST_F(InformerTest, FirstStepListsThenWatchStepsApplyAddsUpdatesAndDeletes) {
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n1")).ok());
  Recorder recorder;
  Informer informer(client_.get(), Nodes(), Options(), recorder.Handlers(), &clock_);
  ASSERT_TRUE(informer.RunOnce().ok());
  EXPECT_TRUE(informer.HasSynced());
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"add n1"}));

  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n2")).ok());
  auto patched = client_->MergePatch(Nodes(), "", "n1", {{"metadata", {{"labels", {{"a", "b"}}}}}});
  ASSERT_TRUE(patched.ok());
  ASSERT_TRUE(client_->Delete(Nodes(), "", "n2").ok());
  ASSERT_TRUE(informer.RunOnce().ok());  // one watch session, ended by the server after 1 s
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"add n2", "update n1", "delete n2"}));
  EXPECT_EQ(informer.size(), 1u);
  EXPECT_EQ((*informer.Get("", "n1"))["metadata"]["labels"]["a"], "b");
  // The version moved past the patch, to the delete that followed it. Not compared with the
  // server's version after the delete: on the real server, others' writes (the
  // controller-manager's leases) move that on between the delete and the read, and a watch on
  // nodes sees them only through a bookmark, which may not come within the session.
  const auto patch_version = ResourceVersionNumber((*patched)["metadata"]["resourceVersion"].get<std::string>());
  ASSERT_TRUE(patch_version.has_value());
  const auto informer_version = ResourceVersionNumber(informer.resource_version());
  ASSERT_TRUE(informer_version.has_value()) << informer.resource_version();
  EXPECT_GT(*informer_version, *patch_version);
  EXPECT_EQ(informer.lists(), 1);
}

TEST_F(InformerTest, HasSyncedOnlyOnceTheHandlersHaveSeenTheWholeFirstList) {
  for (const char* n : {"n1", "n2", "n3"}) ASSERT_TRUE(client_->Create(Nodes(), "", Node(n)).ok());
  // A consumer that waits for HasSynced must find every listed object in what its handlers
  // built: while the handlers are still delivering the list, the informer is not synced.
  Informer* self = nullptr;
  std::vector<bool> synced_during_delivery;
  InformerHandlers handlers{[&](const json&) { synced_during_delivery.push_back(self->HasSynced()); }, nullptr,
                            nullptr};
  Informer informer(client_.get(), Nodes(), Options(), handlers, &clock_);
  self = &informer;
  ASSERT_TRUE(informer.RunOnce().ok());
  EXPECT_EQ(synced_during_delivery, (std::vector<bool>{false, false, false}));
  EXPECT_TRUE(informer.HasSynced());
}

TEST_F(InformerTest, ItsVersionMovesOnlyOnceTheHandlersHaveTheChangesUpToIt) {
  // A consumer reads resource_version(), then drains what its handlers queued, and counts on
  // holding every change up to that version (the scheduler's takeover fence does): the version
  // must not reach an object's before the handler has that object, in a list or a watch.
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n1")).ok());
  Informer* self = nullptr;
  std::vector<std::pair<std::string, std::string>> seen;  // the object's version, the informer's
  auto record = [&](const json& o) {
    seen.emplace_back(o["metadata"]["resourceVersion"].get<std::string>(), self->resource_version());
  };
  InformerHandlers handlers{record, [&](const json&, const json& o) { record(o); }, record};
  Informer informer(client_.get(), Nodes(), Options(), handlers, &clock_);
  self = &informer;
  ASSERT_TRUE(informer.RunOnce().ok());
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n2")).ok());
  ASSERT_TRUE(client_->MergePatch(Nodes(), "", "n1", {{"metadata", {{"labels", {{"a", "b"}}}}}}).ok());
  ASSERT_TRUE(client_->Delete(Nodes(), "", "n2").ok());
  ASSERT_TRUE(informer.RunOnce().ok());
  ASSERT_EQ(seen.size(), 4u);  // add n1 (list), add n2, update n1, delete n2
  for (const auto& [object, informer_version] : seen) {
    const auto o = ResourceVersionNumber(object);
    ASSERT_TRUE(o.has_value()) << object;
    const auto i = ResourceVersionNumber(informer_version);
    if (i.has_value()) {
      EXPECT_LT(*i, *o) << "the informer's version reached " << object << " before its handler";
    }
  }
  EXPECT_EQ(informer.resource_version(), seen.back().first);
}

TEST_F(InformerTest, ExpiredVersionMakesTheNextStepRelistAndDiffTheCache) {
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n1")).ok());
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n2")).ok());
  Recorder recorder;
  Informer informer(client_.get(), Nodes(), Options(), recorder.Handlers(), &clock_);
  ASSERT_TRUE(informer.RunOnce().ok());
  recorder.Take();
  // Changes happen while the informer is not watching, and the restarted apiserver's watch
  // cache no longer holds them.
  ASSERT_TRUE(client_->Delete(Nodes(), "", "n1").ok());
  ASSERT_TRUE(client_->MergePatch(Nodes(), "", "n2", {{"metadata", {{"labels", {{"a", "b"}}}}}}).ok());
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n3")).ok());
  server_->RestartApiServer();
  absl::Status watched = informer.RunOnce();
  EXPECT_EQ(watched.code(), absl::StatusCode::kOutOfRange) << watched;
  EXPECT_EQ(informer.resource_version(), "");
  ASSERT_TRUE(informer.RunOnce().ok());  // the relist
  EXPECT_EQ(informer.lists(), 2);
  // The relist reports deletes, then adds, then updates.
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"delete n1", "add n3", "update n2"}));
  EXPECT_EQ(informer.size(), 2u);
}

TEST_F(InformerTest, DroppedWatchIsResumedFromTheLastVersionWithoutRelisting) {
  InformerOptions options = Options();
  options.watch_timeout = std::chrono::seconds(30);
  Recorder recorder;
  Informer informer(client_.get(), Nodes(), options, recorder.Handlers(), &clock_);
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.HasSynced() && server_->ActiveWatches() == 1; }));
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n1")).ok());
  ASSERT_TRUE(Eventually([&] { return informer.size() == 1; }));
  server_->DropWatches();
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n2")).ok());  // while no watch is open
  ASSERT_TRUE(Eventually([&] { return informer.size() == 2; }));
  informer.Stop();
  EXPECT_EQ(server_->RequestCount("list", "nodes"), 1);
  EXPECT_GE(server_->RequestCount("watch", "nodes"), 2);
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"add n1", "add n2"}));
  // The resume waited a backoff (on the fake clock).
  EXPECT_GE(clock_.Elapsed(), std::chrono::milliseconds(200));
}

TEST_F(InformerTest, AFrozenWatchIsCutAtTheIdleLimitAndTheInformerCatchesUp) {
  auto client = IdleLimitedClient(server_->url());
  InformerOptions options = Options();
  options.watch_timeout = std::chrono::seconds(300);
  Recorder recorder;
  Informer informer(client.get(), Nodes(), options, recorder.Handlers(), &clock_);
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.HasSynced() && server_->ActiveWatches() == 1; }));
  // The connection is lost and the next watch hangs: the apiserver accepted it and sends
  // nothing, as a frozen or half-open connection would.
  server_->HoldRequests("watch", "nodes");
  server_->DropWatches();
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n1")).ok());
  // Without an idle limit the informer would wait on the frozen watch for ever.
  EXPECT_TRUE(Eventually([&] { return server_->RequestCount("watch", "nodes") >= 3; }));
  server_->ReleaseRequests();
  EXPECT_TRUE(Eventually([&] { return informer.size() == 1; }));
  informer.Stop();
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"add n1"}));
}

TEST_F(InformerTest, AnErrorAnswerToTheWatchOtherThan429MakesTheNextStepRelist) {
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n1")).ok());
  Recorder recorder;
  Informer informer(client_.get(), Nodes(), Options(), recorder.Handlers(), &clock_);
  ASSERT_TRUE(informer.RunOnce().ok());
  recorder.Take();
  ASSERT_TRUE(client_->Delete(Nodes(), "", "n1").ok());
  server_->FailNext("watch", "nodes", 1, 500);
  absl::Status watched = informer.RunOnce();
  EXPECT_EQ(watched.code(), absl::StatusCode::kInternal) << watched;
  EXPECT_EQ(informer.resource_version(), "");  // the next step lists
  ASSERT_TRUE(informer.RunOnce().ok());
  EXPECT_EQ(informer.lists(), 2);
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"delete n1"}));
}

TEST_F(InformerTest, A429AnswerToTheWatchIsRetriedFromTheSameVersion) {
  Informer informer(client_.get(), Nodes(), Options(), {}, &clock_);
  ASSERT_TRUE(informer.RunOnce().ok());
  const std::string version = informer.resource_version();
  server_->FailNext("watch", "nodes", 1, 429);
  absl::Status watched = informer.RunOnce();
  EXPECT_EQ(watched.code(), absl::StatusCode::kResourceExhausted) << watched;
  EXPECT_EQ(informer.resource_version(), version);
  ASSERT_TRUE(informer.RunOnce().ok());
  EXPECT_EQ(informer.lists(), 1);
}

TEST_F(InformerTest, AFrozenConnectionMakesTheInformerStaleUntilItReconnectsAndCatchesUp) {
  Recorder recorder;
  std::unique_ptr<Informer> behind_proxy = BehindProxy(recorder);
  ASSERT_NE(behind_proxy, nullptr);
  Informer& informer = *behind_proxy;
  EXPECT_EQ(informer.stale_after(), std::chrono::seconds(1) + kStaleMargin);
  EXPECT_THAT(std::string(informer.Ready().message()), HasSubstr("nodes informer has not listed yet"));
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.HasSynced() && server_->ActiveWatches() == 1; }));
  EXPECT_TRUE(informer.Ready().ok()) << informer.Ready();
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"add n1", "add n2"}));

  // The network between informer and apiserver stops carrying anything; nothing is closed.
  const int connections = FreezeAndChangeNodes();
  // The idle limit cuts the frozen watch and the informer tries a new connection, which hangs too.
  ASSERT_TRUE(Eventually([&] { return proxy_->accepted() > connections; }));
  EXPECT_TRUE(informer.Ready().ok()) << "within the bound";
  clock_.Advance(informer.stale_after() + std::chrono::seconds(1));
  absl::Status stale = informer.Ready();
  EXPECT_EQ(stale.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(stale.message()), HasSubstr("nodes informer heard nothing from the API server for"));
  EXPECT_THAT(std::string(stale.message()), HasSubstr("(bound 31 s)"));
  EXPECT_TRUE(recorder.Take().empty());

  proxy_->Thaw();
  EXPECT_TRUE(Eventually([&] { return informer.Ready().ok(); })) << informer.Ready();
  EXPECT_TRUE(Eventually([&] { return informer.size() == 1; }));
  informer.Stop();
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"delete n1", "update n2"}));
  EXPECT_EQ(informer.lists(), 1) << "resumed from its version, which the server still holds";
}

TEST_F(InformerTest, AnApiServerRestartedDuringAFreezeMakesTheInformerRelistAndReportTheDifference) {
  Recorder recorder;
  std::unique_ptr<Informer> behind_proxy = BehindProxy(recorder);
  ASSERT_NE(behind_proxy, nullptr);
  Informer& informer = *behind_proxy;
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.HasSynced() && server_->ActiveWatches() == 1; }));
  recorder.Take();

  const int connections = FreezeAndChangeNodes();
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n3")).ok());
  // The restarted apiserver's watch cache no longer holds the informer's version (410).
  server_->RestartApiServer();
  // The frozen watch is cut at the idle limit (the events it buffered are lost with it).
  ASSERT_TRUE(Eventually([&] { return proxy_->accepted() > connections; }));
  clock_.Advance(informer.stale_after() + std::chrono::seconds(1));
  EXPECT_FALSE(informer.Ready().ok());

  proxy_->Thaw();
  EXPECT_TRUE(Eventually([&] { return informer.lists() == 2 && informer.Ready().ok(); })) << informer.Ready();
  informer.Stop();
  // The relist reports deletes, then adds, then updates.
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"delete n1", "add n3", "update n2"}));
  EXPECT_EQ(informer.size(), 2u);
}

TEST_F(InformerTest, AWatchTheServerTookCountsAsHearingFromItWhileTheClusterIsQuiet) {
  auto client = IdleLimitedClient(server_->url());
  InformerOptions options = Options();
  options.watch_timeout = std::chrono::seconds(300);
  Informer informer(client.get(), Nodes(), options, {}, &clock_);
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.HasSynced() && server_->ActiveWatches() == 1; }));
  // No event and no bookmark comes (nothing changes); each watch is cut at the idle limit and
  // reopened. Each opening proves the server alive and the cache current.
  clock_.Advance(std::chrono::seconds(20));
  const int watches = server_->RequestCount("watch", "nodes");
  ASSERT_TRUE(Eventually([&] { return server_->RequestCount("watch", "nodes") > watches; }));
  clock_.Advance(std::chrono::seconds(20));  // 40 s since the list, more than the bound (31 s)
  EXPECT_TRUE(Eventually([&] { return informer.Ready().ok(); })) << informer.Ready();
  informer.Stop();
}

TEST_F(InformerTest, AWatchTheServerTookIsReopenedAtOnceAfterTheIdleLimitCutsIt) {
  auto client = IdleLimitedClient(server_->url());
  InformerOptions options = Options();
  options.watch_timeout = std::chrono::seconds(300);
  options.backoff = {std::chrono::milliseconds(100), std::chrono::seconds(10), 0};
  Informer informer(client.get(), Nodes(), options, {}, &clock_);
  informer.Start();
  // Three quiet sessions cut at the idle limit (1 s each).
  ASSERT_TRUE(Eventually([&] { return server_->RequestCount("watch", "nodes") >= 4; }));
  informer.Stop();
  // No backoff slept (it would have been 100 + 200 + 400 ms on the fake clock): each cut
  // session had already lasted the idle limit.
  EXPECT_EQ(clock_.Elapsed(), Clock::Duration::zero());
}

TEST_F(InformerTest, AQuietWatchCutAtTheIdleLimitIsLoggedAtInfoOnceAndAtDebugAfterwards) {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  sink->set_pattern("%l %v");
  const spdlog::level::level_enum before = spdlog::get_level();
  spdlog::default_logger()->sinks().push_back(sink);
  spdlog::set_level(spdlog::level::debug);
  auto client = IdleLimitedClient(server_->url());
  InformerOptions options = Options();
  options.watch_timeout = std::chrono::seconds(300);
  Informer informer(client.get(), Nodes(), options, {}, &clock_);
  informer.Start();
  // Three quiet sessions cut at the idle limit (1 s each).
  ASSERT_TRUE(Eventually([&] { return server_->RequestCount("watch", "nodes") >= 4; }));
  informer.Stop();
  spdlog::set_level(before);
  spdlog::default_logger()->sinks().pop_back();
  const std::string text = log.str();
  const std::string cut = "kube: informer for nodes: the watch heard nothing for 1 s and was cut at the idle limit; resuming";
  EXPECT_THAT(text, HasSubstr("info " + cut + " (later cuts of this informer's watch are logged at debug level)\n"));
  EXPECT_THAT(text, HasSubstr("debug " + cut + "\n"));
  EXPECT_EQ(text.find("info " + cut), text.rfind("info " + cut)) << text;
  EXPECT_THAT(text, ::testing::Not(HasSubstr("warning"))) << text;
}

TEST_F(InformerTest, FailedListsAreRetriedAfterABackoff) {
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n1")).ok());
  ClientOptions no_retry;
  no_retry.max_attempts = 1;
  auto client = testing::ClientFor(*server_, &clock_, no_retry);
  server_->FailNext("list", "nodes", 2, 500);
  Informer informer(client.get(), Nodes(), Options(), {}, &clock_);
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.HasSynced(); }));
  informer.Stop();
  EXPECT_EQ(server_->RequestCount("list", "nodes"), 3);
  EXPECT_EQ(informer.size(), 1u);
}

}  // namespace
}  // namespace huygens::kube

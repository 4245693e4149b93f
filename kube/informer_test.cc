#include "kube/informer.h"

#include <thread>

#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/test_client.h"

namespace huygens::kube {
namespace {

using nlohmann::json;
using testing::FakeApiServer;

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
};

TEST_F(InformerTest, FirstStepListsThenWatchStepsApplyAddsUpdatesAndDeletes) {
  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n1")).ok());
  Recorder recorder;
  Informer informer(client_.get(), Nodes(), Options(), recorder.Handlers(), &clock_);
  ASSERT_TRUE(informer.RunOnce().ok());
  EXPECT_TRUE(informer.HasSynced());
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"add n1"}));

  ASSERT_TRUE(client_->Create(Nodes(), "", Node("n2")).ok());
  ASSERT_TRUE(client_->MergePatch(Nodes(), "", "n1", {{"metadata", {{"labels", {{"a", "b"}}}}}}).ok());
  ASSERT_TRUE(client_->Delete(Nodes(), "", "n2").ok());
  ASSERT_TRUE(informer.RunOnce().ok());  // one watch session, ended by the server after 1 s
  EXPECT_EQ(recorder.Take(), (std::vector<std::string>{"add n2", "update n1", "delete n2"}));
  EXPECT_EQ(informer.size(), 1u);
  EXPECT_EQ((*informer.Get("", "n1"))["metadata"]["labels"]["a"], "b");
  // Bookmarks moved the version to the server's latest.
  EXPECT_EQ(informer.resource_version(), std::to_string(server_->resource_version()));
  EXPECT_EQ(informer.lists(), 1);
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
  RestConfig config;
  config.server = server_->url();
  config.qps = 0;
  config.watch_idle_timeout = std::chrono::seconds(1);
  auto rest = RestClient::Create(config, &clock_);
  ASSERT_TRUE(rest.ok());
  Client client(std::move(*rest), {}, &clock_);
  InformerOptions options = Options();
  options.watch_timeout = std::chrono::seconds(300);
  Recorder recorder;
  Informer informer(&client, Nodes(), options, recorder.Handlers(), &clock_);
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

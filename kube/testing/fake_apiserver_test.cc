// Behaviours of the fake that kubectl's test does not reach: selector transitions in watches,
// update conflicts, expired continue tokens, generateName, fault injection by verb, and what the
// real kube-apiserver v1.35.4 was seen to do (docs/testbed.md): the not-ready taint on new Nodes,
// watches that outlive an etcd compaction, bookmarks before a watch's timeout; a narrower hold.
#include "kube/testing/fake_apiserver.h"

#include <future>

#include "gtest/gtest.h"
#include "kube/api_error.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/process.h"
#include "kube/testing/test_client.h"

namespace huygens::kube::testing {
namespace {

using huygens::testing::FakeClock;
using nlohmann::json;

class FakeApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeApiServer::Start();
    ASSERT_TRUE(server.ok());
    server_ = std::move(*server);
    ClientOptions no_retry;
    no_retry.max_attempts = 1;
    client_ = ClientFor(*server_, &clock_, no_retry);
  }
  json Pod(const std::string& name, const std::string& tier) {
    return {{"metadata", {{"name", name}, {"labels", {{"tier", tier}}}}}};
  }
  FakeClock clock_;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(FakeApiServerTest, WatchWithASelectorSeesObjectsLeaveAndEnterIt) {
  auto created = client_->Create(Pods(), "default", Pod("a", "gold"));
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE(client_->MergePatch(Pods(), "default", "a", {{"metadata", {{"labels", {{"tier", "lead"}}}}}}).ok());
  ASSERT_TRUE(client_->MergePatch(Pods(), "default", "a", {{"metadata", {{"labels", {{"tier", "gold"}}}}}}).ok());
  WatchOptions options;
  options.resource_version = (*created)["metadata"]["resourceVersion"];
  options.label_selector = "tier=gold";
  options.bookmarks = false;
  options.timeout = std::chrono::seconds(1);
  std::vector<std::string> types;
  ASSERT_TRUE(client_->Watch(Pods(), "default", options, [&](const WatchEvent& e) {
                types.push_back(e.type);
                return types.size() < 2;
              }).ok());
  EXPECT_EQ(types, (std::vector<std::string>{"DELETED", "ADDED"}));
}

TEST_F(FakeApiServerTest, UpdateWithAStaleVersionConflictsAndWithTheCurrentOneSucceeds) {
  auto created = client_->Create(Nodes(), "", {{"metadata", {{"name", "n1"}}}});
  ASSERT_TRUE(created.ok());
  json stale = *created;
  ASSERT_TRUE(client_->MergePatch(Nodes(), "", "n1", {{"metadata", {{"labels", {{"a", "b"}}}}}}).ok());
  stale["metadata"]["labels"] = {{"c", "d"}};
  EXPECT_TRUE(IsApiConflict(client_->Update(Nodes(), stale).status()));
  json current = *client_->Get(Nodes(), "", "n1");
  current["metadata"]["labels"]["c"] = "d";
  auto updated = client_->Update(Nodes(), current);
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ((*updated)["metadata"]["uid"], (*created)["metadata"]["uid"]);
  EXPECT_NE((*updated)["metadata"]["resourceVersion"], current["metadata"]["resourceVersion"]);
}

TEST_F(FakeApiServerTest, ContinueTokenFromBeforeACompactionIsGone) {
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(client_->Create(Nodes(), "", {{"metadata", {{"name", name}}}}).ok());
  auto page = client_->rest().Send(HttpRequest{"GET", "/api/v1/nodes", {{"limit", "1"}}, "", ""});
  ASSERT_TRUE(page.ok());
  ASSERT_TRUE(client_->Delete(Nodes(), "", "c").ok());
  server_->Compact();
  auto next = client_->rest().Send(
      HttpRequest{"GET", "/api/v1/nodes", {{"limit", "1"}, {"continue", (*page)["metadata"]["continue"]}}, "", ""});
  EXPECT_TRUE(IsApiGone(next.status())) << next.status();
  EXPECT_EQ(Reason(next.status()), "Expired");
}

TEST_F(FakeApiServerTest, GenerateNameMakesAFreshNameAndFaultsMatchTheirVerbOnly) {
  auto created = client_->Create(Pods(), "default", {{"metadata", {{"generateName", "web-"}}}});
  ASSERT_TRUE(created.ok());
  std::string name = (*created)["metadata"]["name"];
  EXPECT_EQ(name.rfind("web-", 0), 0u);
  EXPECT_EQ(name.size(), 9u);
  server_->FailNext("patch", "pods", 1, 500);
  EXPECT_TRUE(client_->Get(Pods(), "default", name).ok());  // a get is not a patch
  auto patched = client_->MergePatch(Pods(), "default", name, {{"metadata", {{"labels", {{"a", "b"}}}}}});
  EXPECT_EQ(HttpCode(patched.status()), 500);
  EXPECT_TRUE(client_->MergePatch(Pods(), "default", name, {{"metadata", {{"labels", {{"a", "b"}}}}}}).ok());
}

// The types of the events a watch from `from` (timeout `seconds`, bookmarks on) delivers.
std::vector<std::string> WatchTypes(Client& client, const std::string& from, int seconds) {
  WatchOptions options;
  options.resource_version = from;
  options.timeout = std::chrono::seconds(seconds);
  std::vector<std::string> types;
  EXPECT_TRUE(client.Watch(Pods(), "default", options, [&](const WatchEvent& e) {
                types.push_back(e.type);
                return true;
              }).ok());
  return types;
}

TEST_F(FakeApiServerTest, ANewNodeIsTaintedNotReadyAsTaintNodesByConditionDoes) {
  auto created = client_->Create(Nodes(), "", {{"metadata", {{"name", "n1"}}},
                                               {"spec", {{"taints", {{{"key", "a"}, {"effect", "NoExecute"}}}}}}});
  ASSERT_TRUE(created.ok());
  EXPECT_EQ((*created)["spec"]["taints"],
            json::parse(R"([{"key":"a","effect":"NoExecute"},{"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}])"));
}

TEST_F(FakeApiServerTest, ACompactionLeavesWatchesToTheWatchCacheButARestartExpiresThem) {
  auto created = client_->Create(Pods(), "default", Pod("a", "gold"));
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE(client_->Create(Pods(), "default", Pod("b", "gold")).ok());
  const std::string from = (*created)["metadata"]["resourceVersion"];
  server_->Compact();
  EXPECT_EQ(WatchTypes(*client_, from, 1), (std::vector<std::string>{"ADDED"}));
  server_->RestartApiServer();
  EXPECT_EQ(WatchTypes(*client_, from, 1), (std::vector<std::string>{"ERROR"}));
}

TEST_F(FakeApiServerTest, ANarrowerHoldLetsGoTheHeldRequestsItNoLongerMatches) {
  ASSERT_TRUE(client_->Create(Nodes(), "", {{"metadata", {{"name", "n1"}}}}).ok());
  ASSERT_TRUE(client_->Create(Pods(), "default", Pod("a", "gold")).ok());
  server_->HoldRequests("get", "*");
  auto node = std::async(std::launch::async, [&] { return client_->Get(Nodes(), "", "n1"); });
  auto pod = std::async(std::launch::async, [&] { return client_->Get(Pods(), "default", "a"); });
  ASSERT_TRUE(WaitFor([&] { return server_->HeldRequests() == 2; }));
  server_->HoldRequests("get", "nodes");
  ASSERT_EQ(pod.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "the pod's get is still held";
  EXPECT_TRUE(pod.get().ok());
  EXPECT_EQ(server_->HeldRequests(), 1);
  EXPECT_EQ(node.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  server_->ReleaseRequests();
  EXPECT_TRUE(node.get().ok());
}

TEST(FakeApiServerBookmarks, OneComesTwoSecondsBeforeTheTimeoutButNoneWhileNothingMoved) {
  FakeApiServerOptions options;
  options.bookmark_interval = std::chrono::seconds(60);  // the real server's minute
  auto server = FakeApiServer::Start(options);
  ASSERT_TRUE(server.ok());
  FakeClock clock;
  auto client = ClientFor(**server, &clock);
  auto created = client->Create(Pods(), "default", {{"metadata", {{"name", "a"}}}});
  ASSERT_TRUE(created.ok());
  auto patched = client->MergePatch(Pods(), "default", "a", {{"metadata", {{"labels", {{"x", "1"}}}}}});
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ(WatchTypes(*client, (*created)["metadata"]["resourceVersion"], 3),
            (std::vector<std::string>{"MODIFIED", "BOOKMARK"}));
  EXPECT_EQ(WatchTypes(*client, (*patched)["metadata"]["resourceVersion"], 3), std::vector<std::string>{});
}

}  // namespace
}  // namespace huygens::kube::testing

#include "kube/client.h"

#include <thread>

#include "absl/strings/match.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "kube/api_error.h"
#include "kube/numa_affinity_group.h"
#include "kube/testing/fake_apiserver.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/test_client.h"

namespace huygens::kube {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using huygens::testing::FakeClock;

json PodObject(const std::string& name, const std::string& node = "") {
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec", {{"containers", {{{"name", "app"}, {"image", "busybox"}}}}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeApiServerOptions options;
    options.bookmark_interval = std::chrono::milliseconds(100);
    auto server = FakeApiServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = testing::ClientFor(*server_, &clock_);
  }
  FakeClock clock_;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, ListFollowsContinueTokensAcrossPages) {
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(client_->Create(Pods(), "default", PodObject(fmt::format("p{:02}", i))).ok());
  auto list = client_->List(Pods(), "default", ListOptions{"", "", 10});
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->items.size(), 25u);
  EXPECT_EQ(list->items.front()["metadata"]["name"], "p00");
  EXPECT_EQ(list->items.back()["metadata"]["name"], "p24");
  EXPECT_EQ(server_->RequestCount("list", "pods"), 3);
  // The list's version is the snapshot's: at least the last write's, at most the server's now
  // (a real server's version also moves with writes of other clients).
  std::int64_t listed = std::stoll(list->resource_version);
  EXPECT_GE(listed, std::stoll(list->items.back()["metadata"]["resourceVersion"].get<std::string>()));
  EXPECT_LE(listed, server_->resource_version());
}

TEST_F(ClientTest, ListPagesAreOneConsistentSnapshotEvenWhenObjectsChangeBetweenPages) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(client_->Create(Pods(), "default", PodObject(fmt::format("p{}", i))).ok());
  // Page 1 by hand, then delete a pod of page 2 and add one: page 2 still shows the snapshot.
  auto first = client_->rest().Send(HttpRequest{"GET", Pods().CollectionPath("default"), {{"limit", "2"}}, "", ""});
  ASSERT_TRUE(first.ok());
  std::string token = (*first)["metadata"]["continue"];
  ASSERT_TRUE(client_->Delete(Pods(), "default", "p3").ok());
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("p9")).ok());
  ASSERT_TRUE(client_->MergePatch(Pods(), "default", "p2", {{"metadata", {{"labels", {{"late", "1"}}}}}}).ok());
  auto second = client_->rest().Send(
      HttpRequest{"GET", Pods().CollectionPath("default"), {{"limit", "2"}, {"continue", token}}, "", ""});
  ASSERT_TRUE(second.ok());
  ASSERT_EQ((*second)["items"].size(), 2u);
  EXPECT_EQ((*second)["items"][0]["metadata"]["name"], "p2");
  EXPECT_FALSE((*second)["items"][0]["metadata"].contains("labels"));  // as it was at the first page
  EXPECT_EQ((*second)["items"][1]["metadata"]["name"], "p3");
  EXPECT_FALSE((*second)["metadata"].contains("continue"));
}

TEST_F(ClientTest, ListWithSelectorsReturnsOnlyMatchingObjects) {
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a", "n1")).ok());
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("b", "n2")).ok());
  auto on_n2 = client_->List(Pods(), "", ListOptions{"", "spec.nodeName=n2", 500});
  ASSERT_TRUE(on_n2.ok());
  ASSERT_EQ(on_n2->items.size(), 1u);
  EXPECT_EQ(on_n2->items[0]["metadata"]["name"], "b");
}

TEST_F(ClientTest, WatchDeliversEventsAndBookmarksFromAVersion) {
  auto created = client_->Create(Pods(), "default", PodObject("a"));
  ASSERT_TRUE(created.ok());
  std::string from = (*created)["metadata"]["resourceVersion"];
  ASSERT_TRUE(client_->MergePatch(Pods(), "default", "a", {{"metadata", {{"labels", {{"x", "1"}}}}}}).ok());
  std::vector<std::string> types;
  std::string modified_version, bookmark_version;
  WatchOptions options;
  options.resource_version = from;
  // The real server's watch cache sends one about a minute into the watch (and sometimes 2 s
  // before its timeout; none came in watches of 20 s or less through this client on v1.35.4);
  // the fake, every bookmark_interval. So the watch lasts well past the minute on the real
  // server (90 s: a loaded 2-core CI machine once saw no bookmark within 70 s); the watch ends
  // at the first bookmark, so a prompt one costs no more.
  options.timeout = server_->upstream() ? std::chrono::seconds(90) : std::chrono::seconds(20);
  absl::Status s = client_->Watch(Pods(), "default", options, [&](const WatchEvent& e) {
    types.push_back(e.type);
    if (e.type == "MODIFIED") modified_version = e.object["metadata"]["resourceVersion"];
    if (e.type == "BOOKMARK") {
      bookmark_version = e.object["metadata"]["resourceVersion"];
      return false;
    }
    return true;
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(types, (std::vector<std::string>{"MODIFIED", "BOOKMARK"}));
  // A bookmark says the watch has seen everything up to its version.
  ASSERT_FALSE(bookmark_version.empty());
  EXPECT_GE(std::stoll(bookmark_version), std::stoll(modified_version));
  EXPECT_LE(std::stoll(bookmark_version), server_->resource_version());
}

TEST_F(ClientTest, WatchFromAVersionOutsideTheWindowGetsAnExpiredErrorEvent) {
  auto created = client_->Create(Pods(), "default", PodObject("a"));
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("b")).ok());
  // An etcd compaction alone does not expire a watch (the watch cache serves it); the restarted
  // apiserver's new watch cache starts at the current version, so the version at which "a" was
  // created lies outside it.
  server_->Compact();
  server_->RestartApiServer();
  WatchOptions options;
  options.resource_version = (*created)["metadata"]["resourceVersion"];
  options.timeout = std::chrono::seconds(10);
  json error;
  ASSERT_TRUE(client_->Watch(Pods(), "default", options, [&](const WatchEvent& e) {
                error = e.object;
                return e.type != "ERROR";
              }).ok());
  EXPECT_EQ(error["kind"], "Status");
  EXPECT_EQ(error["code"], 410);
  EXPECT_EQ(error["reason"], "Expired");
}

TEST_F(ClientTest, ServerErrorsAreRetriedWithBackoffUntilSuccess) {
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a")).ok());
  server_->FailNext("get", "pods", 3, 500);
  auto pod = client_->Get(Pods(), "default", "a");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(server_->RequestCount("get", "pods"), 4);
  // Three backoffs of at least 100, 200 and 400 ms passed on the fake clock.
  EXPECT_GE(clock_.Elapsed(), std::chrono::milliseconds(700));
}

TEST_F(ClientTest, PersistentServerErrorsGiveUpAfterMaxAttemptsWithTheHttpCode) {
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a")).ok());
  server_->FailNext("get", "pods", 100, 503);
  auto pod = client_->Get(Pods(), "default", "a");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(HttpCode(pod.status()), 503);
  EXPECT_EQ(pod.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server_->RequestCount("get", "pods"), ClientOptions{}.max_attempts);
}

TEST_F(ClientTest, ApiErrorsCarryTheServerStatus) {
  auto missing = client_->Get(Pods(), "default", "nope");
  EXPECT_TRUE(IsApiNotFound(missing.status()));
  EXPECT_NE(missing.status().message().find("pods \"nope\" not found"), std::string::npos);
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a")).ok());
  auto again = client_->Create(Pods(), "default", PodObject("a"));
  EXPECT_TRUE(IsApiAlreadyExists(again.status()));
  EXPECT_FALSE(IsApiConflict(again.status()));
  EXPECT_TRUE(IsApiConflict(client_->Delete(Pods(), "default", "a", "1")));
}

TEST_F(ClientTest, MergePatchWithRetryReappliesAfterAConflictingWrite) {
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a")).ok());
  int calls = 0;
  auto result = client_->MergePatchWithRetry(
      Pods(), "default", "a", [&](const json& current) -> absl::StatusOr<std::optional<json>> {
        if (++calls == 1) {
          // Someone else writes between our read and our patch.
          EXPECT_TRUE(client_->MergePatch(Pods(), "default", "a", {{"metadata", {{"labels", {{"other", "1"}}}}}}).ok());
        }
        EXPECT_EQ(current["metadata"].contains("labels"), calls > 1);
        return std::optional<json>(json{{"metadata", {{"annotations", {{"huygens.io/allocation", "x"}}}}}});
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(server_->RequestCount("patch", "pods"), 3);  // the other writer, the conflict, the retry
  auto stored = server_->Get("pods", "default", "a");
  EXPECT_EQ((*stored)["metadata"]["labels"]["other"], "1");
  EXPECT_EQ((*stored)["metadata"]["annotations"]["huygens.io/allocation"], "x");
}

TEST_F(ClientTest, AMergePatchOfTheStatusSubresourceWritesTheStatus) {
  const json group = {{"apiVersion", NumaAffinityGroups().ApiVersion()},
                      {"kind", NumaAffinityGroups().kind},
                      {"metadata", {{"name", "db"}, {"namespace", "default"}}},
                      {"spec", {{"selector", {{"matchLabels", {{"app", "db"}}}}}, {"policy", "nearest"}}}};
  ASSERT_TRUE(client_->Create(NumaAffinityGroups(), "default", group).ok());
  NumaAffinityGroupStatus status;
  status.observed_generation = 1;
  status.members = {{"db-0", "n1", {0, 1}, 8}};
  status.numa_nodes_spanned = 2;
  status.conditions = {{"Aligned", false, "Split", "db-0 spans 2 NUMA nodes", "2026-12-03T02:49:07Z"}};
  const json patch = EncodeStatusPatch(status);
  auto written = client_->MergePatch(NumaAffinityGroups(), "default", "db", patch, "status");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(server_->RequestCount("patch", "numaaffinitygroups/status"), 1);
  auto stored = client_->Get(NumaAffinityGroups(), "default", "db");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ((*stored)["status"], patch["status"]);
  auto decoded = DecodeNumaAffinityGroup(*stored);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->policy, AffinityGroupPolicy::kNearest);
}

TEST_F(ClientTest, JsonPatchWithRetryCarriesTheVersionPrecondition) {
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a")).ok());
  int calls = 0;
  auto result = client_->JsonPatchWithRetry(
      Pods(), "default", "a", [&](const json&) -> absl::StatusOr<std::optional<json>> {
        if (++calls == 1) {
          EXPECT_TRUE(client_->MergePatch(Pods(), "default", "a", {{"metadata", {{"labels", {{"o", "1"}}}}}}).ok());
        }
        return std::optional<json>(json::array({{{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"k", "v"}}}}}));
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ((*result)["metadata"]["annotations"]["k"], "v");
  EXPECT_EQ((*result)["metadata"]["labels"]["o"], "1");
}

TEST_F(ClientTest, BindSetsTheNodeOnceAndASecondBindConflicts) {
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a")).ok());
  ASSERT_TRUE(client_->Bind("default", "a", "n1").ok());
  EXPECT_EQ((*server_->Get("pods", "default", "a"))["spec"]["nodeName"], "n1");
  absl::Status again = client_->Bind("default", "a", "n2");
  EXPECT_TRUE(IsApiConflict(again)) << again;
  EXPECT_TRUE(IsApiNotFound(client_->Bind("default", "gone", "n1")));
}

TEST_F(ClientTest, BindCarriesAnnotationsOntoThePodInTheSameWrite) {
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a")).ok());
  auto before = client_->Get(Pods(), "default", "a");
  ASSERT_TRUE(before.ok());
  std::string rv = (*before)["metadata"]["resourceVersion"];
  std::string uid = (*before)["metadata"]["uid"];
  ASSERT_TRUE(client_->Bind("default", "a", "n1", uid, {{"huygens.io/allocation", "{\"version\":1}"}}).ok());
  // One write: the first version after the create shows both the node and the annotation.
  auto events = std::make_shared<std::vector<json>>();
  WatchOptions options;
  options.resource_version = rv;
  options.timeout = std::chrono::seconds(2);
  ASSERT_TRUE(client_
                  ->Watch(Pods(), "default", options,
                          [events](const WatchEvent& e) {
                            if (e.type == "MODIFIED") events->push_back(e.object);
                            return events->empty();
                          })
                  .ok());
  ASSERT_FALSE(events->empty());
  EXPECT_EQ((*events)[0]["spec"]["nodeName"], "n1");
  EXPECT_EQ((*events)[0]["metadata"]["annotations"]["huygens.io/allocation"], "{\"version\":1}");
}

TEST_F(ClientTest, BindWithAnotherPodsUidConflictsAndChangesNothing) {
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a")).ok());
  absl::Status s = client_->Bind("default", "a", "n1", "00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(HttpCode(s), 409) << s;
  EXPECT_EQ((*server_->Get("pods", "default", "a"))["spec"].value("nodeName", ""), "");
}

TEST_F(ClientTest, BindWithAStaleResourceVersionConflictsAndChangesNothing) {
  // The apiserver-enforced fence: a write to the pod after the Binding's author read it (here a
  // label, as a new leader's fence write) voids the Binding, however late it arrives.
  ASSERT_TRUE(client_->Create(Pods(), "default", PodObject("a")).ok());
  auto before = client_->Get(Pods(), "default", "a");
  ASSERT_TRUE(before.ok());
  const std::string rv = (*before)["metadata"]["resourceVersion"];
  const std::string uid = (*before)["metadata"]["uid"];
  ASSERT_TRUE(client_->MergePatch(Pods(), "default", "a", json{{"metadata", {{"labels", {{"fence", "1"}}}}}}).ok());
  absl::Status s = client_->Bind("default", "a", "n1", uid, {{"huygens.io/allocation", "{\"version\":1}"}}, rv);
  EXPECT_EQ(HttpCode(s), 409) << s;
  auto after = client_->Get(Pods(), "default", "a");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)["spec"].value("nodeName", ""), "");
  EXPECT_FALSE((*after)["metadata"].value("annotations", json::object()).contains("huygens.io/allocation"));
  // With the current resourceVersion the same Binding lands.
  EXPECT_TRUE(client_->Bind("default", "a", "n1", uid, {}, std::string((*after)["metadata"]["resourceVersion"])).ok());
}

// Finalizers as the real server keeps them (this test also runs against it, as cluster:...).
TEST_F(ClientTest, APodWithAFinalizerIsMarkedByDeleteAndGoesWithItsLastFinalizer) {
  json pod = PodObject("a");
  pod["metadata"]["finalizers"] = {"test.huygens.io/hold"};
  pod["metadata"]["deletionTimestamp"] = "2026-01-02T03:04:05Z";  // not the author's to set
  auto created = client_->Create(Pods(), "default", pod);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE((*created)["metadata"].contains("deletionTimestamp"));
  absl::Status set = client_->MergePatch(Pods(), "default", "a", {{"metadata", {{"deletionTimestamp", "2026-01-02T03:04:05Z"}}}}).status();
  EXPECT_EQ(HttpCode(set), 422) << set;

  ASSERT_TRUE(client_->Delete(Pods(), "default", "a").ok());
  auto deleting = client_->Get(Pods(), "default", "a");
  ASSERT_TRUE(deleting.ok()) << "gone although a finalizer holds it";
  EXPECT_TRUE((*deleting)["metadata"].contains("deletionTimestamp"));
  absl::Status bind = client_->Bind("default", "a", "n1");
  EXPECT_TRUE(IsApiConflict(bind)) << bind;
  EXPECT_TRUE(absl::StrContains(bind.message(), "being deleted")) << bind;
  absl::Status added = client_->MergePatch(Pods(), "default", "a", {{"metadata", {{"finalizers", {"test.huygens.io/hold", "test.huygens.io/more"}}}}}).status();
  EXPECT_EQ(HttpCode(added), 422) << added;

  ASSERT_TRUE(client_->MergePatch(Pods(), "default", "a", {{"metadata", {{"finalizers", nullptr}}}}).ok());
  EXPECT_TRUE(IsApiNotFound(client_->Get(Pods(), "default", "a").status()));
}

TEST(ApiErrorTest, ANonStatusBodyIsQuotedWithoutSplittingACharacter) {
  // 199 ASCII bytes then "€" (3 bytes): the 200-byte quote leaves it out whole.
  const absl::Status s = ApiError(502, std::string(199, 'x') + "\xE2\x82\xAC tail", "GET pods");
  EXPECT_EQ(HttpCode(s), 502);
  EXPECT_TRUE(absl::EndsWith(s.message(), ": " + std::string(199, 'x'))) << s.message();
}

TEST(RateLimitTest, BurstPassesThenRequestsArePacedAtQps) {
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok());
  FakeClock clock;
  RestConfig config;
  config.server = (*server)->url();
  config.qps = 10;
  config.burst = 5;
  auto rest = RestClient::Create(config, &clock);
  ASSERT_TRUE(rest.ok());
  Client client(std::move(*rest), {}, &clock);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(IsApiNotFound(client.Get(Nodes(), "", "n").status()));
  EXPECT_EQ(clock.Elapsed(), Clock::Duration{0});
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(IsApiNotFound(client.Get(Nodes(), "", "n").status()));
  // Ten more requests at 10 per second: one second of waiting, give or take rounding.
  EXPECT_NEAR(std::chrono::duration<double>(clock.Elapsed()).count(), 1.0, 0.01);
}

}  // namespace
}  // namespace huygens::kube

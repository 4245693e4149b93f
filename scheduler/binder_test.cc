#include "scheduler/binder.h"

#include <memory>
#include <string>

#include "base/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/test_client.h"
#include "node/allocation.h"
#include "scheduler/event_sink.h"
#include "scheduler/objects.h"
#include "scheduler/test_cluster.h"

namespace huygens::scheduler {
namespace {

using kube::testing::FakeApiServer;
using testing::GuaranteedPod;

constexpr char kAllocation[] =
    R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"4,12","mems":"0"}]})";

// A PodWriter over `server` whose lease check answers `*lease`, with what it needs.
struct WriterRig {
  WriterRig(FakeApiServer& server, const bool* lease)
      : client(kube::testing::ClientFor(server, &clock)),
        metrics(ServiceMetrics::Register(registry)),
        events(client.get(), "test", &clock),
        writer(client.get(), &events, &metrics, [this, lease] {
          ++asked;
          return *lease;
        }) {}
  huygens::testing::FakeClock clock;
  std::unique_ptr<kube::Client> client;
  serving::MetricsRegistry registry;
  ServiceMetrics metrics;
  EventSink events;
  int asked = 0;  // lease checks so far
  PodWriter writer;
};

struct FenceCase {
  const char* name;
  bool may_bind;           // what the lease fence answers
  int bindings_sent;       // Binding requests the API server received
  bool bound;              // the pod ends on n0 with the allocation
  absl::StatusCode code;   // FinishBind's answer
  bool written_since = false;  // another writer (a new leader's fence) wrote the pod after it was read
};

class PodWriterFenceTest : public ::testing::TestWithParam<FenceCase> {};

TEST_P(PodWriterFenceTest, TheLeaseFenceDecidesWhetherABindingIsSentAndTheResourceVersionWhetherItLands) {
  const FenceCase& c = GetParam();
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(testing::AddMachine(**server, "n0", 16));
  auto created = (*server)->Create("pods", GuaranteedPod("p", 2));
  ASSERT_TRUE(created.ok()) << created.status();
  WriterRig rig(**server, &c.may_bind);
  auto& client = rig.client;
  PodWriter& writer = rig.writer;

  if (c.written_since) {
    ASSERT_TRUE(client
                    ->MergePatch(kube::Pods(), "default", "p",
                                 nlohmann::json{{"metadata", {{"annotations", {{kSchedulerFenceAnnotation, "t"}}}}}})
                    .ok());
  }

  absl::Status s = writer.FinishBind(*created, "n0", kAllocation);

  EXPECT_EQ(s.code(), c.code) << s;
  EXPECT_EQ(rig.asked, 1);
  EXPECT_EQ((*server)->RequestCount("create", "pods/binding"), c.bindings_sent);
  const nlohmann::json pod = *(*server)->Get("pods", "default", "p");
  EXPECT_EQ(pod["spec"].value("nodeName", "") == "n0", c.bound);
  EXPECT_EQ(pod["metadata"].value("annotations", nlohmann::json::object()).contains(kAllocationAnnotation), c.bound);
  EXPECT_EQ(writer.bound(), c.bound ? 1 : 0);
  if (c.written_since) {
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("lost the race for pod default/p"));
  }
  if (!c.may_bind) {
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("no longer holds its leader lease"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PodWriterFenceTest,
    ::testing::Values(
        FenceCase{"AHolderOfTheLeaseSendsTheBindingWithTheAllocation", true, 1, true, absl::StatusCode::kOk},
        FenceCase{"ALeaderThatNoLongerHoldsTheLeaseSendsNoBindingAtAll", false, 0, false,
                  absl::StatusCode::kFailedPrecondition},
        // The apiserver's fence: the Binding carries the resourceVersion the decision read.
        FenceCase{"ABindingOnAPodWrittenSinceItWasReadIsRefusedAsALostRace", true, 1, false,
                  absl::StatusCode::kAborted, true}),
    [](const ::testing::TestParamInfo<FenceCase>& param) { return std::string(param.param.name); });

// ApiBind, the binding cycle's Bind: its status is the Binding's real outcome, in the codes
// Scheduler::FinishBinding settles by: bound; lost the race (Error: the CPUs are freed);
// failed in a way that may have landed (Unconfirmed: the CPUs stay reserved).
TEST(ApiBind, AnswersWithTheBindingsRealOutcome) {
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(testing::AddMachine(**server, "n0", 16));
  const bool lease = true;
  WriterRig rig(**server, &lease);
  ApiBind bind(&rig.writer);
  auto reserved = [&](const std::string& name) {
    auto created = (*server)->Create("pods", GuaranteedPod(name, 2));
    EXPECT_TRUE(created.ok()) << created.status();
    auto pod = PodFromJson(*created);
    EXPECT_TRUE(pod.ok()) << pod.status();
    auto allocation = AllocationFromJson(kAllocation, pod->Uid());
    EXPECT_TRUE(allocation.ok()) << allocation.status();
    return sched::ReservedPod{std::make_shared<const sched::Pod>(*pod), "n0", *allocation};
  };

  const sched::ReservedPod ok = reserved("ok");
  EXPECT_TRUE(bind.Bind(ok).ok());
  const nlohmann::json bound = *(*server)->Get("pods", "default", "ok");
  EXPECT_EQ(bound["spec"].value("nodeName", ""), "n0");
  EXPECT_THAT(bound["metadata"]["annotations"].value(kAllocationAnnotation, ""),
              ::testing::HasSubstr(R"("cpuset":"4,12")"));

  // Written since the decision read it: the Binding's resourceVersion precondition refuses it.
  const sched::ReservedPod raced = reserved("raced");
  ASSERT_TRUE(rig.client
                  ->MergePatch(kube::Pods(), "default", "raced",
                               nlohmann::json{{"metadata", {{"labels", {{"touched", "yes"}}}}}})
                  .ok());
  sched::Status lost = bind.Bind(raced);
  EXPECT_EQ(lost.code(), sched::Code::kError);
  EXPECT_THAT(lost.Message(), ::testing::HasSubstr("creating the Binding: lost the race for pod default/raced"));

  const sched::ReservedPod unsure = reserved("unsure");
  (*server)->FailNext("create", "pods/binding", 10, 500);  // past the client's retries
  sched::Status unconfirmed = bind.Bind(unsure);
  EXPECT_EQ(unconfirmed.code(), sched::Code::kUnconfirmed);
  EXPECT_THAT(unconfirmed.Message(), ::testing::HasSubstr("creating the Binding: "));
}

// A rebalancer move lands only on the pod as the plan read it, and only while the lease holds.
TEST(PodWriterMove, AMoveIsWrittenOnlyOnThePodAsReadAndOnlyWhileTheLeaseHolds) {
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  nlohmann::json bound = GuaranteedPod("p", 2);
  bound["spec"]["nodeName"] = "n0";
  bound["metadata"]["annotations"][kAllocationAnnotation] = kAllocation;
  auto created = (*server)->Create("pods", bound);
  ASSERT_TRUE(created.ok()) << created.status();
  bool lease = true;
  WriterRig rig(**server, &lease);
  auto& client = rig.client;
  PodWriter& writer = rig.writer;
  const std::string moved =
      R"({"version":1,"node":"n0","numaNodes":[1],"containers":[{"name":"app","cpuset":"5,13","mems":"1"}]})";
  auto allocation = [&] {
    return (*server)->Get("pods", "default", "p")->at("metadata")["annotations"].value(kAllocationAnnotation, "");
  };

  lease = false;
  EXPECT_EQ(writer.MoveAllocation(*created, moved).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(allocation(), kAllocation);

  lease = true;
  ASSERT_TRUE(client
                  ->MergePatch(kube::Pods(), "default", "p",
                               nlohmann::json{{"metadata", {{"labels", {{"changed", "yes"}}}}}})
                  .ok());
  absl::Status stale = writer.MoveAllocation(*created, moved);  // read before the label changed
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted) << stale;
  EXPECT_EQ(allocation(), kAllocation);

  ASSERT_TRUE(writer.MoveAllocation(*(*server)->Get("pods", "default", "p"), moved).ok());
  EXPECT_EQ(allocation(), moved);
}

}  // namespace
}  // namespace huygens::scheduler

// ChangeFeed's gate (ChangeFeed::Current): what it refuses and what it logs, over the fake API
// server, whose held watches stand for a frozen connection (the API server took the watch and
// sends nothing); and CacheSync's order of pod versions.
#include "scheduler/cache_sync.h"

#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "base/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/process.h"
#include "kube/testing/test_client.h"
#include "scheduler/objects.h"
#include "scheduler/test_cluster.h"
#include "topology/testing/machines.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {
namespace {

using kube::testing::FakeApiServer;
using kube::testing::WaitFor;
using ::testing::HasSubstr;

class ChangeFeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ = kube::testing::ClientFor(*server_, &clock_);
    spdlog::default_logger()->sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
  }
  void TearDown() override {
    if (started_) {
      server_->ReleaseRequests();  // a held watch would hold up the informers' stop
      feed_.StopInformers();
    }
    spdlog::default_logger()->sinks().pop_back();
  }
  void Start() {
    feed_.StartInformers(client_.get(), &clock_);
    started_ = true;
  }

  huygens::testing::FakeClock clock_;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::ostringstream log_;  // what spdlog's default logger wrote during the test
  ChangeFeed feed_;
  bool started_ = false;
};

TEST_F(ChangeFeedTest, InformersThatWentStaleBeforeTheFirstCheckPauseSchedulingAndSayWhy) {
  server_->HoldRequests("watch", "*");
  Start();
  ASSERT_TRUE(WaitFor([&] { return feed_.Synced() && server_->HeldRequests() == 3; }));
  // No check happened while the informers were current: the first one finds them stale.
  clock_.Advance(std::chrono::minutes(3));
  absl::Status paused = feed_.Current();
  EXPECT_EQ(paused.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(paused.message()),
              HasSubstr("scheduling paused: nodes informer heard nothing from the API server for 180 s"));
  EXPECT_THAT(log_.str(), HasSubstr("scheduling paused: no pod is reserved or bound until the informers are current "
                                    "again: nodes informer heard nothing from the API server for 180 s"));

  server_->ReleaseRequests();  // the watches are answered: heard again
  ASSERT_TRUE(WaitFor([&] { return feed_.Current().ok(); })) << feed_.Current();
  EXPECT_THAT(log_.str(), HasSubstr("scheduling resumed: the noderesourcetopologies, nodes, pods informer(s) heard "
                                    "from the API server again (paused for "));
}

TEST_F(ChangeFeedTest, BeforeEveryInformerHasListedItRefusesWithoutLogging) {
  server_->HoldRequests("list", "pods");
  Start();
  ASSERT_TRUE(WaitFor([&] { return server_->HeldRequests() == 1; }));
  clock_.Advance(std::chrono::minutes(3));
  absl::Status starting = feed_.Current();
  EXPECT_EQ(starting.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(starting.message()), HasSubstr("pods informer has not listed yet"));
  EXPECT_EQ(log_.str().find("scheduling paused"), std::string::npos) << log_.str();
}

TEST(CacheSyncTest, APodOlderThanTheVersionStoredOrDeletedIsSkipped) {
  // The takeover fence's recheck stores pods read directly, ahead of the informer; the
  // informer's older events of those pods must not take the cache back (a bound pod seen as
  // pending again would free its CPUs).
  huygens::testing::FakeClock clock;
  CacheSync sync(NumaStrategy::kMostAllocated, false, [](const std::string&) { return true; }, &clock);
  auto version = [](nlohmann::json pod, const char* v) {
    pod["metadata"]["uid"] = "u1";
    pod["metadata"]["resourceVersion"] = v;
    return pod;
  };
  nlohmann::json pending = testing::GuaranteedPod("a", 2);
  nlohmann::json bound = pending;
  bound["spec"]["nodeName"] = "n0";
  auto stored = [&] {
    const nlohmann::json& pod = sync.pods().at("u1");
    return pod["metadata"]["resourceVersion"].get<std::string>() + " " + pod["spec"].value("nodeName", "");
  };
  sync.Apply(Change{.kind = ChangeKind::kPod, .deleted = false, .object = version(bound, "12")});
  EXPECT_EQ(stored(), "12 n0");
  sync.Apply(Change{.kind = ChangeKind::kPod, .deleted = false, .object = version(pending, "9")});
  EXPECT_EQ(stored(), "12 n0") << "an older version took the cache back";
  sync.Apply(Change{.kind = ChangeKind::kPod, .deleted = false, .object = version(bound, "15")});
  EXPECT_EQ(stored(), "15 n0");
  // A deletion is applied whatever its version (a relist reports the last version known).
  sync.Apply(Change{.kind = ChangeKind::kPod, .deleted = true, .object = version(bound, "3")});
  EXPECT_EQ(sync.pods().count("u1"), 0u);
  // A version of a deleted pod read before its deletion (a quorum list that raced the informer)
  // does not bring it back.
  sync.Apply(Change{.kind = ChangeKind::kPod, .deleted = false, .object = version(bound, "16")});
  EXPECT_EQ(sync.pods().count("u1"), 0u) << "a deleted pod came back";
}

// Node n0 (DualSocketHT, 24 CPUs, system pool CPU 0 and its sibling 12) in a CacheSync.
void AddDualSocketNode(CacheSync& sync, const CpuTopology& topo) {
  NrtInput in;
  in.node_name = "n0";
  in.topology = &topo;
  in.policy = "single-numa-node";
  in.system_cpus = CpuSet{0, 12};
  absl::StatusOr<nlohmann::json> nrt = BuildNrt(in);
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  sync.Apply(Change{.kind = ChangeKind::kNode, .object = testing::NodeObject("n0", topo.NumCpus())});
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = *nrt});
  ASSERT_NE(sync.cache().FindNode("n0"), nullptr);
}

// A pending pod's huygens.io/allocation was not written by the scheduler (its own rides on the
// Binding): in either mode it holds no CPU, however long the pod stays pending.
TEST(CacheSyncTest, APendingPodsAllocationHoldsNothingInEitherMode) {
  const CpuTopology topo = huygens::testing::DualSocketHT();
  for (const bool extender : {false, true}) {
    huygens::testing::FakeClock clock;
    CacheSync sync(NumaStrategy::kMostAllocated, extender, [](const std::string&) { return true; }, &clock);
    AddDualSocketNode(sync, topo);
    nlohmann::json pod = testing::GuaranteedPod("claims", 2);
    pod["metadata"]["uid"] = "u1";
    pod["metadata"]["annotations"][kAllocationAnnotation] =
        R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"1,13","mems":"0"}]})";
    sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod});
    EXPECT_EQ(sync.cache().FindPod("u1"), nullptr) << "extender " << extender;
    EXPECT_TRUE(sync.cache().FindNode("n0")->cpu_state->ExclusiveCpus().Empty()) << "extender " << extender;
    EXPECT_EQ(sync.queue().Size(), extender ? 0u : 1u) << "the pod is scheduled like any other";
  }
}

// Guaranteed pod `name` (2 CPUs) of uid `uid` at resourceVersion `version`, bound to n0 on
// NUMA node 0's CPUs 1 and 13.
nlohmann::json BoundOnN0(const std::string& name, const std::string& uid, const std::string& version) {
  nlohmann::json pod = testing::GuaranteedPod(name, 2);
  pod["metadata"]["uid"] = uid;
  pod["metadata"]["resourceVersion"] = version;
  pod["spec"]["nodeName"] = "n0";
  pod["metadata"]["annotations"][kAllocationAnnotation] =
      R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"1,13","mems":"0"}]})";
  return pod;
}

// A bound pod's allocation changed to one its request does not give (grown from 2 CPUs to 6)
// is no move: the cache keeps the pod on the CPUs it held, and the rest stay free.
TEST(CacheSyncTest, ABoundPodsAllocationGrownBeyondItsRequestIsIgnored) {
  const CpuTopology topo = huygens::testing::DualSocketHT();
  huygens::testing::FakeClock clock;
  CacheSync sync(NumaStrategy::kMostAllocated, false, [](const std::string&) { return true; }, &clock);
  AddDualSocketNode(sync, topo);
  nlohmann::json pod = BoundOnN0("running", "u1", "5");
  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod});
  ASSERT_EQ(sync.cache().FindNode("n0")->cpu_state->ExclusiveCpus(), (CpuSet{1, 13}));
  pod["metadata"]["resourceVersion"] = "6";
  pod["metadata"]["annotations"][kAllocationAnnotation] =
      R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"1-3,13-15","mems":"0"}]})";
  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod});
  EXPECT_EQ(sync.cache().FindNode("n0")->cpu_state->ExclusiveCpus(), (CpuSet{1, 13}));
  ASSERT_NE(sync.cache().FindPod("u1"), nullptr);
  EXPECT_EQ(sync.cache().FindPod("u1")->allocation->ExclusiveCpus(), (CpuSet{1, 13}));
  // A move of the same size is followed.
  pod["metadata"]["resourceVersion"] = "7";
  pod["metadata"]["annotations"][kAllocationAnnotation] =
      R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"2,14","mems":"0"}]})";
  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod});
  EXPECT_EQ(sync.cache().FindNode("n0")->cpu_state->ExclusiveCpus(), (CpuSet{2, 14}));
}

TEST(CacheSyncTest, DevicesTheZonesReportInUseBeyondThoseOfItsPodsAreKeptOutOfTheNode) {
  // NUMA node 1 has 3 GPUs. Our pod holds one (kubelet gave it on the pod's NUMA node);
  // the agent's zone reports 2 in use, so another scheduler's pod holds the other.
  huygens::testing::FakeClock clock;
  CacheSync sync(NumaStrategy::kMostAllocated, false, [](const std::string&) { return true; }, &clock);
  const CpuTopology topo = huygens::testing::DualSocketHT();  // NUMA node 1: CPUs 6-11,18-23
  auto nrt = [&](uint64_t available, uint64_t allocatable = 3) {
    NrtInput in;
    in.node_name = "n0";
    in.topology = &topo;
    in.policy = "single-numa-node";
    in.exclusive_cpus = CpuSet{6, 18};
    in.devices = {{1, {{"nvidia.com/gpu", {.allocatable = allocatable, .available = available}}}}};
    absl::StatusOr<nlohmann::json> out = BuildNrt(in);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : nlohmann::json();
  };
  nlohmann::json pod = testing::GuaranteedPod("a", 2);
  for (const char* side : {"requests", "limits"}) {
    pod["spec"]["containers"][0]["resources"][side]["nvidia.com/gpu"] = "1";
  }
  pod["metadata"]["uid"] = "u1";
  pod["metadata"]["resourceVersion"] = "5";
  pod["spec"]["nodeName"] = "n0";
  pod["metadata"]["annotations"][kAllocationAnnotation] =
      R"({"version":1,"node":"n0","numaNodes":[1],"containers":[{"name":"app","cpuset":"6,18","mems":"1"}]})";
  sync.Apply(Change{.kind = ChangeKind::kNode, .object = testing::NodeObject("n0", topo.NumCpus())});
  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod});
  auto free_gpus = [&] { return sync.cache().FindNode("n0")->cpu_state->DevicesFree().at("nvidia.com/gpu"); };

  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = nrt(1)});
  EXPECT_EQ(sync.cache().FindNode("n0")->cpu_state->DevicesOf("u1"), (NodeDevices{{"nvidia.com/gpu", {{1, 1}}}}));
  EXPECT_EQ(free_gpus(), (NumaDeviceCounts{{1, 1}})) << "3 - ours - the other scheduler's";
  EXPECT_TRUE(sync.cache().FindNode("n0")->cpu_state->Validate().empty());

  // The other pod left: the next publication gives its GPU back.
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = nrt(2)});
  EXPECT_EQ(free_gpus(), (NumaDeviceCounts{{1, 2}}));
  // Our pod is not started yet (the zones do not count it): nothing is held elsewhere.
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = nrt(3)});
  EXPECT_EQ(free_gpus(), (NumaDeviceCounts{{1, 2}}));
  // The device plugin now reports 5 GPUs there, 2 in use: the node is rebuilt with them.
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = nrt(3, 5)});
  EXPECT_EQ(free_gpus(), (NumaDeviceCounts{{1, 3}}));
  EXPECT_EQ(sync.cache().FindNode("n0")->cpu_state->ForeignDevices(), (NodeDevices{{"nvidia.com/gpu", {{1, 1}}}}));
  EXPECT_TRUE(sync.cache().FindNode("n0")->cpu_state->Validate().empty());
}

// A node whose NodeResourceTopology does not decode into a node state is taken out of the cache
// and said once per reason (the object and the field named); the other nodes stay; a valid
// version brings it back. Ids out of range, pools outside the machine and a bad zone alone
// (a publication whose annotations did not change) are each enough.
TEST(CacheSyncTest, ANodeWithAnInvalidNrtIsLeftOutAndSaidOnceUntilAValidOneArrives) {
  const CpuTopology topo = huygens::testing::DualSocketHT();
  huygens::testing::FakeClock clock;
  std::vector<std::string> said;
  CacheSync sync(
      NumaStrategy::kMostAllocated, false, [](const std::string&) { return true; }, &clock,
      [&](const nlohmann::json& nrt, const std::string& why) {
        said.push_back(nrt["metadata"]["name"].get<std::string>() + ": " + why);
      });
  auto valid = [&](const std::string& name, uint64_t gpus = 1) {
    NrtInput in;
    in.node_name = name;
    in.topology = &topo;
    in.system_cpus = CpuSet{0, 12};
    in.devices = {{1, {{"nvidia.com/gpu", {.allocatable = gpus, .available = gpus}}}}};
    absl::StatusOr<nlohmann::json> nrt = BuildNrt(in);
    EXPECT_TRUE(nrt.ok()) << nrt.status();
    return nrt.value_or(nlohmann::json());
  };
  for (const char* name : {"n0", "n1"}) {
    sync.Apply(Change{.kind = ChangeKind::kNode, .object = testing::NodeObject(name, topo.NumCpus())});
    sync.Apply(Change{.kind = ChangeKind::kNrt, .object = valid(name)});
    ASSERT_NE(sync.cache().FindNode(name), nullptr) << name;
  }
  auto annotations = [](nlohmann::json& nrt) -> nlohmann::json& { return nrt["metadata"]["annotations"]; };

  // A core id beyond any machine (topology/json.cc bounds it).
  nlohmann::json bad = valid("n0");
  nlohmann::json topology_json = nlohmann::json::parse(annotations(bad)[kCpuTopologyAnnotation].get<std::string>());
  topology_json["cpus"][1]["core"] = 1000000000;
  annotations(bad)[kCpuTopologyAnnotation] = topology_json.dump();
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = bad});
  EXPECT_EQ(sync.cache().FindNode("n0"), nullptr) << "a node with an invalid NRT stayed in the cache";
  EXPECT_NE(sync.cache().FindNode("n1"), nullptr) << "another node was touched";
  ASSERT_EQ(said.size(), 1u);
  EXPECT_THAT(said[0], HasSubstr("n0: NodeResourceTopology \"n0\""));
  EXPECT_THAT(said[0], HasSubstr(kCpuTopologyAnnotation));
  EXPECT_THAT(said[0], HasSubstr("cpus[1].core: 1000000000 is outside [0, 8192)"));
  EXPECT_EQ(sync.invalid_nrts().count("n0"), 1u);
  // The same version again (a resync) is not said again.
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = bad});
  EXPECT_EQ(said.size(), 1u);

  // Pools that name CPUs the machine lacks: another reason, said.
  bad = valid("n0");
  nlohmann::json pools = nlohmann::json::parse(annotations(bad)[kPoolsAnnotation].get<std::string>());
  pools["system"] = "0,12,99";
  annotations(bad)[kPoolsAnnotation] = pools.dump();
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = bad});
  EXPECT_EQ(sync.cache().FindNode("n0"), nullptr);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_THAT(said[1], HasSubstr("metadata.annotations[\"huygens.io/pools\"].system: cpus 99 are not online CPUs"));

  // A valid version brings the node back.
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = valid("n0")});
  ASSERT_NE(sync.cache().FindNode("n0"), nullptr) << "a valid NRT did not bring the node back";
  EXPECT_TRUE(sync.invalid_nrts().empty());

  // A publication whose zones alone changed, to a device count that is not one, takes the node
  // out too (it was kept with its old devices); the zones' fix alone brings it back.
  bad = valid("n0");
  for (nlohmann::json& zone : bad["zones"]) {
    for (nlohmann::json& r : zone["resources"]) {
      if (r["name"] == "nvidia.com/gpu") r["allocatable"] = "lots";
    }
  }
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = bad});
  EXPECT_EQ(sync.cache().FindNode("n0"), nullptr) << "an invalid zone left the node in the cache";
  ASSERT_EQ(said.size(), 3u);
  EXPECT_THAT(said[2], HasSubstr("zone \"node-1\": resource nvidia.com/gpu: allocatable \"lots\""));
  sync.Apply(Change{.kind = ChangeKind::kNrt, .object = valid("n0", 2)});
  ASSERT_NE(sync.cache().FindNode("n0"), nullptr) << "a fix of the zones alone did not bring the node back";
  EXPECT_EQ(sync.cache().FindNode("n0")->cpu_state->DevicesFree().at("nvidia.com/gpu"), (NumaDeviceCounts{{1, 2}}));
  EXPECT_NE(sync.cache().FindNode("n1"), nullptr);
}

// A pod is its uid: the name deleted and re-created while the watch was down comes back from
// the relist as an update of that name with another uid. The old uid is deleted, its CPUs
// freed, and the new pod is handled as new (queued when pending, placed when bound).
TEST(CacheSyncTest, ANameRecreatedUnderANewUidDeletesTheOldUid) {
  const CpuTopology topo = huygens::testing::DualSocketHT();
  for (const bool new_is_bound : {false, true}) {
    SCOPED_TRACE(new_is_bound ? "re-created bound" : "re-created pending");
    huygens::testing::FakeClock clock;
    CacheSync sync(NumaStrategy::kMostAllocated, false, [](const std::string&) { return true; }, &clock);
    AddDualSocketNode(sync, topo);
    nlohmann::json old_pod = BoundOnN0("a", "u1", "5");
    sync.Apply(Change{.kind = ChangeKind::kPod, .object = old_pod});
    ASSERT_EQ(sync.cache().FindNode("n0")->cpu_state->ExclusiveCpus(), (CpuSet{1, 13}));

    nlohmann::json new_pod = testing::GuaranteedPod("a", 2);
    new_pod["metadata"]["uid"] = "u2";
    new_pod["metadata"]["resourceVersion"] = "9";
    if (new_is_bound) {
      new_pod["spec"]["nodeName"] = "n0";
      new_pod["metadata"]["annotations"][kAllocationAnnotation] =
          R"({"version":1,"node":"n0","numaNodes":[1],"containers":[{"name":"app","cpuset":"2,14","mems":"1"}]})";
    }
    sync.Apply(Change{.kind = ChangeKind::kPod, .object = new_pod});
    EXPECT_EQ(sync.cache().FindPod("u1"), nullptr) << "the old uid still holds its CPUs";
    EXPECT_EQ(sync.pods().count("u1"), 0u);
    ASSERT_EQ(sync.pods().count("u2"), 1u);
    EXPECT_EQ(sync.cache().FindNode("n0")->cpu_state->ExclusiveCpus(), new_is_bound ? (CpuSet{2, 14}) : CpuSet{});
    EXPECT_EQ(sync.queue().Size(), new_is_bound ? 0u : 1u);

    // The old uid's versions (a direct read that raced the relist) do not come back.
    old_pod["metadata"]["resourceVersion"] = "7";
    sync.Apply(Change{.kind = ChangeKind::kPod, .object = old_pod});
    EXPECT_EQ(sync.pods().count("u1"), 0u) << "an older uid of the name came back";
    EXPECT_EQ(sync.pods().count("u2"), 1u);
    EXPECT_EQ(sync.cache().FindNode("n0")->cpu_state->ExclusiveCpus(), new_is_bound ? (CpuSet{2, 14}) : CpuSet{});
  }
}

// A pending pod being deleted (metadata.deletionTimestamp: finalizers pending) is never queued;
// one queued leaves the queue, and one reserved (its Binding in flight or kept for a retry)
// releases its CPUs.
TEST(CacheSyncTest, APendingPodBeingDeletedIsNotQueuedAndReleasesItsReservation) {
  const CpuTopology topo = huygens::testing::DualSocketHT();
  huygens::testing::FakeClock clock;
  CacheSync sync(NumaStrategy::kMostAllocated, false, [](const std::string&) { return true; }, &clock);
  AddDualSocketNode(sync, topo);
  auto pod = [](const char* name, const char* uid, bool deleting) {
    nlohmann::json p = testing::GuaranteedPod(name, 2);
    p["metadata"]["uid"] = uid;
    p["metadata"]["resourceVersion"] = deleting ? "20" : "10";
    if (deleting) p["metadata"]["deletionTimestamp"] = "2026-01-02T03:04:05Z";
    return p;
  };
  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod("deleting", "u1", true)});
  EXPECT_EQ(sync.queue().Size(), 0u) << "a pod being deleted was queued";

  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod("queued", "u2", false)});
  ASSERT_EQ(sync.queue().Size(), 1u);
  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod("queued", "u2", true)});
  EXPECT_EQ(sync.queue().Size(), 0u) << "a queued pod being deleted stayed queued";

  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod("reserved", "u3", false)});
  sched::PodPtr reserved = sync.PendingPod("u3");
  ASSERT_NE(reserved, nullptr);
  nlohmann::json decision = pod("reserved", "u3", false);
  decision["metadata"]["annotations"][kAllocationAnnotation] =
      R"({"version":1,"node":"n0","numaNodes":[0],"containers":[{"name":"app","cpuset":"1,13","mems":"0"}]})";
  absl::StatusOr<std::optional<PodAllocation>> allocation = PodAllocationOf(decision);
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  ASSERT_TRUE(sync.cache().AssumePod(reserved, "n0", *allocation, false).ok());
  ASSERT_TRUE(sync.cache().FinishBinding("u3").ok());  // the Binding is out
  ASSERT_EQ(sync.cache().FindNode("n0")->cpu_state->ExclusiveCpus(), (CpuSet{1, 13}));
  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod("reserved", "u3", true)});
  EXPECT_EQ(sync.cache().FindPod("u3"), nullptr) << "the reservation of a pod being deleted was kept";
  EXPECT_TRUE(sync.cache().FindNode("n0")->cpu_state->ExclusiveCpus().Empty());
  EXPECT_EQ(sync.queue().Size(), 0u);
}

// kube-scheduler v1.35's SchedulingGates PreEnqueue: a gated pod is not queued (and is told of,
// for its condition); the version without gates is queued, ready at once.
TEST(CacheSyncTest, AGatedPodIsNotQueuedUntilItsGatesGo) {
  huygens::testing::FakeClock clock;
  std::vector<std::string> told;
  CacheSync sync(NumaStrategy::kMostAllocated, false, [](const std::string&) { return true; }, &clock, nullptr,
                 [&](const nlohmann::json& pod) { told.push_back(pod["metadata"]["name"]); });
  nlohmann::json pod = testing::GuaranteedPod("g", 2);
  pod["metadata"]["uid"] = "u1";
  pod["metadata"]["resourceVersion"] = "10";
  pod["spec"]["schedulingGates"] = {{{"name", "example.com/quota"}}};
  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod});
  EXPECT_EQ(sync.queue().Size(), 0u) << "a gated pod was queued";
  EXPECT_EQ(told, std::vector<std::string>{"g"});
  pod["spec"].erase("schedulingGates");
  pod["metadata"]["resourceVersion"] = "11";
  sync.Apply(Change{.kind = ChangeKind::kPod, .object = pod});
  EXPECT_EQ(sync.queue().ActiveSize(), 1u) << "the pod whose gates went is not ready";
  EXPECT_EQ(told.size(), 1u);
}

}  // namespace
}  // namespace huygens::scheduler

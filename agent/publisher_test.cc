#include "agent/publisher.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/test_client.h"
#include "agent/kubelet_memory.h"
#include "topology/discovery/discovery.h"
#include "topology/json.h"
#include "topology/nrt.h"

namespace huygens::agent {
namespace {

using nlohmann::json;

constexpr char kNrtResource[] = "noderesourcetopologies.topology.node.k8s.io";

std::shared_ptr<const CpuTopology> FixtureXml(const std::string& name) {
  auto t = DiscoverFromXml(std::string(HUYGENS_FIXTURES) + "/topologies/" + name);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::make_shared<const CpuTopology>(std::move(*t));
}

std::shared_ptr<const CpuTopology> FixtureDump(const std::string& name) {
  auto t = DiscoverFromFsroot(std::string(HUYGENS_FIXTURES) + "/topologies/" + name);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::make_shared<const CpuTopology>(std::move(*t));
}

// PublisherOptions::heartbeat_interval for the tests of what else is written when.
constexpr std::chrono::milliseconds kNoHeartbeat{0};

class PublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = kube::testing::FakeApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = kube::testing::ClientFor(*server_, &clock_);
    // The Nodes of the tests' publishers: each NRT is owned by its Node.
    for (const char* name : {"amd", "off", "mem", "n1"}) {
      ASSERT_TRUE(server_->Create("nodes", {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}})
                      .ok());
    }
  }
  // The uid the server gave Node `name`.
  std::string NodeUid(const std::string& name) const {
    return server_->Get("nodes", "", name).value_or(json::object()).value("metadata", json::object()).value("uid", "");
  }
  int Writes() const {
    return server_->RequestCount("create", "noderesourcetopologies") +
           server_->RequestCount("update", "noderesourcetopologies");
  }
  NrtObject Stored(const std::string& node) const {
    auto object = server_->Get(kNrtResource, "", node);
    EXPECT_TRUE(object.has_value());
    auto nrt = ReadNrt(object.value_or(json::object()));
    EXPECT_TRUE(nrt.ok()) << nrt.status();
    return nrt.value_or(NrtObject{});
  }

  huygens::testing::FakeClock clock_;
  std::unique_ptr<kube::testing::FakeApiServer> server_;
  std::unique_ptr<kube::Client> client_;
};

// Available CPUs of a zone: the zone's user-pool CPUs minus the exclusive ones.
std::string ZoneCpuAvailable(const NrtObject& nrt, int numa) {
  for (const NrtZone& z : nrt.zones) {
    if (z.NumaId() == numa) return z.Resource("cpu")->available.value_or("?");
  }
  return "no zone";
}

TEST_F(PublisherTest, TheNrtOfAMultiNumaMachineShowsExclusiveCpusAndCapacityFactors) {
  // 64amd64-4p2n4ca2co: 4 packages x 2 NUMA nodes, 64 CPUs.
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  const std::vector<int> numa = topology->NumaNodeIdsWithCpus();
  ASSERT_GE(numa.size(), 2u);
  const CpuSet first = topology->CpusInNumaNode(numa[0]);
  const CpuSet system = CpuSet{first.Min()}.Union(topology->SiblingsOf(first.Min()));
  Publisher publisher(client_.get(), &clock_,
                      {.node_name = "amd", .topology = topology, .system_cpus = system});
  const CpuSet exclusive = first.Difference(system).First(2);
  auto r = publisher.Publish({.exclusive = exclusive, .capacity = {{numa[1], 0.5}}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, PublishResult::kWritten);

  const NrtObject nrt = Stored("amd");
  ASSERT_EQ(nrt.zones.size(), static_cast<size_t>(topology->NumNumaNodes()));
  // The first zone offers its CPUs minus the system CPUs; 2 of those are held exclusively.
  const int user0 = first.Size() - system.Size();
  EXPECT_EQ(ZoneCpuAvailable(nrt, numa[0]), std::to_string(user0 - 2));
  EXPECT_EQ(ZoneCpuAvailable(nrt, numa[1]), std::to_string(topology->CpusInNumaNode(numa[1]).Size()));
  auto pools = PoolsFromNrt(nrt);
  ASSERT_TRUE(pools.ok()) << pools.status();
  EXPECT_EQ(pools->exclusive, exclusive);
  EXPECT_EQ(pools->system, system);
  // The capacity factor rides on the second zone only.
  for (const NrtZone& z : nrt.zones) {
    const auto it = std::find_if(z.attributes.begin(), z.attributes.end(), [](const auto& a) {
      return a.name == kCapacityFactorAttribute;
    });
    if (z.NumaId() == numa[1]) {
      ASSERT_NE(it, z.attributes.end());
      EXPECT_EQ(it->value, "0.5");
    } else {
      EXPECT_EQ(it, z.attributes.end());
    }
  }
  EXPECT_EQ(*nrt.Attribute("topologyManagerPolicy"), "single-numa-node");
  // The scheduler can rebuild the exact machine from the object alone.
  auto rebuilt = TopologyFromNrt(nrt);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(rebuilt->OnlineCpus(), topology->OnlineCpus());
}

TEST_F(PublisherTest, AMachineWithAnOfflineCpuPublishesOnlyItsOnlineCpus) {
  // offline-cpu0-node0: CPU 0 (on NUMA node 0) is offline.
  auto topology = FixtureDump("offline-cpu0-node0.tar.bz2");
  ASSERT_FALSE(topology->OnlineCpus().Contains(0));
  Publisher publisher(client_.get(), &clock_, {.node_name = "off", .topology = topology});
  ASSERT_TRUE(publisher.Publish({}).ok());
  const NrtObject nrt = Stored("off");
  auto pools = PoolsFromNrt(nrt);
  ASSERT_TRUE(pools.ok()) << pools.status();
  EXPECT_EQ(pools->user, topology->OnlineCpus());
  EXPECT_EQ(ZoneCpuAvailable(nrt, 0),
            std::to_string(topology->CpusInNumaNode(0).Intersection(topology->OnlineCpus()).Size()));
}

// kubelet's memory_manager_state fixtures through KubeletMemoryReader into the published zones.
// The machine: NUMA node 0 with 2048 bytes (the kubelet unit-test checkpoint's machine), NUMA
// node 1 with 8 MiB and 2 x 2 MiB hugepages; kubelet's reservedMemory: 512 bytes on node 0.
struct MemoryFixtureCase {
  const char* name;
  std::string fixture;
  std::string node0_memory_available;
  std::string reason;  // "" = the checkpoint was used
};
void PrintTo(const MemoryFixtureCase& c, std::ostream* os) { *os << c.name; }

class PublisherMemoryTest : public PublisherTest,
                            public ::testing::WithParamInterface<MemoryFixtureCase> {};

TEST_P(PublisherMemoryTest, ZonesCarryKubeletsMemoryFigures) {
  const MemoryFixtureCase& c = GetParam();
  absl::StatusOr<CpuTopology> t = TopologyFromJson(R"({"cpus":[
      {"id":0,"core":0,"socket":0,"numa":0},{"id":1,"core":1,"socket":1,"numa":1}],
      "numaNodes":[{"id":0,"memoryBytes":2048},
                   {"id":1,"memoryBytes":8388608,"hugepages":{"2097152":2}}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  auto topology = std::make_shared<const CpuTopology>(std::move(*t));
  const NumaMemory reserved = {{0, {{"memory", 512}}}};
  KubeletMemoryReader reader({.topology = topology,
                              .policy = KubeletMemoryPolicy::kStatic,
                              .reserved = reserved,
                              .checkpoint_path = std::string(HUYGENS_FIXTURES) + "/kubelet/" +
                                                 c.fixture});
  const KubeletMemoryUse use = reader.Read();
  if (c.reason.empty()) {
    EXPECT_EQ(use.reason, "");
  } else {
    EXPECT_THAT(use.reason, ::testing::HasSubstr(c.reason));
  }
  Publisher publisher(client_.get(), &clock_,
                      {.node_name = "mem", .topology = topology, .memory_reserved = reserved});
  ASSERT_TRUE(publisher.Publish({.memory_used = use.used}).ok());
  const NrtObject nrt = Stored("mem");
  ASSERT_EQ(nrt.zones.size(), 2u);
  EXPECT_EQ(*nrt.zones[0].Resource("memory"),
            (NrtResource{"memory", "2048", "1536", c.node0_memory_available}));
  // Node 1: 8 MiB less its 4 MiB of hugepages; the checkpoints say nothing about it.
  EXPECT_EQ(*nrt.zones[1].Resource("memory"),
            (NrtResource{"memory", "8388608", "4194304", "4194304"}));
  EXPECT_EQ(*nrt.zones[1].Resource("hugepages-2Mi"),
            (NrtResource{"hugepages-2Mi", "4194304", "4194304", "4194304"}));
}

INSTANTIATE_TEST_SUITE_P(
    KubeletFixtures, PublisherMemoryTest,
    ::testing::Values(
        // machineState 0 memory: allocatable 1536, free 1024 (a 512-byte container).
        MemoryFixtureCase{"TheStaticCheckpointGivesKubeletsFree",
                          "memory_manager_state.k8s-unittest.static.json", "1024", ""},
        // Dummy checksum 1: ignored, nothing lost, available = allocatable.
        MemoryFixtureCase{"ABadChecksumLeavesAvailableAtAllocatable",
                          "memory_manager_state.talos-unittest.static-64GiB.json", "1536",
                          "checksum mismatch"},
        MemoryFixtureCase{"ANonePolicyFileLeavesAvailableAtAllocatable",
                          "memory_manager_state.blog.16cpu.none-policy.json", "1536",
                          "written by policy \"None\""}),
    [](const ::testing::TestParamInfo<MemoryFixtureCase>& p) { return std::string(p.param.name); });

TEST_F(PublisherTest, MemoryForANumaNodeTheMachineLacksIsAnErrorNamingIt) {
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_,
                      {.node_name = "amd", .topology = topology, .min_interval = {}});
  ASSERT_TRUE(publisher.Publish({}).ok());
  auto r = publisher.Publish({.memory_used = {{42, {{"memory", 1}}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              ::testing::HasSubstr("memory_used[42][\"memory\"]: NUMA node 42 does not exist"));
  EXPECT_EQ(Writes(), 1);  // only the first, good publication
}

TEST_F(PublisherTest, PodChurnUpdatesTheObjectAtMostOncePerInterval) {
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_,
                      {.node_name = "n1", .topology = topology,
                       .min_interval = std::chrono::seconds(10)});
  ASSERT_EQ(publisher.Publish({}).value(), PublishResult::kWritten);
  ASSERT_EQ(Writes(), 1);

  // A pod takes CPUs 4-7 one second later: too soon, kept pending.
  clock_.Advance(std::chrono::seconds(1));
  const CpuSet pod = CpuSet::Range(4, 7);
  EXPECT_EQ(publisher.Publish({.exclusive = pod}).value(), PublishResult::kDeferred);
  EXPECT_EQ(Writes(), 1);
  ASSERT_TRUE(publisher.PendingUntil().has_value());
  EXPECT_EQ(PoolsFromNrt(Stored("n1"))->exclusive, CpuSet());

  // After the interval the same content is written.
  clock_.Advance(std::chrono::seconds(9));
  EXPECT_EQ(publisher.Publish({.exclusive = pod}).value(), PublishResult::kWritten);
  EXPECT_EQ(Writes(), 2);
  EXPECT_EQ(PoolsFromNrt(Stored("n1"))->exclusive, pod);
  EXPECT_FALSE(publisher.PendingUntil().has_value());

  // The pod leaves: its CPUs are available again.
  clock_.Advance(std::chrono::seconds(10));
  EXPECT_EQ(publisher.Publish({}).value(), PublishResult::kWritten);
  EXPECT_EQ(PoolsFromNrt(Stored("n1"))->exclusive, CpuSet());
}

TEST_F(PublisherTest, NothingIsWrittenWhenNothingChanged) {
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_,
                      {.node_name = "n1", .topology = topology, .heartbeat_interval = kNoHeartbeat});
  ASSERT_EQ(publisher.Publish({.exclusive = CpuSet{8}}).value(), PublishResult::kWritten);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(std::chrono::minutes(1));
    EXPECT_EQ(publisher.Publish({.exclusive = CpuSet{8}}).value(), PublishResult::kUnchanged);
  }
  EXPECT_EQ(Writes(), 1);
}

TEST_F(PublisherTest, ARestartedAgentWithTheSameContentDoesNotWrite) {
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  PublisherOptions options{.node_name = "n1", .topology = topology, .heartbeat_interval = kNoHeartbeat};
  ASSERT_EQ(Publisher(client_.get(), &clock_, options).Publish({}).value(),
            PublishResult::kWritten);
  Publisher restarted(client_.get(), &clock_, options);
  EXPECT_EQ(restarted.Publish({}).value(), PublishResult::kUnchanged);
  EXPECT_EQ(Writes(), 1);
}

TEST_F(PublisherTest, TheHeartbeatIsRenewedOncePerIntervalEvenWhenNothingElseChanges) {
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_,
                      {.node_name = "n1", .topology = topology, .heartbeat_interval = std::chrono::seconds(60)});
  auto beat = [&] {
    return server_->Get(kNrtResource, "", "n1")->at("metadata").at("annotations").value(kAgentHeartbeatAnnotation, "");
  };
  ASSERT_EQ(publisher.Publish({}).value(), PublishResult::kWritten);
  const std::string first = beat();
  ASSERT_FALSE(first.empty());
  clock_.Advance(std::chrono::seconds(59));
  EXPECT_EQ(publisher.Publish({}).value(), PublishResult::kUnchanged);
  EXPECT_EQ(beat(), first);
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(publisher.Publish({}).value(), PublishResult::kWritten);
  EXPECT_NE(beat(), first);
  EXPECT_EQ(Writes(), 2);
}

TEST_F(PublisherTest, AnUpdateKeepsForeignLabelsAndAnnotations) {
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_, {.node_name = "n1", .topology = topology});
  ASSERT_TRUE(publisher.Publish({}).ok());
  json object = *server_->Get(kNrtResource, "", "n1");
  object["metadata"]["labels"]["team"] = "infra";
  object["metadata"]["annotations"]["note"] = "kept";
  ASSERT_TRUE(client_->Update(kube::NodeResourceTopologies(), object).ok());
  clock_.Advance(std::chrono::minutes(1));
  ASSERT_EQ(publisher.Publish({.exclusive = CpuSet{9}}).value(), PublishResult::kWritten);
  const json stored = *server_->Get(kNrtResource, "", "n1");
  EXPECT_EQ(stored["metadata"]["labels"]["team"], "infra");
  EXPECT_EQ(stored["metadata"]["annotations"]["note"], "kept");
  EXPECT_EQ(PoolsFromNrt(Stored("n1"))->exclusive, CpuSet{9});
}

TEST_F(PublisherTest, ThePodTrafficAnnotationIsWrittenKeptAndRemovedAsTold) {
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_, {.node_name = "n1", .topology = topology, .heartbeat_interval = kNoHeartbeat});
  const std::string traffic =
      EncodePodTraffic({.window_seconds = 30, .pairs = {{"ns/a", "ns/b", 1234}}});
  ASSERT_EQ(publisher.Publish({.pod_traffic = traffic}).value(), PublishResult::kWritten);
  auto read = PodTrafficFromNrt(Stored("n1"));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->pairs, (std::vector<PodTrafficPair>{{"ns/a", "ns/b", 1234}}));

  // Nothing to say yet (a restarted agent before its first summary): kept, nothing written
  // (no heartbeat in this test: it would write).
  clock_.Advance(std::chrono::minutes(1));
  Publisher restarted(client_.get(), &clock_, {.node_name = "n1", .topology = topology, .heartbeat_interval = kNoHeartbeat});
  EXPECT_EQ(restarted.Publish({}).value(), PublishResult::kUnchanged);
  EXPECT_EQ(restarted.Publish({.pod_traffic = traffic}).value(), PublishResult::kUnchanged);
  EXPECT_EQ(Writes(), 1);

  // Another summary replaces it; "" removes it.
  const std::string other =
      EncodePodTraffic({.window_seconds = 30, .pairs = {{"ns/a", "ns/c", 99}}});
  ASSERT_EQ(restarted.Publish({.pod_traffic = other}).value(), PublishResult::kWritten);
  EXPECT_EQ((*PodTrafficFromNrt(Stored("n1")))->pairs,
            (std::vector<PodTrafficPair>{{"ns/a", "ns/c", 99}}));
  clock_.Advance(std::chrono::minutes(1));
  ASSERT_EQ(restarted.Publish({.pod_traffic = ""}).value(), PublishResult::kWritten);
  EXPECT_FALSE(Stored("n1").annotations.contains(kPodTrafficAnnotation));
  EXPECT_TRUE(Stored("n1").annotations.contains(kPoolsAnnotation));
  clock_.Advance(std::chrono::minutes(1));
  EXPECT_EQ(restarted.Publish({.pod_traffic = ""}).value(), PublishResult::kUnchanged);
}

TEST_F(PublisherTest, AFailedWriteIsReportedAndRetriedByTheNextCall) {
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_, {.node_name = "n1", .topology = topology});
  server_->FailNext("create", "noderesourcetopologies", 1, 403);
  EXPECT_FALSE(publisher.Publish({}).ok());
  EXPECT_EQ(publisher.Publish({}).value(), PublishResult::kWritten);
}

// The NRT is owned by its Node (v1 Node, name and uid), so the garbage collector deletes it with
// the Node; an NRT an older agent wrote without the reference, or with a Node's old uid, gets it
// on the next publication while other owners are kept.
TEST_F(PublisherTest, TheNrtIsOwnedByItsNodeAndAnExistingOneIsGivenTheReference) {
  const json owner = {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "n1"}, {"uid", NodeUid("n1")}};
  ASSERT_FALSE(NodeUid("n1").empty());
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  PublisherOptions options{.node_name = "n1", .topology = topology};
  ASSERT_EQ(Publisher(client_.get(), &clock_, options).Publish({}).value(), PublishResult::kWritten);
  auto owners = [&] {
    return server_->Get(kNrtResource, "", "n1").value_or(json::object())["metadata"].value("ownerReferences",
                                                                                           json::array());
  };
  EXPECT_EQ(owners(), json::array({owner}));

  // As an older agent left it: no owner; another owner and a stale Node reference.
  for (const json& before : {json::array(), json::array({{{"apiVersion", "example.com/v1"}, {"kind", "Keeper"},
                                                          {"name", "k"}, {"uid", "k-uid"}},
                                                         {{"apiVersion", "v1"}, {"kind", "Node"},
                                                          {"name", "n1"}, {"uid", "old-uid"}}})}) {
    json object = *server_->Get(kNrtResource, "", "n1");
    object["metadata"]["ownerReferences"] = before;
    ASSERT_TRUE(client_->Update(kube::NodeResourceTopologies(), object).ok());
    const int writes = Writes();
    Publisher restarted(client_.get(), &clock_, options);
    EXPECT_EQ(restarted.Publish({}).value(), PublishResult::kWritten) << before;
    EXPECT_EQ(Writes(), writes + 1);
    json want = json::array();
    for (const json& ref : before) {
      if (ref["kind"] != "Node") want.push_back(ref);
    }
    want.push_back(owner);
    EXPECT_EQ(owners(), want);
    EXPECT_EQ(restarted.Publish({}).value(), PublishResult::kUnchanged);
  }
}

// Without its Node (not registered yet, or deleted) nothing is published: an NRT without an
// owner would outlive the Node. The error names the Node; once it exists the next call writes.
TEST_F(PublisherTest, WithoutItsNodeTheNrtIsNotPublishedAndTheErrorNamesTheNode) {
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_, {.node_name = "late", .topology = topology});
  absl::StatusOr<PublishResult> r = publisher.Publish({});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("its owner, Node late: "));
  EXPECT_EQ(Writes(), 0);
  ASSERT_TRUE(server_->Create("nodes", {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "late"}}}}).ok());
  EXPECT_EQ(publisher.Publish({}).value(), PublishResult::kWritten);
  EXPECT_EQ(server_->Get(kNrtResource, "", "late")->at("metadata").at("ownerReferences")[0].value("uid", ""),
            NodeUid("late"));
}

struct ExtendedCase {
  const char* name;
  NodeMode mode;
  std::map<std::string, int> resources;
};

class PublisherExtendedTest : public PublisherTest, public ::testing::WithParamInterface<ExtendedCase> {};

TEST_P(PublisherExtendedTest, TheModesExtendedResourceIsAdvertisedOnTheNodeOnce) {
  const ExtendedCase& c = GetParam();
  ASSERT_TRUE(server_->MergePatch("nodes", "", "n1", {{"status", {{"capacity", {{"cpu", "64"}}}}}}).ok());
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_, {.node_name = "n1", .topology = topology, .mode = c.mode});
  EXPECT_EQ(publisher.PublishExtendedResources(c.resources).value(), true);
  const json node = *server_->Get("nodes", "", "n1");
  for (const auto& [name, count] : c.resources) {
    EXPECT_EQ(node["status"]["capacity"][name], std::to_string(count)) << name;
    EXPECT_EQ(node["status"]["allocatable"][name], std::to_string(count)) << name;
  }
  EXPECT_EQ(node["status"]["capacity"]["cpu"], "64");
  EXPECT_EQ(publisher.PublishExtendedResources(c.resources).value(), false);
  EXPECT_EQ(server_->RequestCount("patch", "nodes/status"), 1);
  // A restarted agent finds the Node saying so already and writes nothing.
  Publisher restarted(client_.get(), &clock_, {.node_name = "n1", .topology = topology, .mode = c.mode});
  EXPECT_EQ(restarted.PublishExtendedResources(c.resources).value(), false);
  EXPECT_EQ(server_->RequestCount("patch", "nodes/status"), 1);
}

TEST_F(PublisherTest, ANodeThatSaysTheCountInTheApiServersCanonicalFormIsNotPatchedAgain) {
  // kube-apiserver stores 1000 as "1k".
  const json said = {{kExclusiveResource, "1k"}};
  ASSERT_TRUE(server_->MergePatch("nodes", "", "n1", {{"status", {{"capacity", said}, {"allocatable", said}}}}).ok());
  auto topology = FixtureXml("64amd64-4p2n4ca2co.hwloc2.xml");
  Publisher publisher(client_.get(), &clock_, {.node_name = "n1", .topology = topology});
  EXPECT_EQ(publisher.PublishExtendedResources({{kExclusiveResource, 1000}}).value(), false);
  EXPECT_EQ(server_->RequestCount("patch", "nodes/status"), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, PublisherExtendedTest,
    ::testing::Values(ExtendedCase{"IsolatedModeAdvertisesTheIsolatedCpus", NodeMode::kIsolated,
                                   {{kIsolatedCpuResource, 12}}},
                      ExtendedCase{"AllocatableModeAdvertisesTheExclusiveOptIn", NodeMode::kAllocatable,
                                   {{kExclusiveResource, kExclusiveResourceCapacity}}}),
    [](const ::testing::TestParamInfo<ExtendedCase>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace huygens::agent

#include "topology/json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

class RoundTrip : public ::testing::TestWithParam<testing::NamedMachine> {};

TEST_P(RoundTrip, ThroughJsonGivesTheSameTopologyAndTheSameJson) {
  const CpuTopology t = GetParam().make();
  const json doc = ToJson(t);
  absl::StatusOr<CpuTopology> back = TopologyFromJson(doc);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  EXPECT_EQ(ToJson(*back), doc);
}

TEST_P(RoundTrip, ThroughTextGivesTheSameTopology) {
  const CpuTopology t = GetParam().make();
  for (int indent : {-1, 2}) {
    absl::StatusOr<CpuTopology> back = TopologyFromJson(ToJsonString(t, indent));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, t);
  }
}

INSTANTIATE_TEST_SUITE_P(Machines, RoundTrip, ::testing::ValuesIn(testing::AllNamed()),
                         [](const ::testing::TestParamInfo<testing::NamedMachine>& p) {
                           return std::string(p.param.name);
                         });

TEST(ToJson, WritesEveryFieldOfTheDocumentedShape) {
  // Written from docs/topology-json.md for the offline-CPU machine, not copied from output.
  const json expected = json::parse(R"({
    "version": 1,
    "cpus": [
      {"id":0,"core":0,"cluster":0,"die":0,
       "socket":0,"numa":0,"l3":0,"online":true,"isolated":false},
      {"id":1,"core":0,"cluster":0,"die":0,
       "socket":0,"numa":0,"l3":0,"online":true,"isolated":false},
      {"id":2,"core":1,"cluster":1,"die":0,
       "socket":0,"numa":0,"l3":0,"online":true,"isolated":true},
      {"id":3,"core":1,"cluster":1,"die":0,
       "socket":0,"numa":0,"l3":0,"online":true,"isolated":false},
      {"id":4,"core":-1,"cluster":-1,"die":-1,
       "socket":-1,"numa":-1,"l3":-1,"online":false,"isolated":false},
      {"id":5,"core":-1,"cluster":-1,"die":-1,
       "socket":-1,"numa":-1,"l3":-1,"online":false,"isolated":false}
    ],
    "numaNodes": [
      {"id":0,"cpus":"0-3","memoryBytes":0,"hugepages":{},"distances":{}}
    ],
    "machine": {"possible":"0-7","present":"0-5","isolated":"2","nohzFull":"2-3",
                "isolcpusFlags":["domain"]}
  })");
  EXPECT_EQ(ToJson(testing::OfflineCpusAdjacentSiblings()), expected);
}

TEST(ToJson, WritesHugepagesAndDistancesKeyedByDecimalText) {
  const json doc = ToJson(testing::TwoSocketsSmt());
  EXPECT_EQ(doc["numaNodes"][0]["hugepages"], json::parse(R"({"2097152":512,"1073741824":2})"));
  EXPECT_EQ(doc["numaNodes"][1]["distances"], json::parse(R"({"0":21,"1":10})"));
  EXPECT_EQ(doc["numaNodes"][1]["cpus"], "4-7,12-15");
  EXPECT_EQ(doc["numaNodes"][1]["memoryBytes"], 16ull << 30);
}

TEST(ToJsonString, IsCompactByDefault) {
  const std::string text = ToJsonString(testing::OneSocketNoSmt());
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_THAT(text, HasSubstr("\"version\":1"));
  EXPECT_THAT(ToJsonString(testing::OneSocketNoSmt(), 2), HasSubstr("\n  \"cpus\""));
}

// ---- The minimal form -------------------------------------------------------------------------

TEST(MinimalForm, FillsDefaultsAndDerivesNumaNodes) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(R"({"cpus":[
      {"id":0,"core":0,"socket":0,"numa":0},
      {"id":1,"core":0,"socket":0,"numa":0},
      {"id":2,"core":1,"socket":1,"numa":1},
      {"id":3,"core":1,"socket":1,"numa":1}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  const CpuInfo& c = t->Cpu(2);
  EXPECT_EQ(c.l3, 1);  // one L3 group per socket
  EXPECT_EQ(c.die, 1);
  EXPECT_EQ(c.cluster, 1);
  EXPECT_TRUE(c.online);
  EXPECT_FALSE(c.isolated);
  EXPECT_THAT(t->NumaNodeIds(), ElementsAre(0, 1));
  EXPECT_EQ(t->Numa(1).cpus, CpuSet({2, 3}));
  EXPECT_EQ(t->Numa(1).memory_bytes, 0u);
  EXPECT_FALSE(t->HasDistances());
  EXPECT_EQ(t->NumL3Groups(), 2);
  EXPECT_EQ(t->SiblingsOf(0), CpuSet({0, 1}));
}

TEST(MinimalForm, TakesTheL3GroupWhenGiven) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(R"({"cpus":[
      {"id":0,"core":0,"socket":0,"numa":0,"l3":0},
      {"id":1,"core":1,"socket":0,"numa":0,"l3":1}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->NumL3Groups(), 2);
  EXPECT_EQ(t->CpusInL3Group(1), CpuSet({1}));
}

TEST(MinimalForm, ReadsATopLevelDistanceMatrix) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(R"({"cpus":[
      {"id":0,"core":0,"socket":0,"numa":0},
      {"id":1,"core":1,"socket":0,"numa":1}],
    "distances":{"0":{"0":10,"1":21},"1":{"0":21,"1":10}}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Distance(0, 1), 21);
  EXPECT_EQ(t->Distance(1, 1), 10);
}

TEST(MinimalForm, ANodeNamedOnlyByTheMatrixIsCpuLess) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(R"({"cpus":[
      {"id":0,"core":0,"socket":0,"numa":0}],
    "distances":{"0":{"0":10,"2":30},"2":{"0":30,"2":10}}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->NumaNodeIds(), ElementsAre(0, 2));
  EXPECT_TRUE(t->Numa(2).cpus.Empty());
  EXPECT_EQ(t->Distance(2, 0), 30);
}

TEST(MinimalForm, MatrixRowsGoToGivenNumaNodes) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(R"({"cpus":[
      {"id":0,"core":0,"socket":0,"numa":0}],
    "numaNodes":[{"id":0,"memoryBytes":1024},{"id":3}],
    "distances":{"0":{"0":10,"3":20},"3":{"0":20,"3":10}}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Numa(0).memory_bytes, 1024u);
  EXPECT_EQ(t->Numa(0).cpus, CpuSet({0}));  // derived when not given
  EXPECT_EQ(t->Distance(3, 0), 20);
}

TEST(MinimalForm, OfflineCpusNeedNoIds) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(R"({"cpus":[
      {"id":0,"core":0,"socket":0,"numa":0},{"id":1,"online":false}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->OfflineCpus(), CpuSet({1}));
  EXPECT_EQ(t->Cpu(1).numa, -1);
}

TEST(MinimalForm, EqualsTheFullFormOfTheSameMachine) {
  // The minimal description of OneSocketNoSmt (without its memory) reads as that machine.
  absl::StatusOr<CpuTopology> t = TopologyFromJson(R"({"cpus":[
      {"id":0,"core":0,"socket":0,"numa":0,"l3":0},{"id":1,"core":1,"socket":0,"numa":0,"l3":0},
      {"id":2,"core":2,"socket":0,"numa":0,"l3":0},{"id":3,"core":3,"socket":0,"numa":0,"l3":0}],
    "numaNodes":[{"id":0,"memoryBytes":8589934592}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, testing::OneSocketNoSmt());
}

// ---- Errors -----------------------------------------------------------------------------------

struct ErrorCase {
  const char* name;
  std::string text;
  std::string error;
};
void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class Errors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(Errors, NameTheFieldAndTheProblem) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(GetParam().text);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr(GetParam().error));
}

constexpr const char* kCpu0 = R"({"id":0,"core":0,"socket":0,"numa":0})";

std::string Cpus(const std::string& extra_cpu) {
  return std::string(R"({"cpus":[)") + kCpu0 + "," + extra_cpu + "]}";
}

std::string V1(const std::string& rest) {
  return std::string(R"({"version":1,"cpus":[)") + kCpu0 + "]," + rest + "}";
}

INSTANTIATE_TEST_SUITE_P(
    TopologyFromJson, Errors,
    ::testing::Values(
        ErrorCase{"SyntaxError", R"({"cpus":[)", "topology JSON: [json.exception.parse_error"},
        ErrorCase{"EmptyText", "", "topology JSON: [json.exception.parse_error"},
        ErrorCase{"NotAnObject", "[1,2]", "topology JSON: expected an object, got array"},
        ErrorCase{"MissingCpus", "{}", "cpus: missing"},
        ErrorCase{"CpusNotAnArray", R"({"cpus":{}})", "cpus: expected an array, got object"},
        ErrorCase{"CpuNotAnObject", R"({"cpus":[7]})", "cpus[0]: expected an object, got integer"},
        ErrorCase{"NumaNotAnInteger", Cpus(R"({"id":1,"core":1,"socket":0,"numa":"0"})"),
                  "cpus[1].numa: expected an integer, got string"},
        ErrorCase{"FractionalCore", Cpus(R"({"id":1,"core":1.5,"socket":0,"numa":0})"),
                  "cpus[1].core: expected an integer, got number with a fraction"},
        ErrorCase{"HugeSocket", Cpus(R"({"id":1,"core":1,"socket":4294967296,"numa":0})"),
                  "cpus[1].socket: integer 4294967296 is too large"},
        ErrorCase{"OnlineNotABoolean", Cpus(R"({"id":1,"core":1,"socket":0,"numa":0,"online":1})"),
                  "cpus[1].online: expected true or false, got integer"},
        ErrorCase{"MissingCpuId", Cpus(R"({"core":1,"socket":0,"numa":0})"), "cpus[1].id: missing"},
        ErrorCase{"CpuIdOutOfRange", Cpus(R"({"id":8192,"core":1,"socket":0,"numa":0})"),
                  "cpus[1].id: cpu id 8192 is outside [0, 8192)"},
        ErrorCase{"NegativeCpuId", Cpus(R"({"id":-4,"core":1,"socket":0,"numa":0})"),
                  "cpus[1].id: cpu id -4 is outside"},
        // Topology ids index per-id tables downstream: each is bounded as a CPU id is, so one
        // NRT cannot make the scheduler allocate 2^31 slots.
        ErrorCase{"CoreIdOutOfRange", Cpus(R"({"id":1,"core":2147483647,"socket":0,"numa":0})"),
                  "cpus[1].core: 2147483647 is outside [0, 8192)"},
        ErrorCase{"SocketIdOutOfRange", Cpus(R"({"id":1,"core":1,"socket":1000000000,"numa":0})"),
                  "cpus[1].socket: 1000000000 is outside [0, 8192)"},
        ErrorCase{"NumaIdOutOfRange", Cpus(R"({"id":1,"core":1,"socket":0,"numa":8192})"),
                  "cpus[1].numa: 8192 is outside [0, 8192)"},
        ErrorCase{"L3IdOutOfRange", Cpus(R"({"id":1,"core":1,"socket":0,"numa":0,"l3":99999})"),
                  "cpus[1].l3: 99999 is outside [0, 8192)"},
        ErrorCase{"NegativeCoreId", Cpus(R"({"id":1,"core":-7,"socket":0,"numa":0})"),
                  "cpus[1].core: -7 is outside [0, 8192)"},
        ErrorCase{"NumaNodeIdOutOfRange", V1(R"("numaNodes":[{"id":0},{"id":70000}])"),
                  "numaNodes[1].id: 70000 is outside [0, 8192)"},
        ErrorCase{"MatrixKeyOutOfRange", R"({"cpus":[],"distances":{"9000":{}}})",
                  "distances.9000: "},
        ErrorCase{"MisspelledCpuField", Cpus(R"({"id":1,"core":1,"soket":0,"numa":0})"),
                  "cpus[1].soket: unknown field"},
        ErrorCase{"UnknownTopLevelField", R"({"cpus":[],"cpu":[]})", "cpu: unknown field"},
        ErrorCase{"UnsupportedVersion", R"({"version":2,"cpus":[]})",
                  "version: unsupported version 2 (this reader knows 1)"},
        ErrorCase{"VersionAsText", R"({"version":"1","cpus":[]})",
                  "version: expected an integer, got string"},
        ErrorCase{"VersionOneWithoutNumaNodes", R"({"version":1,"cpus":[]})",
                  "numaNodes: missing (required with \"version\")"},
        ErrorCase{"VersionOneWithTopLevelDistances", V1(R"("numaNodes":[],"distances":{})"),
                  "distances: unknown field"},
        ErrorCase{"NumaNodesNotAnArray", V1(R"("numaNodes":{})"),
                  "numaNodes: expected an array, got object"},
        ErrorCase{"NumaNodeWithoutId", V1(R"("numaNodes":[{"cpus":"0"}])"),
                  "numaNodes[0].id: missing"},
        ErrorCase{"NumaNodeCpusNotAList", V1(R"("numaNodes":[{"id":0,"cpus":"0-"}])"),
                  "numaNodes[0].cpus: cpu-list \"0-\": bad range"},
        ErrorCase{"NumaNodeCpusNotAString", V1(R"("numaNodes":[{"id":0,"cpus":[0]}])"),
                  "numaNodes[0].cpus: expected a cpu-list string, got array"},
        ErrorCase{"NumaNodeCpusDisagreeWithCpus", V1(R"("numaNodes":[{"id":0,"cpus":"0-1"}])"),
                  "numaNodes[0].cpus: \"0-1\" differs from the CPUs whose numa is 0 (\"0\")"},
        ErrorCase{"NegativeMemory", V1(R"("numaNodes":[{"id":0,"memoryBytes":-1}])"),
                  "numaNodes[0].memoryBytes: expected a non-negative integer, got -1"},
        ErrorCase{"HugepageSizeNotANumber", V1(R"("numaNodes":[{"id":0,"hugepages":{"2Mi":4}}])"),
                  "numaNodes[0].hugepages.2Mi: key \"2Mi\" is not a decimal number"},
        ErrorCase{"HugepageCountNotANumber",
                  V1(R"("numaNodes":[{"id":0,"hugepages":{"2097152":"4"}}])"),
                  "numaNodes[0].hugepages.2097152: expected a non-negative integer, got string"},
        ErrorCase{"DistanceKeyWithLeadingZero",
                  V1(R"("numaNodes":[{"id":0,"distances":{"00":10}}])"),
                  "numaNodes[0].distances.00: key \"00\" is not a decimal number"},
        ErrorCase{"DistanceNotAnInteger", V1(R"("numaNodes":[{"id":0,"distances":{"0":"ten"}}])"),
                  "numaNodes[0].distances.0: expected an integer, got string"},
        ErrorCase{"MachineListMalformed",
                  V1(R"("numaNodes":[{"id":0}],"machine":{"possible":"3-1"})"),
                  "machine.possible: cpu-list \"3-1\": reversed range"},
        ErrorCase{"IsolcpusFlagNotAString",
                  V1(R"("numaNodes":[{"id":0}],"machine":{"isolcpusFlags":["domain",1]})"),
                  "machine.isolcpusFlags[1]: expected a string, got integer"},
        ErrorCase{"MachineUnknownField", V1(R"("numaNodes":[{"id":0}],"machine":{"online":"0"})"),
                  "machine.online: unknown field"},
        ErrorCase{"CpuInAnUnlistedNumaNode", V1(R"("numaNodes":[{"id":1}])"),
                  "topology JSON: cpu 0: NUMA node 0 is not listed"},
        ErrorCase{"BrokenInvariant", Cpus(R"({"id":1,"core":0,"socket":1,"numa":0})"),
                  "topology JSON: cpu 1: core 0 lies in socket 1 here but in socket 0"},
        ErrorCase{"MatrixRowNotAnObject", R"({"cpus":[],"distances":{"0":10}})",
                  "distances.0: expected an object, got integer"},
        ErrorCase{"MatrixKeyNotANumber", R"({"cpus":[],"distances":{"x":{}}})",
                  "distances.x: key \"x\" is not a decimal number"},
        ErrorCase{"MatrixRowForAnUnlistedNode",
                  R"({"cpus":[],"numaNodes":[{"id":0}],"distances":{"1":{"1":10}}})",
                  "distances.1: NUMA node 1 is not in numaNodes"},
        ErrorCase{"MatrixAndNodeDistancesBoth",
                  R"({"cpus":[],"numaNodes":[{"id":0,"distances":{"0":10}}],)"
                  R"("distances":{"0":{"0":10}}})",
                  "distances.0: NUMA node also has numaNodes[].distances"},
        ErrorCase{"IncompleteMatrix",
                  R"({"cpus":[],"distances":{"0":{"0":10},"1":{"0":20,"1":10}}})",
                  "NUMA node 0: distances lack an entry for NUMA node 1"}),
    [](const ::testing::TestParamInfo<ErrorCase>& p) { return std::string(p.param.name); });

TEST(TopologyFromJson, AcceptsEveryStringType) {
  const std::string text = ToJsonString(testing::OneSocketNoSmt());
  EXPECT_TRUE(TopologyFromJson(text).ok());
  EXPECT_TRUE(TopologyFromJson(std::string_view(text)).ok());
  EXPECT_TRUE(TopologyFromJson(text.c_str()).ok());
}

}  // namespace
}  // namespace huygens

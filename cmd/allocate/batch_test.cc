// Tests of cmd/allocate/batch.h: every op and every error kind of `huygens allocate`, one request line
// at a time, on named machines (topology/testing/machines.h) served by a fake loader.
// Expected cpusets are reasoned from kubelet's rules (see each case) and Huygens' documented
// choices (alloc/huygens_allocator.h), not copied from the program's output.
#include "cmd/allocate/batch.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

// Synthetic names the fake loader knows:
//   "dual"      - testing::DualSocketHT: NUMA 0 = socket 0 = CPUs 0-5,12-17, NUMA 1 = socket 1
//                 = CPUs 6-11,18-23, siblings n / n+12;
//   "multi"     - testing::DualSocketMultiNumaPerSocketHT: NUMA n = CPUs 4n..4n+3 and
//                 16+4n..16+4n+3, sockets {0,1} and {2,3}; distances 10 / 12 / 32;
//   "four-l3"   - testing::SingleSocketFourL3: L3 group g = cores 4g..4g+3 = CPUs 4g..4g+3 and
//                 16+4g..16+4g+3.
// File "missing.json" is NotFound; any other source is InvalidArgument.
struct FakeLoader {
  int* calls;
  absl::StatusOr<CpuTopology> operator()(const TopologySource& s) const {
    ++*calls;
    if (s.synthetic == "dual") return testing::DualSocketHT();
    if (s.synthetic == "multi") return testing::DualSocketMultiNumaPerSocketHT();
    if (s.synthetic == "four-l3") return testing::SingleSocketFourL3();
    if (s.file == "missing.json") return absl::NotFoundError("missing.json: cannot open");
    return absl::InvalidArgumentError("unknown machine");
  }
};

struct Case {
  std::string name;
  std::string request;
  std::string expected;  // the whole response, as JSON (compared as values)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class BatchOkTest : public ::testing::TestWithParam<Case> {};

TEST_P(BatchOkTest, AnswersWithTheExpectedResult) {
  int calls = 0;
  AllocateBatch batch(FakeLoader{&calls});
  const AllocateBatch::Response r = batch.Handle(GetParam().request);
  EXPECT_FALSE(r.error) << r.line;
  EXPECT_EQ(json::parse(r.line), json::parse(GetParam().expected)) << r.line;
}

INSTANTIATE_TEST_SUITE_P(
    Ops, BatchOkTest,
    ::testing::Values(
        Case{"DeviceHintsAsKubeletGivesThem",
             R"({"id":"d","op":"device-hints","numaNodes":[0,1],"resource":"nvidia.com/gpu","devices":{"0":2,"1":1},"available":{"0":1,"1":1},"request":2})",
             R"({"id":"d","hints":[{"numaNodes":[0,1],"preferred":false}]})"},
        // kubelet packed: no whole socket for 4; whole cores of the socket with fewer free
        // CPUs, ties to socket 0: cores 0 and 1.
        Case{"TakePacksWholeCoresOfTheFirstSocket",
             R"({"id":"a","op":"take","topology":{"synthetic":"dual"},"numCpus":4})",
             R"({"id":"a","cpuset":"0-1,12-13"})"},
        // CPU 0 busy: socket 0 has fewer free CPUs, and its core 0 has one free CPU (12): kubelet
        // fills that core before touching a whole one.
        Case{"TakeOneCpuFillsTheHalfUsedCoreFirst",
             R"({"id":"b","op":"take","topology":{"synthetic":"dual"},"available":"1-23","numCpus":1})",
             R"({"id":"b","cpuset":"12"})"},
        // "multi" with NUMA 1 down to CPUs 7 and 23, NUMA 3 and CPU 27 busy. Affinity NUMA 1:
        // kubelet's allocateCPUs takes the aligned 7 and 23 first, then 2 more packed from the
        // other free CPUs: the socket with fewer free CPUs (socket 1: 7, socket 0: 8), core 8.
        Case{"TakeWithAnAffinityTakesItsNumaNodesFirst",
             R"({"id":"g","op":"take","topology":{"synthetic":"multi"},"available":"0-3,7-11,16-19,23-26","numCpus":4,"affinity":{"numaNodes":[1],"preferred":true}})",
             R"({"id":"g","cpuset":"7-8,23-24"})"},
        // align-by-socket: the aligned CPUs are all of socket 0's free ones, so the 4 CPUs stay
        // there: core 7 (NUMA 1, fewer free CPUs) and core 0.
        Case{"TakeWithAlignBySocketKeepsTheAffinitysSocket",
             R"({"id":"h","op":"take","topology":{"synthetic":"multi"},"available":"0-3,7-11,16-19,23-26","numCpus":4,"affinity":{"numaNodes":[1],"preferred":true},"options":{"align-by-socket":true}})",
             R"({"id":"h","cpuset":"0,7,16,23"})"},
        // distribute-cpus-across-cores: no whole-core phase; socket 0's free CPUs by id.
        Case{"TakeSpreadTakesOneThreadPerCore",
             R"({"id":"c","op":"take","topology":{"synthetic":"dual"},"numCpus":4,"options":{"cpuSortingStrategy":"spread"}})",
             R"({"id":"c","cpuset":"0-3"})"},
        // 12 CPUs in groups of 2 need 2 NUMA nodes (4 groups each); every pair balances alike,
        // so the first, {0,1}, gets 6 each, packed as 3 whole cores per node. (Packed would
        // take all of NUMA 0 and 2 cores of NUMA 1.)
        Case{"TakeDistributedSplitsEvenlyOverTheFewestNumaNodes",
             R"({"id":"d","op":"take","topology":{"synthetic":"multi"},"numCpus":12,"options":{"distribute-cpus-across-numa":true,"cpuGroupSize":2}})",
             R"({"id":"d","cpuset":"0-2,4-6,16-18,20-22"})"},
        // prefer-align-cpus-by-uncorecache with CPU 0 busy: L3 group 0 (7 free) is tried first
        // but its first two cores hold 3 free CPUs, not 4; L3 group 1's cores 4 and 5 fit.
        // (Without the option: whole cores 1 and 2, in L3 group 0.)
        Case{"TakeUncoreCacheFitsTheRequestInOneL3Group",
             R"({"id":"e","op":"take","topology":{"synthetic":"four-l3"},"available":"1-31","numCpus":4,"options":{"prefer-align-cpus-by-uncorecache":true}})",
             R"({"id":"e","cpuset":"4-5,20-21"})"},
        Case{"TakeWithoutUncoreCacheTakesWholeCoresInOrder",
             R"({"id":"e2","op":"take","topology":{"synthetic":"four-l3"},"available":"1-31","numCpus":4})",
             R"({"id":"e2","cpuset":"1-2,17-18"})"},
        // Inline minimal topology: 2 cores x 2 threads on one NUMA node; cores by id.
        Case{"TakeOnAnInlineTopology",
             R"({"id":7,"op":"take","topology":{"cpus":[{"id":0,"core":0,"socket":0,"numa":0},{"id":1,"core":1,"socket":0,"numa":0},{"id":2,"core":0,"socket":0,"numa":0},{"id":3,"core":1,"socket":0,"numa":0}]},"available":"0-1,3","numCpus":2})",
             R"({"id":7,"cpuset":"1,3"})"},
        // kubelet reserves CPU 0 (takeByTopology of 1); available = 1-23; socket 0 has fewer
        // free CPUs, so its first whole free cores, 1 and 2, are taken.
        Case{"StaticAllocateGivesAGuaranteedContainerWholeCores",
             R"({"id":"s","op":"static-allocate","topology":{"synthetic":"dual"},"numReservedCpus":1,"pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"4","cpuLimit":"4"}]},"container":"c"})",
             R"({"id":"s","cpuset":"1-2,13-14","defaultCpuSet":"0,3-12,15-23","assignments":{"p":{"c":"1-2,13-14"}}})"},
        // The given state: CPUs 1-2,13-14 already held by pod q; next whole cores are 3 and 4.
        Case{"StaticAllocateStartsFromTheGivenState",
             R"({"id":"s2","op":"static-allocate","topology":{"synthetic":"dual"},"reservedCpus":"0","numReservedCpus":1,"defaultCpuSet":"0,3-12,15-23","assignments":{"q":{"app":"1-2,13-14"}},"pod":{"uid":"p","qos":"Guaranteed","containers":[{"name":"c","cpuRequest":4,"cpuLimit":4}]},"container":"c"})",
             R"({"id":"s2","cpuset":"3-4,15-16","defaultCpuSet":"0,5-12,17-23","assignments":{"p":{"c":"3-4,15-16"},"q":{"app":"1-2,13-14"}}})"},
        // Burstable: no exclusive CPUs; the container runs in the shared pool, state unchanged.
        Case{"StaticAllocateLeavesABurstableContainerInTheSharedPool",
             R"({"id":"s3","op":"static-allocate","topology":{"synthetic":"dual"},"numReservedCpus":1,"pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"2","cpuLimit":"4"}]},"container":"c"})",
             R"({"id":"s3","cpuset":"0-23","defaultCpuSet":"0-23","assignments":{}})"},
        // Each NUMA node has 12 CPUs: each alone is a preferred hint; both together are not.
        Case{"HintsListEveryNumaCombinationNarrowestPreferred",
             R"({"id":"h","op":"hints","topology":{"synthetic":"dual"},"numCpus":4})",
             R"({"id":"h","hints":[{"numaNodes":[0],"preferred":true},{"numaNodes":[1],"preferred":true},{"numaNodes":[0,1],"preferred":false}]})"},
        Case{"HintsForZeroCpusAreNoPreference",
             R"({"id":"h0","op":"hints","topology":{"synthetic":"dual"},"numCpus":0})",
             R"({"id":"h0","hints":null})"},
        // 6 free CPUs in all cannot hold 8: no alignment possible.
        Case{"HintsAreEmptyWhenNothingFits",
             R"({"id":"h1","op":"hints","topology":{"synthetic":"dual"},"available":"6-11","numCpus":8})",
             R"({"id":"h1","hints":[]})"},
        // cpu prefers {0}; memory has no preference: {0}, preferred, admitted.
        Case{"MergeRestrictedAdmitsThePreferredNarrowHint",
             R"({"id":"m","op":"merge","policy":"restricted","scope":"container","numaNodes":[0,1],"providers":[{"cpu":[{"numaNodes":[0],"preferred":true},{"numaNodes":[0,1],"preferred":false}]},{"memory":null}]})",
             R"({"id":"m","hint":{"numaNodes":[0],"preferred":true},"admit":true})"},
        // single-numa-node drops the two-node hint; nothing is left to merge, so the default
        // (every node, not preferred) becomes no affinity, and the pod is refused.
        Case{"MergeSingleNumaNodeRefusesATwoNodeHint",
             R"({"id":"m1","op":"merge","policy":"single-numa-node","numaNodes":[0,1],"providers":[{"cpu":[{"numaNodes":[0,1],"preferred":true}]}]})",
             R"({"id":"m1","hint":{"numaNodes":null,"preferred":false},"admit":false})"},
        // Two preferred 2-node hints: lower ids win, unless prefer-closest-numa-nodes picks
        // the pair with the smaller average distance ({0,2}: 11 against {0,1}: 31).
        Case{"MergeWithoutPreferClosestTakesTheLowerIds",
             R"({"id":"m2","op":"merge","policy":"best-effort","numaNodes":[0,1,2,3],"providers":[{"cpu":[{"numaNodes":[0,1],"preferred":true},{"numaNodes":[0,2],"preferred":true}]}]})",
             R"({"id":"m2","hint":{"numaNodes":[0,1],"preferred":true},"admit":true})"},
        Case{"MergePreferClosestTakesTheNearerPair",
             R"({"id":"m3","op":"merge","policy":"best-effort","options":{"prefer-closest-numa-nodes":"true"},"numaNodes":[0,1,2,3],"distances":{"0":{"0":10,"1":52,"2":12,"3":52},"1":{"0":52,"1":10,"2":52,"3":12},"2":{"0":12,"1":52,"2":10,"3":52},"3":{"0":52,"1":12,"2":52,"3":10}},"providers":[{"cpu":[{"numaNodes":[0,1],"preferred":true},{"numaNodes":[0,2],"preferred":true}]}]})",
             R"({"id":"m3","hint":{"numaNodes":[0,2],"preferred":true},"admit":true})"},
        // Cores of 2 and 1 threads (3 CPUs on 2 cores: kubelet's average core size is 1). Core
        // 0 has one free CPU (0; 2 is busy), so kubelet's take calls it free and takes it
        // whole: the kubelet oracle answers 0,2, and so does the take op.
        Case{"TakeGivesAHybridCoreWholeAsKubeletDoes",
             R"({"id":"w","op":"take","topology":{"cpus":[{"id":0,"core":0,"socket":0,"numa":0},{"id":1,"core":1,"socket":0,"numa":0},{"id":2,"core":0,"socket":0,"numa":0}]},"available":"0-1","numCpus":2})",
             R"({"id":"w","cpuset":"0,2"})"},
        // spread-cores: both nodes offer 6 cores; most-allocated ties go to NUMA 0; one thread
        // per whole free core, lowest core first.
        Case{"HuygensSpreadCoresTakesOneThreadPerCore",
             R"({"id":"u","op":"huygens","topology":{"synthetic":"dual"},"numCpus":4,"bindPolicy":"spread-cores"})",
             R"({"id":"u","cpuset":"0-3","numaNodes":[0]})"},
        // Capacity 0.5 on NUMA 0 makes it offer 6 against 12: least-allocated picks NUMA 1,
        // most-allocated NUMA 0; packed inside the node takes its first whole cores.
        Case{"HuygensLeastAllocatedPicksTheNodeOfferingMost",
             R"({"id":"u1","op":"huygens","topology":{"synthetic":"dual"},"numCpus":4,"numaStrategy":"least-allocated","capacity":{"0":0.5}})",
             R"({"id":"u1","cpuset":"6-7,18-19","numaNodes":[1]})"},
        Case{"HuygensMostAllocatedPicksTheNodeOfferingLeast",
             R"({"id":"u2","op":"huygens","topology":{"synthetic":"dual"},"numCpus":4,"capacity":{"0":0.5}})",
             R"({"id":"u2","cpuset":"0-1,12-13","numaNodes":[0]})"},
        // NUMA 3 busy; nearest to 3 by the machine's distances is NUMA 2 (same socket, 12).
        Case{"HuygensNearestUsesTheMachineDistances",
             R"({"id":"u3","op":"huygens","topology":{"synthetic":"multi"},"available":"0-11,16-27","numCpus":4,"numaStrategy":"nearest","nearNumaNodes":[3]})",
             R"({"id":"u3","cpuset":"8-9,24-25","numaNodes":[2]})"},
        // The same with distances given in the request: NUMA 0 is now nearest to 3.
        Case{"HuygensNearestUsesTheRequestsDistances",
             R"({"id":"u4","op":"huygens","topology":{"synthetic":"multi","distances":{"0":{"0":10,"1":20,"2":30,"3":11},"1":{"0":20,"1":10,"2":20,"3":20},"2":{"0":30,"1":20,"2":10,"3":30},"3":{"0":11,"1":20,"2":30,"3":10}}},"available":"0-11,16-27","numCpus":4,"numaStrategy":"nearest","nearNumaNodes":[3]})",
             R"({"id":"u4","cpuset":"0-1,16-17","numaNodes":[0]})"},
        // podCpus: the pod's earlier container holds CPU 3, whose sibling 15 is free. With it,
        // NUMA 0 (one whole free core and 15) holds 3 CPUs without sharing a core with another
        // pod and fills exactly; without it, NUMA 1 would win.
        Case{"HuygensPodCpusLetTheOddCpuFillThePodsOwnHalfCore",
             R"({"id":"u5","op":"huygens","topology":{"synthetic":"dual"},"available":"4,15-16,6-8,18-20","numCpus":3,"podCpus":"3"})",
             R"({"id":"u5","cpuset":"4,15-16","numaNodes":[0]})"},
        Case{"HuygensWithoutPodCpusAvoidsTheHalfCore",
             R"({"id":"u6","op":"huygens","topology":{"synthetic":"dual"},"available":"4,15-16,6-8,18-20","numCpus":3})",
             R"({"id":"u6","cpuset":"6-7,18","numaNodes":[1]})"}),
    [](const ::testing::TestParamInfo<Case>& param) { return param.param.name; });

struct ErrorCase {
  std::string name;
  std::string request;
  std::string kind;
  std::string message;  // a substring of the error
  json id = nullptr;
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class BatchErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(BatchErrorTest, AnswersWithTheErrorAndKeepsTheId) {
  int calls = 0;
  AllocateBatch batch(FakeLoader{&calls});
  const AllocateBatch::Response r = batch.Handle(GetParam().request);
  EXPECT_TRUE(r.error) << r.line;
  const json got = json::parse(r.line);
  EXPECT_EQ(got.at("id"), GetParam().id);
  EXPECT_EQ(got.at("kind"), GetParam().kind) << r.line;
  EXPECT_THAT(got.at("error").get<std::string>(), HasSubstr(GetParam().message));
  EXPECT_EQ(got.size(), 3u) << r.line;  // id, error, kind: no partial result
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BatchErrorTest,
    ::testing::Values(
        ErrorCase{"NotJsonHasNoId", "{\"id\":1,", "invalid", "request: "},
        ErrorCase{"NotAnObject", "[1,2]", "invalid", "request: expected an object"},
        ErrorCase{"TooDeeplyNested", std::string(40, '[') + std::string(40, ']'), "invalid",
                  "nested deeper than 32 levels"},
        ErrorCase{"UnknownOp", R"({"id":"x","op":"steal"})", "invalid",
                  "op: \"steal\" is not take", "x"},
        ErrorCase{"MissingOp", R"({"id":"x"})", "invalid", "op: missing", "x"},
        ErrorCase{"DeviceHintsOnAnUnknownNumaNode",
                  R"({"id":"d","op":"device-hints","numaNodes":[0,1],"devices":{"2":1},"request":1})",
                  "invalid", "devices.2: not a NUMA node id of numaNodes", "d"},
        ErrorCase{"DeviceHintsWithMoreFreeThanThereAre",
                  R"({"id":"d","op":"device-hints","numaNodes":[0],"devices":{"0":1},"available":{"0":2},"request":1})",
                  "invalid", "available + reusable on NUMA node 0 exceed its 1 devices", "d"},
        ErrorCase{"DeviceHintsWithoutRequest",
                  R"({"id":"d","op":"device-hints","numaNodes":[0],"devices":{"0":1}})",
                  "invalid", "request: missing", "d"},
        // A resize that cannot grow on the container's NUMA node (single-numa-node) changes
        // nothing and says why.
        ErrorCase{"ResizeGrowBeyondTheNumaNode",
                  R"({"id":"r","op":"resize","topology":{"synthetic":"dual"},"cpuset":"0-5,12-17","numCpus":14})",
                  "unavailable", "grow: no single NUMA node has 2 free CPUs", "r"},
        ErrorCase{"ResizeToHalfACoreUnderFullCores",
                  R"({"id":"r","op":"resize","topology":{"synthetic":"dual"},"cpuset":"0-1,12-13","numCpus":3,"bindPolicy":"full-cores"})",
                  "unavailable", "shrink: full-cores: 3 cpus is not a whole number of cores", "r"},
        ErrorCase{"ResizeAvailableOverlapsTheCpuset",
                  R"({"id":"r","op":"resize","topology":{"synthetic":"dual"},"cpuset":"0-1","available":"1-3","numCpus":3})",
                  "invalid", "available: cpus 1 are also in cpuset", "r"},
        ErrorCase{"ResizeWithoutCpuset",
                  R"({"id":"r","op":"resize","topology":{"synthetic":"dual"},"numCpus":3})",
                  "invalid", "cpuset: missing", "r"},
        // The huygens and resize ops share their request fields but for one each.
        ErrorCase{"ResizeTakesNoWithinNumaNodes",
                  R"({"id":"r","op":"resize","topology":{"synthetic":"dual"},"cpuset":"0-1","numCpus":2,"withinNumaNodes":[0]})",
                  "invalid", "withinNumaNodes: unknown field", "r"},
        ErrorCase{"HuygensTakesNoCpuset",
                  R"({"id":"h","op":"huygens","topology":{"synthetic":"dual"},"cpuset":"0-1","numCpus":2})",
                  "invalid", "cpuset: unknown field", "h"},
        ErrorCase{"HuygensAvailableOverlapsPodCpus",
                  R"({"id":"h","op":"huygens","topology":{"synthetic":"dual"},"available":"2-5","podCpus":"3","numCpus":1})",
                  "invalid", "available: cpus 3 are also in podCpus", "h"},
        ErrorCase{"HuygensWithAMalformedPodCpus",
                  R"({"id":"h","op":"huygens","topology":{"synthetic":"dual"},"podCpus":"3-","numCpus":1})",
                  "invalid", "podCpus:", "h"},
        ErrorCase{"HuygensWithAnUnknownField",
                  R"({"id":"h","op":"huygens","topology":{"synthetic":"dual"},"numCpus":2,"bind":"x"})",
                  "invalid", "bind: unknown field", "h"},
        ErrorCase{"MissingTopology", R"({"id":"x","op":"take","numCpus":1})", "invalid",
                  "topology: missing", "x"},
        ErrorCase{"MissingNumCpus", R"({"id":2,"op":"take","topology":{"synthetic":"dual"}})",
                  "invalid", "numCpus: missing", 2},
        ErrorCase{"NegativeNumCpus",
                  R"({"id":2,"op":"take","topology":{"synthetic":"dual"},"numCpus":-1})",
                  "invalid", "numCpus: -1 is negative", 2},
        ErrorCase{"UnknownField",
                  R"({"id":2,"op":"take","topology":{"synthetic":"dual"},"numCpu":1})",
                  "invalid", "numCpu: unknown field", 2},
        ErrorCase{"BadCpuList",
                  R"({"id":2,"op":"take","topology":{"synthetic":"dual"},"available":"3-1","numCpus":1})",
                  "invalid", "available: ", 2},
        ErrorCase{"GroupSizeWithoutDistribution",
                  R"({"id":2,"op":"take","topology":{"synthetic":"dual"},"numCpus":2,"options":{"cpuGroupSize":2}})",
                  "invalid", "options.cpuGroupSize: only used with", 2},
        ErrorCase{"TakeOfMoreThanIsFree",
                  R"({"id":3,"op":"take","topology":{"synthetic":"dual"},"available":"0-3","numCpus":5})",
                  "unavailable",
                  "not enough cpus available to satisfy request: requested=5, available=4", 3},
        ErrorCase{"TopologyFileMissing",
                  R"({"id":4,"op":"take","topology":{"file":"missing.json"},"numCpus":1})",
                  "not-found", "topology: missing.json: cannot open", 4},
        ErrorCase{"TopologyBothSyntheticAndFile",
                  R"({"id":4,"op":"take","topology":{"file":"a.json","synthetic":"dual"},"numCpus":1})",
                  "invalid", "give exactly one of cpus, synthetic or file", 4},
        ErrorCase{"InlineTopologyWithABadCpu",
                  R"({"id":4,"op":"take","topology":{"cpus":[{"id":0,"core":0,"socket":0,"numa":"x"}]},"numCpus":1})",
                  "invalid", "topology: cpus[0].numa: expected an integer", 4},
        ErrorCase{"DistancesForAnUnknownNumaNode",
                  R"({"id":4,"op":"take","topology":{"synthetic":"dual","distances":{"5":{"5":10}}},"numCpus":1})",
                  "invalid", "distances.5: NUMA node 5 is not in numaNodes", 4},
        ErrorCase{"SmtAlignmentUnderFullPcpusOnly",
                  R"({"id":5,"op":"static-allocate","topology":{"synthetic":"dual"},"numReservedCpus":1,"policyOptions":{"full-pcpus-only":"true"},"pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"3","cpuLimit":"3"}]},"container":"c"})",
                  "smt-alignment",
                  "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2", 5},
        ErrorCase{"UnknownPolicyOption",
                  R"({"id":5,"op":"static-allocate","topology":{"synthetic":"dual"},"numReservedCpus":1,"policyOptions":{"fast":"true"},"pod":{"uid":"p","containers":[]},"container":"c"})",
                  "invalid", "policyOptions: ", 5},
        ErrorCase{"ContainerNotInPod",
                  R"({"id":5,"op":"static-allocate","topology":{"synthetic":"dual"},"numReservedCpus":1,"pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1"}]},"container":"d"})",
                  "not-found", "d", 5},
        ErrorCase{"QosContradictingTheCpuFields",
                  R"({"id":5,"op":"static-allocate","topology":{"synthetic":"dual"},"numReservedCpus":1,"pod":{"uid":"p","qos":"Guaranteed","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"2"}]},"container":"c"})",
                  "invalid", "pod.qos: Guaranteed contradicts", 5},
        ErrorCase{"BadCpuQuantity",
                  R"({"id":5,"op":"static-allocate","topology":{"synthetic":"dual"},"numReservedCpus":1,"pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"4Gi"}]},"container":"c"})",
                  "invalid", "pod.containers[0].cpuRequest: \"4Gi\" is not a CPU quantity", 5},
        ErrorCase{"NoReservation",
                  R"({"id":5,"op":"static-allocate","topology":{"synthetic":"dual"},"pod":{"uid":"p","containers":[]},"container":"c"})",
                  "invalid", "reserv", 5},
        ErrorCase{"MergeOnMoreNumaNodesThanAllowed",
                  R"({"id":6,"op":"merge","policy":"restricted","numaNodes":[0,1,2,3,4,5,6,7,8],"providers":[]})",
                  "invalid", "max-allowable-numa-nodes", 6},
        ErrorCase{"MergeWithADuplicatedHintNode",
                  R"({"id":6,"op":"merge","policy":"restricted","numaNodes":[0,1],"providers":[{"cpu":[{"numaNodes":[1,1]}]}]})",
                  "invalid", "providers[0].cpu[0].numaNodes: NUMA node 1 is listed twice", 6},
        ErrorCase{"MergeUnknownPolicy",
                  R"({"id":6,"op":"merge","policy":"strict","numaNodes":[0],"providers":[]})",
                  "invalid", "policy: \"strict\" is not none", 6},
        ErrorCase{"HuygensNoSingleNodeFits",
                  R"({"id":7,"op":"huygens","topology":{"synthetic":"dual"},"numCpus":13})",
                  "unavailable", "no single NUMA node has 13 free CPUs (largest: 12 on node 0)",
                  7},
        ErrorCase{"HuygensCapacityOutOfRange",
                  R"({"id":7,"op":"huygens","topology":{"synthetic":"dual"},"numCpus":1,"capacity":{"0":1.5}})",
                  "invalid", "capacity: factor 1.5 for NUMA node 0 is outside (0,1]", 7},
        ErrorCase{"HuygensUnknownBindPolicy",
                  R"({"id":7,"op":"huygens","topology":{"synthetic":"dual"},"numCpus":1,"bindPolicy":"loose"})",
                  "invalid", "bindPolicy: \"loose\" is not packed", 7}),
    [](const ::testing::TestParamInfo<ErrorCase>& param) { return param.param.name; });

json Answer(const std::string& request) {
  int calls = 0;
  AllocateBatch batch(FakeLoader{&calls});
  const AllocateBatch::Response r = batch.Handle(request);
  EXPECT_FALSE(r.error) << r.line;
  return json::parse(r.line);
}

// ---- memory-allocate, memory-hints --------------------------------------------------------

// Two NUMA nodes of 8 GiB with 512 pages of 2 MiB each (1 GiB) and no 1 GiB pages; 1 GiB of
// memory reserved on NUMA 0. kubelet's tables: memory allocatable 8 - 1 (reserved) - 1
// (hugepages) = 6 GiB on NUMA 0 and 8 - 1 = 7 GiB on NUMA 1; hugepages-2Mi 1 GiB on each.
constexpr char kMemoryMachine[] =
    R"("topology":{"cpus":[{"id":0,"core":0,"socket":0,"numa":0},{"id":1,"core":1,"socket":0,"numa":1}],)"
    R"("numaNodes":[{"id":0,"memoryBytes":8589934592,"hugepages":{"2097152":512,"1073741824":0}},)"
    R"({"id":1,"memoryBytes":8589934592,"hugepages":{"2097152":512,"1073741824":0}}]},)"
    R"("reservedMemory":{"0":{"memory":"1Gi"}})";

std::string MemoryRequest(const std::string& op, const std::string& rest) {
  return R"({"id":"m","op":")" + op + R"(",)" + kMemoryMachine + "," + rest + "}";
}

constexpr uint64_t kGi = uint64_t{1} << 30;

// The init container takes 2 GiB on NUMA 0 (its affinity); the app container's 1 GiB on the
// same NUMA node reuses it (kubelet's initContainersReusableMemory), so NUMA 0's reserved
// memory stays 2 GiB, and the init container's block shrinks to 1 GiB in the assignments.
TEST(AllocateBatch, MemoryAllocateReusesTheInitContainersMemoryOnTheSameNumaNode) {
  const json got = Answer(MemoryRequest("memory-allocate",
      R"("pod":{"uid":"p","initContainers":[{"name":"i","cpuRequest":"1","cpuLimit":"1","memoryLimit":"2Gi"}],)"
      R"("containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1","memoryLimit":"1Gi","hugepages-2Mi":"64Mi"}]},)"
      R"("containers":[{"name":"i","affinity":{"numaNodes":[0],"preferred":true}},{"name":"c","affinity":{"numaNodes":[0],"preferred":true}}])"));
  EXPECT_EQ(got["containers"][0]["blocks"],
            json::parse(R"([{"numaAffinity":[0],"type":"memory","size":2147483648}])"));
  EXPECT_EQ(got["containers"][1]["blocks"],
            json::parse(R"([{"numaAffinity":[0],"type":"hugepages-2Mi","size":67108864},)"
                        R"({"numaAffinity":[0],"type":"memory","size":1073741824}])"));
  const json& numa0 = got["machineState"]["0"];
  EXPECT_EQ(numa0["memoryMap"]["memory"]["reserved"], 2 * kGi);
  EXPECT_EQ(numa0["memoryMap"]["memory"]["free"], 4 * kGi);
  EXPECT_EQ(numa0["memoryMap"]["hugepages-2Mi"]["free"], kGi - 64 * (1 << 20));
  EXPECT_EQ(numa0["numberOfAssignments"], 3);
  EXPECT_EQ(got["assignments"]["p"]["i"][0]["size"], kGi);
}

// No affinity: kubelet's default hint, the narrowest preferred set whose free memory holds the
// request; 7 GiB fits NUMA 1 alone (NUMA 0 has 6 GiB allocatable).
TEST(AllocateBatch, MemoryAllocateWithoutAffinityTakesTheDefaultHint) {
  const json got = Answer(MemoryRequest("memory-allocate",
      R"("pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1","memoryLimit":"7Gi"}]},)"
      R"("containers":[{"name":"c"}],"withHints":true)"));
  EXPECT_EQ(got["containers"][0]["hints"],
            json::parse(R"({"memory":[{"numaNodes":[1],"preferred":true},{"numaNodes":[0,1],"preferred":false}]})"));
  EXPECT_EQ(got["containers"][0]["blocks"][0]["numaAffinity"], json::parse("[1]"));
  EXPECT_EQ(got["machineState"]["1"]["memoryMap"]["memory"]["free"], 0);
}

// A request no NUMA set holds is the container's error (kubelet's message), not the
// request's; the state is unchanged.
TEST(AllocateBatch, MemoryAllocateRefusesAContainerNoNumaSetHolds) {
  const json got = Answer(MemoryRequest("memory-allocate",
      R"("pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1","memoryLimit":"20Gi"}]},)"
      R"("containers":[{"name":"c"}])"));
  EXPECT_EQ(got["containers"][0]["kind"], "unavailable");
  EXPECT_EQ(got["containers"][0]["error"],
            "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough "
            "memory is available");
  EXPECT_EQ(got["assignments"], json::object());
  EXPECT_EQ(got["machineState"]["0"]["memoryMap"]["memory"]["reserved"], 0);
}

// Only Guaranteed pods get memory blocks.
TEST(AllocateBatch, MemoryAllocateGivesABurstablePodNoBlocks) {
  const json got = Answer(MemoryRequest("memory-allocate",
      R"("pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1","memoryRequest":"1Gi","memoryLimit":"2Gi"}]},)"
      R"("containers":[{"name":"c"}])"));
  EXPECT_EQ(got["containers"][0]["blocks"], json::array());
  EXPECT_EQ(got["assignments"], json::object());
}

// A pod without memory fields keeps the protocol's qos fake: 1 GiB per container.
TEST(AllocateBatch, MemoryAllocateFakesOneGibibyteWhenThePodGivesNoMemory) {
  const json got = Answer(MemoryRequest("memory-allocate",
      R"("pod":{"uid":"p","qos":"Guaranteed","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1"}]},)"
      R"("containers":[{"name":"c","affinity":{"numaNodes":[1],"preferred":true}}])"));
  EXPECT_EQ(got["containers"][0]["blocks"],
            json::parse(R"([{"numaAffinity":[1],"type":"memory","size":1073741824}])"));
}

// The state of one answer, passed back with `remove`, gives the memory back: the fresh state.
TEST(AllocateBatch, MemoryAllocateRemovesBeforeAllocating) {
  const std::string pod =
      R"("pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1","memoryLimit":"7Gi"}]},)";
  const json first = Answer(MemoryRequest("memory-allocate", pod + R"("containers":[{"name":"c"}])"));
  const json fresh = Answer(MemoryRequest("memory-allocate", pod + R"("containers":[])"));
  const json again = Answer(MemoryRequest(
      "memory-allocate", pod + R"("containers":[],"remove":[{"pod":"p","container":"c"}],)" +
                             R"("machineState":)" + first["machineState"].dump() +
                             R"(,"assignments":)" + first["assignments"].dump()));
  EXPECT_NE(first["machineState"], fresh["machineState"]);
  EXPECT_EQ(again["machineState"], fresh["machineState"]);
  EXPECT_EQ(again["assignments"], json::object());
}

// A NUMA node holding a single-NUMA allocation cannot join a multi-NUMA one (kubelet's rule):
// with 1 GiB on NUMA 1, a 10 GiB container has no hint, so the container gets kubelet's error.
TEST(AllocateBatch, MemoryAllocateKeepsSingleAndCrossNumaAllocationsApart) {
  const std::string pod =
      R"("pod":{"uid":"q","containers":[{"name":"big","cpuRequest":"1","cpuLimit":"1","memoryLimit":"10Gi"}]},)";
  const json small = Answer(MemoryRequest("memory-allocate",
      R"("pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1","memoryLimit":"1Gi"}]},)"
      R"("containers":[{"name":"c","affinity":{"numaNodes":[1],"preferred":true}}])"));
  const json got = Answer(MemoryRequest(
      "memory-allocate", pod + R"("containers":[{"name":"big"}],"machineState":)" +
                             small["machineState"].dump() + R"(,"assignments":)" +
                             small["assignments"].dump()));
  EXPECT_EQ(got["containers"][0]["error"],
            "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough "
            "memory is available");
}

// Hints per resource; the pod scope sums the app containers (2 + 5 GiB: NUMA 1 alone).
TEST(AllocateBatch, MemoryHintsForAContainerAndForThePod) {
  const std::string pod =
      R"("pod":{"uid":"p","containers":[{"name":"a","cpuRequest":"1","cpuLimit":"1","memoryLimit":"2Gi","hugepages-2Mi":"2Mi"},)"
      R"({"name":"b","cpuRequest":"1","cpuLimit":"1","memoryLimit":"5Gi"}]})";
  EXPECT_EQ(Answer(MemoryRequest("memory-hints", pod + R"(,"container":"a")"))["hints"],
            json::parse(R"({"hugepages-2Mi":[{"numaNodes":[0],"preferred":true},{"numaNodes":[1],"preferred":true},{"numaNodes":[0,1],"preferred":false}],)"
                        R"("memory":[{"numaNodes":[0],"preferred":true},{"numaNodes":[1],"preferred":true},{"numaNodes":[0,1],"preferred":false}]})"));
  EXPECT_EQ(Answer(MemoryRequest("memory-hints", pod + R"(,"scope":"pod")"))["hints"],
            json::parse(R"({"hugepages-2Mi":[{"numaNodes":[1],"preferred":true},{"numaNodes":[0,1],"preferred":false}],)"
                        R"("memory":[{"numaNodes":[1],"preferred":true},{"numaNodes":[0,1],"preferred":false}]})"));
}

// No NUMA set holds the request: kubelet's hints map is empty, which the topology manager
// takes as "no preference".
TEST(AllocateBatch, MemoryHintsAreEmptyWhenNothingFits) {
  EXPECT_EQ(Answer(MemoryRequest("memory-hints",
                R"("pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1","memoryLimit":"20Gi"}]},"container":"c")"))["hints"],
            json::object());
}

const char kPod[] =
    R"("pod":{"uid":"p","containers":[{"name":"c","cpuRequest":"1","cpuLimit":"1","memoryLimit":"1Gi"}]})";

INSTANTIATE_TEST_SUITE_P(
    Memory, BatchErrorTest,
    ::testing::Values(
        ErrorCase{"ContainerNotInThePod",
                  MemoryRequest("memory-allocate", std::string(kPod) + R"(,"containers":[{"name":"x"}])"),
                  "not-found", "containers[0]: pod \"p\" has no container \"x\"", "m"},
        ErrorCase{"NoMemoryReservedForTheSystem",
                  R"({"op":"memory-hints","topology":{"cpus":[{"id":0,"core":0,"socket":0,"numa":0}],"numaNodes":[{"id":0,"memoryBytes":8589934592}]},"reservedMemory":{},)" +
                      std::string(kPod) + R"(,"container":"c"})",
                  "invalid", "you should specify the system reserved memory"},
        ErrorCase{"AssignmentsWithoutMachineState",
                  MemoryRequest("memory-hints", std::string(kPod) +
                                                    R"(,"container":"c","assignments":{"p":{"c":[{"numaAffinity":[0],"type":"memory","size":1}]}})"),
                  "invalid", "assignments: memory assignments without a machineState", "m"},
        ErrorCase{"BlockOnANumaNodeTheStateLacks",
                  MemoryRequest("memory-hints", std::string(kPod) +
                                                    R"(,"container":"c","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{},"cells":[0]}},"assignments":{"p":{"c":[{"numaAffinity":[3],"type":"memory","size":1}]}})"),
                  "invalid", "NUMA node 3 is not in machineState", "m"},
        ErrorCase{"NumaIdAboveKubeletsBitmask",
                  MemoryRequest("memory-hints", std::string(kPod) +
                                                    R"(,"container":"c","machineState":{"64":{"numberOfAssignments":0,"memoryMap":{},"cells":[64]}})"),
                  "invalid", "machineState.64: NUMA node ids above 63", "m"},
        ErrorCase{"BadHugepagesQuantity",
                  MemoryRequest("memory-hints",
                                R"("pod":{"uid":"p","containers":[{"name":"c","hugepages-2Mi":"lots"}]},"container":"c")"),
                  "invalid", "pod.containers[0].hugepages-2Mi", "m"},
        ErrorCase{"UnknownContainerField",
                  MemoryRequest("memory-hints",
                                R"("pod":{"uid":"p","containers":[{"name":"c","memory":"1Gi"}]},"container":"c")"),
                  "invalid", "pod.containers[0].memory: unknown field", "m"},
        ErrorCase{"ContainerWithScopePod",
                  MemoryRequest("memory-hints", std::string(kPod) + R"(,"container":"c","scope":"pod")"),
                  "invalid", "container: not used with scope pod", "m"}),
    [](const ::testing::TestParamInfo<ErrorCase>& param) { return param.param.name; });

// Resize keeps every CPU the container has and adds on its NUMA node (dual: NUMA 0 = 0-5,
// 12-17).
TEST(AllocateBatch, ResizeGrowKeepsTheCpusAndAddsOnTheSameNumaNode) {
  const json got = Answer(
      R"({"id":"g","op":"resize","topology":{"synthetic":"dual"},"cpuset":"2-3,14-15","numCpus":6,"available":"0-1,4-11,12-13,16-23"})");
  const CpuSet cpus = CpuSet::Parse(got.at("cpuset").get<std::string>()).value();
  EXPECT_EQ(cpus.Size(), 6);
  EXPECT_TRUE((CpuSet{2, 3, 14, 15}).IsSubsetOf(cpus));
  EXPECT_TRUE(cpus.IsSubsetOf(testing::DualSocketHT().CpusInNumaNode(0))) << got;
  EXPECT_EQ(got.at("removed"), "");
  EXPECT_EQ(CpuSet::Parse(got.at("added").get<std::string>()).value().Size(), 2);
  EXPECT_EQ(got.at("numaNodes"), json::array({0}));
}

TEST(AllocateBatch, ResizeShrinkKeepsASubsetAndReturnsTheRest) {
  const json got = Answer(
      R"({"id":"s","op":"resize","topology":{"synthetic":"dual"},"cpuset":"0-3,12-15","numCpus":4})");
  const CpuSet cpus = CpuSet::Parse(got.at("cpuset").get<std::string>()).value();
  const CpuSet removed = CpuSet::Parse(got.at("removed").get<std::string>()).value();
  EXPECT_EQ(cpus.Size(), 4);
  EXPECT_EQ(cpus.Union(removed), (CpuSet{0, 1, 2, 3, 12, 13, 14, 15}));
  EXPECT_FALSE(cpus.Intersects(removed));
  EXPECT_EQ(got.at("added"), "");
}

// kubelet#132187: CPUs 0 and 6 reserved. By online CPUs (the default, kubelet's sizing) one
// NUMA node is the preferred size for 12 CPUs and restricted refuses; with the user pool as
// allocatableCpus (Huygens' sizing) two NUMA nodes are preferred and the 12 CPUs are found.
TEST(AllocateBatch, HuygensRestrictedSizesThePreferredSetByAllocatableCpus) {
  const std::string base =
      R"("op":"huygens","topology":{"synthetic":"dual"},"available":"1-5,7-23","numCpus":12,"topologyPolicy":"restricted","bindPolicy":"packed")";
  int calls = 0;
  AllocateBatch batch(FakeLoader{&calls});
  const AllocateBatch::Response kubelet_sizing = batch.Handle("{\"id\":1," + base + "}");
  EXPECT_TRUE(kubelet_sizing.error) << kubelet_sizing.line;
  EXPECT_THAT(kubelet_sizing.line, HasSubstr("restricted: no set of 1 NUMA nodes"));
  const json got = Answer("{\"id\":2," + base + R"(,"allocatableCpus":"1-5,7-23"})");
  EXPECT_EQ(got.at("numaNodes"), json::array({0, 1}));
  EXPECT_EQ(CpuSet::Parse(got.at("cpuset").get<std::string>()).value().Size(), 12);
}

TEST(AllocateBatch, LoadsAMachineOnceForManyRequests) {
  int calls = 0;
  AllocateBatch batch(FakeLoader{&calls});
  const std::string line =
      R"({"id":1,"op":"take","topology":{"synthetic":"dual"},"numCpus":2})";
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(batch.Handle(line).error);
  EXPECT_EQ(calls, 1);
  // Another machine is loaded; the first stays cached.
  EXPECT_FALSE(
      batch.Handle(R"({"id":2,"op":"take","topology":{"synthetic":"multi"},"numCpus":2})").error);
  EXPECT_FALSE(batch.Handle(line).error);
  EXPECT_EQ(calls, 2);
}

TEST(AllocateBatch, DropsTheLeastRecentlyUsedMachineWhenTheCacheIsFull) {
  int calls = 0;
  AllocateBatch batch(FakeLoader{&calls});
  // The same machine under distinct texts (a distance per request) is a distinct entry.
  const auto line = [](size_t i) {
    return R"({"id":1,"op":"take","topology":{"synthetic":"dual","distances":{"0":{"0":10,"1":)" +
           std::to_string(20 + i) + R"(},"1":{"0":20,"1":10}}},"numCpus":2})";
  };
  for (size_t i = 0; i <= AllocateBatch::kMaxCachedTopologies; ++i) batch.Handle(line(i));
  EXPECT_EQ(calls, static_cast<int>(AllocateBatch::kMaxCachedTopologies) + 1);
  batch.Handle(line(AllocateBatch::kMaxCachedTopologies));  // most recent: cached
  EXPECT_EQ(calls, static_cast<int>(AllocateBatch::kMaxCachedTopologies) + 1);
  batch.Handle(line(0));  // the oldest was dropped: loaded again
  EXPECT_EQ(calls, static_cast<int>(AllocateBatch::kMaxCachedTopologies) + 2);
}

TEST(AllocateBatch, EchoesAnyJsonIdAsItIs) {
  int calls = 0;
  AllocateBatch batch(FakeLoader{&calls});
  const json got = json::parse(
      batch.Handle(R"({"id":{"pod":"p","n":[1,2]},"op":"merge","policy":"none","numaNodes":[0],"providers":[]})")
          .line);
  EXPECT_EQ(got.at("id"), json::parse(R"({"pod":"p","n":[1,2]})"));
}

TEST(AllocateBatch, WritesTheIdFirst) {
  int calls = 0;
  AllocateBatch batch(FakeLoader{&calls});
  EXPECT_THAT(batch.Handle(R"({"op":"take","id":"z","topology":{"synthetic":"dual"},"numCpus":1})")
                  .line,
              ::testing::StartsWith(R"({"id":"z",)"));
}

}  // namespace
}  // namespace huygens

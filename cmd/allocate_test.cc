// `huygens allocate` end to end (HUYGENS_BIN): request lines on stdin, one response line per
// request in order with its id, a bad line answered with an error while the run goes on, and
// the exit status (0 all answered with results, 1 some errors).
//
// Machine: hwloc synthetic "package:2 numa:1 core:4 pu:2" with Linux numbering: 2 sockets and
// NUMA nodes, core c holds CPUs c and c+8; NUMA 0 = CPUs 0-3,8-11, NUMA 1 = CPUs 4-7,12-15.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cmd/run_huygens.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace {

using ::huygens::cmd::testing::RunHuygens;
using ::testing::HasSubstr;
using json = nlohmann::json;

const std::string kMachine = R"({"synthetic":"package:2 numa:1 core:4 pu:2"})";

// Writes `lines` to a file and runs `huygens allocate < file`.
::huygens::cmd::testing::RunResult Allocate(const std::string& name,
                                            const std::vector<std::string>& lines) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path);
  for (const std::string& line : lines) out << line << '\n';
  out.close();
  return RunHuygens("allocate < " + path);
}

std::vector<json> Responses(const std::string& out) {
  std::vector<json> responses;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) responses.push_back(json::parse(line));
  return responses;
}

TEST(HuygensAllocate, AnswersEveryLineInOrderAndGoesOnPastBadOnes) {
  const std::string dir = ::testing::TempDir();
  const std::string topology_file = dir + "allocate-machine.json";
  // A file topology: one socket, one NUMA node, 2 cores x 2 threads (siblings 0/2 and 1/3).
  std::ofstream(topology_file)
      << R"({"cpus":[{"id":0,"core":0,"socket":0,"numa":0},{"id":1,"core":1,"socket":0,"numa":0},)"
      << R"({"id":2,"core":0,"socket":0,"numa":0},{"id":3,"core":1,"socket":0,"numa":0}]})";
  const auto r = Allocate(
      "allocate-mixed.jsonl",
      {// Socket 0 (7 free) comes first; its first whole free core is core 1: CPUs 1 and 9.
       R"({"id":"first","op":"take","topology":)" + kMachine +
           R"(,"available":"1-15","numCpus":2})",
       "this is not JSON",
       R"({"id":"no-topology","op":"take","numCpus":1})",
       // Both NUMA nodes offer 4 cores; ties go to NUMA 0; one thread per core.
       R"({"id":3,"op":"huygens","topology":)" + kMachine +
           R"(,"numCpus":4,"bindPolicy":"spread-cores"})",
       "",  // blank lines are skipped
       // CPU 0 busy: kubelet fills core 0 (its free CPU 2) before a whole core.
       R"({"id":"file","op":"take","topology":{"file":")" + topology_file +
           R"("},"available":"1-3","numCpus":1})",
       R"({"id":"missing","op":"take","topology":{"file":"/nonexistent/machine.json"},"numCpus":1})"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const std::vector<json> got = Responses(r.out);
  ASSERT_EQ(got.size(), 6u) << r.out;
  EXPECT_EQ(got[0], json::parse(R"({"id":"first","cpuset":"1,9"})"));
  EXPECT_EQ(got[1].at("id"), nullptr);
  EXPECT_EQ(got[1].at("kind"), "invalid");
  EXPECT_EQ(got[2].at("id"), "no-topology");
  EXPECT_EQ(got[2].at("error"), "topology: missing");
  EXPECT_EQ(got[3], json::parse(R"({"id":3,"cpuset":"0-3","numaNodes":[0]})"));
  EXPECT_EQ(got[4], json::parse(R"({"id":"file","cpuset":"2"})"));
  EXPECT_EQ(got[5].at("id"), "missing");
  EXPECT_EQ(got[5].at("kind"), "not-found");
  EXPECT_THAT(got[5].at("error").get<std::string>(), HasSubstr("/nonexistent/machine.json"));
}

TEST(HuygensAllocate, ExitsZeroWhenEveryRequestSucceeds) {
  const auto r = Allocate(
      "allocate-ok.jsonl",
      {R"({"id":1,"op":"hints","topology":)" + kMachine + R"(,"numCpus":4})",
       R"({"id":2,"op":"merge","policy":"single-numa-node","numaNodes":[0,1],"providers":[{"cpu":[{"numaNodes":[1],"preferred":true}]}]})"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const std::vector<json> got = Responses(r.out);
  ASSERT_EQ(got.size(), 2u) << r.out;
  // 8 CPUs per NUMA node: each alone holds 4 (preferred); both together do too, not preferred.
  EXPECT_EQ(got[0], json::parse(R"({"id":1,"hints":[{"numaNodes":[0],"preferred":true},)"
                                R"({"numaNodes":[1],"preferred":true},)"
                                R"({"numaNodes":[0,1],"preferred":false}]})"));
  EXPECT_EQ(got[1],
            json::parse(R"({"id":2,"hint":{"numaNodes":[1],"preferred":true},"admit":true})"));
}

// kubelet's unit case from kubernetes PR 129079, as the issue replays it: re-admission of an
// assigned container under full-pcpus-only keeps its CPUs and leaves the state as it was.
TEST(HuygensAllocate, StaticAllocateKeepsAnAssignedContainersCpusUnderFullPcpusOnly) {
  const auto r = Allocate(
      "allocate-readmit.jsonl",
      {R"({"id":"readmit","op":"static-allocate","topology":{"synthetic":"package:1 core:6 pu:2"},)"
       R"("reservedCpus":"0","numReservedCpus":1,"policyOptions":{"full-pcpus-only":"true"},)"
       R"("defaultCpuSet":"0,5-6,11","assignments":{"podUID":{"appContainer-0":"2-3,8-9",)"
       R"("appContainer-1":"1,4,7,10"}},"pod":{"uid":"podUID","containers":[)"
       R"({"name":"appContainer-0","cpuRequest":"4","cpuLimit":"4"},)"
       R"({"name":"appContainer-1","cpuRequest":"4","cpuLimit":"4"}]},)"
       R"("container":"appContainer-0"})"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const std::vector<json> got = Responses(r.out);
  ASSERT_EQ(got.size(), 1u) << r.out;
  EXPECT_EQ(got[0], json::parse(R"({"id":"readmit","cpuset":"2-3,8-9","defaultCpuSet":"0,5-6,11",)"
                                R"("assignments":{"podUID":{"appContainer-0":"2-3,8-9",)"
                                R"("appContainer-1":"1,4,7,10"}}})"));
}

TEST(HuygensAllocate, AnswersNothingForEmptyInput) {
  const auto r = Allocate("allocate-empty.jsonl", {});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
}

TEST(HuygensAllocate, HelpListsEveryOp) {
  const auto r = RunHuygens("allocate --help", true);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* op : {"take", "static-allocate", "hints", "merge", "huygens"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string("  ") + op + " ")) << op;
  }
}

}  // namespace

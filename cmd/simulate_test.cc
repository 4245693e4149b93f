// `huygens simulate` and `huygens bench schedule` as a user runs them (HUYGENS_BIN).
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "cmd/run_huygens.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using Result = huygens::cmd::testing::RunResult;

Result RunHuygens(const std::string& args) {
  return huygens::cmd::testing::RunHuygens(args, /*merge_stderr=*/true);
}

std::string TempPath(const std::string& name) {
  return (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + name;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SimulateCommandTest, WithoutArgumentsItRunsTheBuiltInExample) {
  const std::string json_path = TempPath("simulate_example.json");
  const std::string html_path = TempPath("simulate_example.html");
  const Result r = RunHuygens("simulate --json " + json_path + " --html " + html_path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("huygens"));
  EXPECT_THAT(r.out, HasSubstr("nrt"));
  EXPECT_THAT(r.out, HasSubstr("baseline"));
  EXPECT_THAT(r.out, HasSubstr("on one NUMA node"));
  const nlohmann::json j = nlohmann::json::parse(ReadAll(json_path));
  EXPECT_EQ(j["nrtScoring"], "LeastAllocated");  // scheduler-plugins' default
  for (const char* run : {"huygens", "nrt", "baseline"}) {
    ASSERT_TRUE(j.contains(run)) << run;
    for (const char* key : {"scheduled", "unschedulable", "admissionRejected", "singleNumaRatio",
                            "meanNumaNodesPerPod", "sharedSiblingCores", "attemptsPerSecond"}) {
      EXPECT_TRUE(j[run].contains(key)) << run << "." << key;
    }
    EXPECT_GT(j[run]["scheduled"].get<int>(), 0);
  }
  EXPECT_EQ(j["cluster"]["nodes"], 38);
  const std::string html = ReadAll(html_path);
  EXPECT_THAT(html, HasSubstr("<svg"));
  EXPECT_THAT(html, HasSubstr("CPU maps"));
}

TEST(SimulateCommandTest, BadInputExitsWithTwoAndNamesFileLineAndField) {
  const std::string path = TempPath("bad_cluster.yaml");
  std::ofstream(path) << "nodeGroups:\n  - name: a\n    count: -1\n    topology: {preset: xeon-8480-2s}\n";
  const Result r = RunHuygens("simulate " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr(path + ":3:12: nodeGroups[0].count"));
  const Result missing = RunHuygens("simulate /nonexistent/cluster.yaml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.out, HasSubstr("/nonexistent/cluster.yaml: cannot open file: No such file"));
}

// A report that cannot be written says which option, which file and why (errno's text).
TEST(SimulateCommandTest, AnUnwritableReportNamesTheOptionTheFileAndTheReason) {
  const std::string cluster = TempPath("unwritable_cluster.yaml");
  const std::string workload = TempPath("unwritable_workload.yaml");
  std::ofstream(cluster) << "nodeGroups:\n  - {name: a, count: 1, topology: {preset: xeon-6230-2s-snc2}}\n";
  std::ofstream(workload) << "pods:\n  - name: p\n    count: 2\n    containers: [{name: a, "
                             "requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}]\n";
  const Result r = RunHuygens("simulate -q --no-baseline " + cluster + " " + workload +
                              " --json /nonexistent/dir/report.json");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--json: cannot write /nonexistent/dir/report.json: No such file"));
}

// Integer options out of range name the option and the bound in plain numbers, and a negative
// seed is refused rather than wrapped to a huge unsigned one, a huge one rather than clamped.
TEST(SimulateCommandTest, AnOutOfRangeNumberNamesTheOptionAndTheBound) {
  const Result negative = RunHuygens("simulate -q --cpu-map-nodes -1");
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_THAT(negative.out, HasSubstr("--cpu-map-nodes: -1 is below 0"));
  EXPECT_THAT(negative.out, Not(HasSubstr("000000")));
  const Result zero = RunHuygens("simulate -q --trace-time-compression 0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_THAT(zero.out, HasSubstr("--trace-time-compression: 0 is below 1"));
  const Result seed = RunHuygens("simulate -q --seed -3");
  EXPECT_EQ(seed.exit_code, 2);
  EXPECT_THAT(seed.out, HasSubstr("--seed: -3 is below 0"));
  const Result huge = RunHuygens("simulate -q --seed 99999999999999999999");  // above 2^64
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_THAT(huge.out, HasSubstr("--seed: 99999999999999999999 is not a whole number from 0 to "
                                  "9223372036854775807"));
  const Result words = RunHuygens("simulate -q --seed 12abc");
  EXPECT_EQ(words.exit_code, 2);
  EXPECT_THAT(words.out, HasSubstr("--seed: 12abc is not a whole number"));
}

// An option that would change nothing in this run is a usage error naming it, not ignored.
TEST(SimulateCommandTest, AnOptionThatDoesNotApplyIsRefusedByName) {
  const std::string trace = TempPath("refused_trace.csv");
  std::ofstream(trace) << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                          "creation_time,deletion_time,scheduled_time\n";
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--trace-max-pods 5", "--trace-max-pods applies to a .csv pod trace"},
      {"--trace-round-up", "--trace-round-up applies to a .csv pod trace"},
      {"--nodes-policy restricted", "--nodes-policy requires --nodes-csv"},
      {"--nodes-system-cpus 4", "--nodes-system-cpus requires --nodes-csv"},
      {"--no-baseline --nrt-scoring MostAllocated", "--no-baseline excludes --nrt-scoring"},
      {"--no-baseline --max-admission-retries 1", "--no-baseline excludes --max-admission-retries"},
      {"--seed 3 " + trace, "--seed seeds the workload generator; a .csv trace has none"},
  };
  for (const auto& c : cases) {
    const Result r = RunHuygens("simulate -q " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_THAT(r.out, HasSubstr(c.message)) << c.args;
  }
}

TEST(SimulateCommandTest, NrtScoringChoosesTheNrtPeersStrategy) {
  const std::string cluster = TempPath("nrt_cluster.yaml");
  const std::string workload = TempPath("nrt_workload.yaml");
  const std::string json_path = TempPath("nrt_report.json");
  std::ofstream(cluster)
      << "nodeGroups:\n  - {name: a, count: 2, topology: {preset: xeon-6230-2s-snc2}}\n";
  std::ofstream(workload) << "pods:\n  - name: p\n    count: 4\n    containers: [{name: a, "
                             "requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}]\n";
  const Result r = RunHuygens("simulate " + cluster + " " + workload +
                              " --nrt-scoring LeastNUMANodes -q --json " + json_path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(ReadAll(json_path));
  EXPECT_EQ(j["nrtScoring"], "LeastNUMANodes");
  EXPECT_EQ(j["nrt"]["scheduled"], 4);
  const Result bad = RunHuygens("simulate " + cluster + " " + workload + " --nrt-scoring Fastest");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, HasSubstr("--nrt-scoring: Fastest"));
}

TEST(SimulateCommandTest, RebalanceOptionsAddTheColumnAndOverrideTheSpec) {
  const std::string cluster = TempPath("rebalance_cluster.yaml");
  const std::string workload = TempPath("rebalance_workload.yaml");
  const std::string json_path = TempPath("rebalance_report.json");
  std::ofstream(cluster)
      << "nodeGroups:\n  - {name: a, count: 1, topology: {preset: xeon-6230-2s-snc2}}\n";
  std::ofstream(workload) << "rebalance: {interval: 20s}\npods:\n  - name: p\n    count: 4\n"
                             "    affinityGroup: g\n    containers: [{name: a, "
                             "requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}]\n";
  // The spec's block turns the column on; the options override its values.
  Result r = RunHuygens("simulate " + cluster + " " + workload + " --no-baseline --json " +
                        json_path + " --rebalance-max-moves 5 --rebalance-balance");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("huygens+rebalance"));
  nlohmann::json j = nlohmann::json::parse(ReadAll(json_path));
  EXPECT_EQ(j["rebalance"]["intervalSeconds"], 20);
  EXPECT_EQ(j["rebalance"]["maxMoves"], 5);
  EXPECT_EQ(j["rebalance"]["balance"], true);
  EXPECT_EQ(j["huygensRebalance"]["scheduled"], 4);
  // --rebalance alone, on a workload without the block: huygens-scheduler's defaults.
  const std::string plain = TempPath("rebalance_plain_workload.yaml");
  std::ofstream(plain) << "pods:\n  - name: p\n    containers: [{name: a, "
                          "requests: {cpu: 4, memory: 1Gi}, limits: {cpu: 4, memory: 1Gi}}]\n";
  r = RunHuygens("simulate " + cluster + " " + plain + " --no-baseline -q --rebalance --json " +
                 json_path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  j = nlohmann::json::parse(ReadAll(json_path));
  EXPECT_EQ(j["rebalance"]["intervalSeconds"], 30);
  EXPECT_EQ(j["rebalance"]["maxMoves"], 1);
  const Result bad = RunHuygens("simulate " + cluster + " --rebalance-interval 0s");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, HasSubstr("--rebalance-interval: 0s is not a positive duration"));
}

TEST(SimulateCommandTest, HelpDescribesTheCommand) {
  const Result r = RunHuygens("simulate --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--nodes-csv"));
  EXPECT_THAT(r.out, HasSubstr("built-in example"));
}

TEST(BenchCommandTest, ScheduleBenchmarkPrintsOneJsonLine) {
  const Result r = RunHuygens("bench schedule --nodes 50 --pods 500");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key : {"attemptsPerSecond", "p50Micros", "p99Micros", "peakRssBytes"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["pods"], 500);
  EXPECT_GT(j["attemptsPerSecond"].get<double>(), 0);
  EXPECT_EQ(j["clock"], "wall");
}

TEST(BenchCommandTest, ThreadCpuClockIsReportedAndUnknownClocksAreRejected) {
  const Result r = RunHuygens("bench schedule --nodes 50 --pods 500 --clock thread-cpu");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["clock"], "thread-cpu");
  EXPECT_GT(j["attemptsPerSecond"].get<double>(), 0);
  EXPECT_GT(j["runCpuSeconds"].get<double>(), 0);
  EXPECT_NE(RunHuygens("bench schedule --nodes 50 --pods 500 --clock sundial").exit_code, 0);
}

}  // namespace

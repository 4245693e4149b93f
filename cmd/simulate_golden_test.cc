// Golden reports of `huygens simulate`: a regression reference for changes that must not change
// what the simulator decides (issue 16). Each case runs the built binary (HUYGENS_BIN) as a user
// would and compares its text table (stdout) and its JSON report (--json, with timelines and CPU
// maps) with the files in sim/testdata/golden/, which the code of the time generated; they are
// not hand-written results.
//
// What is compared: every field, except the ones that measure this machine's wall clock
// (`attemptsPerSecond` and `latencyMicros.*` in JSON, the rows "latency p50/p99 (us)" and
// "scheduling attempts per second" in the table), which are zeroed. The table's column widths follow those
// values, so runs of spaces in the table are folded to one before comparing.
//
// Regenerate after an intended behaviour change, then review the diff:
//   HUYGENS_UPDATE_GOLDEN=1 build/cmd/cmd_simulate_golden_test
//   git diff sim/testdata/golden/
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cmd/run_huygens.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace {

const std::string kGoldenDir = std::string(HUYGENS_SOURCE_DIR) + "/sim/testdata/golden/";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The table with the wall-clock rows masked and runs of spaces folded.
std::string NormalizeTable(const std::string& table) {
  std::istringstream in(table);
  std::string out, line;
  while (std::getline(in, line)) {
    for (const char* timed : {"latency p50/p99 (us)", "scheduling attempts per second"}) {
      if (StartsWith(line, timed)) line = std::string(timed) + " (wall clock, masked)";
    }
    std::string folded;
    for (char c : line) {
      if (c == ' ' && !folded.empty() && folded.back() == ' ') continue;
      folded += c;
    }
    while (!folded.empty() && folded.back() == ' ') folded.pop_back();
    out += folded + "\n";
  }
  return out;
}

// The JSON report with the wall-clock fields zeroed, one key per line.
std::string NormalizeJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  for (const char* run : {"huygens", "huygensRebalance", "nrt", "baseline"}) {
    if (!j.contains(run) || !j[run].is_object()) continue;
    j[run]["attemptsPerSecond"] = 0;
    for (const char* p : {"p50", "p90", "p99", "max"}) j[run]["latencyMicros"][p] = 0;
  }
  return j.dump(1) + "\n";
}

// `text` with every occurrence of `from` removed.
std::string Without(std::string text, const std::string& from) {
  if (from.empty()) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.erase(at, from.size());
  }
  return text;
}

// Runs `huygens simulate <args> --json <tmp>` and compares (or, with HUYGENS_UPDATE_GOLDEN
// set, rewrites) <name>.txt and <name>.json. `strip` (a folder prefix of the input paths) is
// removed from both reports, so they name the inputs as the README's command does, wherever
// the checkout lies.
void CheckGolden(const std::string& name, const std::string& strip, const std::string& args) {
  const std::string json_path =
      (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "golden_" +
      name + ".json";
  const auto r = huygens::cmd::testing::RunHuygens(
      "simulate " + args + " --json " + json_path, /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string table = NormalizeTable(Without(r.out, strip));
  const std::string json = NormalizeJson(Without(ReadAll(json_path), strip));
  const std::string table_path = kGoldenDir + name + ".txt";
  const std::string golden_json_path = kGoldenDir + name + ".json";
  if (std::getenv("HUYGENS_UPDATE_GOLDEN") != nullptr) {
    WriteAll(table_path, table);
    WriteAll(golden_json_path, json);
    GTEST_SKIP() << "rewrote " << table_path << " and " << golden_json_path;
  }
  EXPECT_EQ(table, ReadAll(table_path))
      << "the text report differs from " << table_path
      << " (an intended change: see this file's comment to regenerate)";
  EXPECT_EQ(json, ReadAll(golden_json_path))
      << "the JSON report differs from " << golden_json_path
      << " (an intended change: see this file's comment to regenerate)";
}

TEST(SimulateGoldenTest, TheBuiltInExampleGivesTheGoldenReport) {
  CheckGolden("example", "", "");
}

TEST(SimulateGoldenTest, TheOpenbTraceOnTheOpenbNodeListGivesTheGoldenReport) {
  const std::string traces = std::string(HUYGENS_FIXTURES) + "/traces/";
  CheckGolden("openb", traces,
              "--nodes-csv " + traces + "openb_node_list_all_node.csv " + traces +
                  "openb_pod_list_default.csv");
}

TEST(SimulateGoldenTest, TheRebalancerExampleGivesTheGoldenReport) {
  const std::string source = std::string(HUYGENS_SOURCE_DIR) + "/";
  CheckGolden("rebalance", source,
              source + "sim/testdata/rebalance/cluster.yaml " + source +
                  "sim/testdata/rebalance/workload.yaml");
}

}  // namespace

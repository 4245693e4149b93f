#include "node/checkpoint.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  std::string templ = (std::filesystem::temp_directory_path() / "huygens-ckpt-XXXXXX").string();
  return std::string(::mkdtemp(templ.data()));
}

NodeState Node() {
  auto topo = std::make_shared<const CpuTopology>(testing::DualSocketHT());
  NodeConfig config;
  config.name = "n1";
  config.system_cpus = CpuSet{0, 12};
  auto s = NodeState::Create(topo, config);
  EXPECT_TRUE(s.ok());
  return *std::move(s);
}

PodSpec Pod(std::string uid, int cpus, bool with_init = false) {
  PodSpec p;
  p.uid = uid;
  p.namespace_name = "ns";
  p.name = "pod-" + uid;
  p.bind_policy = BindPolicy::kFullCores;
  ContainerSpec c{.name = "app", .cpu_request_milli = cpus * 1000, .cpu_limit_milli = cpus * 1000,
                  .memory_request_bytes = 1 << 20, .memory_limit_bytes = 1 << 20};
  p.containers.push_back(c);
  if (with_init) {
    c.name = "init";
    c.init = true;
    p.init_containers.push_back(c);
  }
  return p;
}

// Two distinct states, A and B.
NodeCheckpoint StateA() {
  NodeState s = Node();
  EXPECT_TRUE(s.AllocatePod(Pod("a", 4, true)).ok());
  return CheckpointOf(s);
}
NodeCheckpoint StateB() {
  NodeState s = Node();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(s.AllocatePod(Pod("b" + std::to_string(i), 2)).ok());
  return CheckpointOf(s);
}

TEST(Checkpoint, RoundTripsAndRebuildsTheSameNode) {
  NodeState s = Node();
  ASSERT_TRUE(s.AllocatePod(Pod("a", 4, true)).ok());
  ASSERT_TRUE(s.AllocatePod(Pod("b", 2)).ok());
  const NodeCheckpoint cp = CheckpointOf(s);
  auto back = DecodeCheckpoint(EncodeCheckpoint(cp));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, cp);
  NodeState t = Node();
  NodeState::RebuildReport r = t.Rebuild(back->pods);
  EXPECT_EQ(r.rebuilt, 2);
  EXPECT_EQ(t.Pods(), s.Pods());
  EXPECT_EQ(t.Counters(), s.Counters());
}

TEST(Checkpoint, DetectsCorruptionAndNamesTheField) {
  const std::string good = EncodeCheckpoint(StateA());
  struct Case {
    const char* name;
    std::string bytes;
    const char* error;
  };
  std::string edited = good;
  edited.replace(edited.find("\"node\":\"n1\""), 11, "\"node\":\"n9\"");
  const std::vector<Case> cases = {
      {"truncated", good.substr(0, good.size() / 2), "checkpoint: [json.exception.parse_error"},
      {"not an object", "[]", "checkpoint: expected an object, got array"},
      {"an edited value", edited, "checksum: file says"},
      {"no checksum", R"({"kind":"huygens-node-state","version":1})", "checksum: missing"},
  };
  for (const Case& c : cases) {
    auto cp = DecodeCheckpoint(c.bytes);
    ASSERT_FALSE(cp.ok()) << c.name;
    EXPECT_THAT(std::string(cp.status().message()), HasSubstr(c.error)) << c.name;
  }
}

// `bytes` edited by `edit` and sealed again with the checksum docs/checkpoint.md describes
// (FNV-1a 64 over the compact payload), as a hand-edited but well-sealed file would be.
std::string EditedAndSealed(const std::string& bytes,
                            const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json doc = nlohmann::json::parse(bytes);
  doc.erase("checksum");
  edit(doc);
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : doc.dump()) h = (h ^ c) * 1099511628211ull;
  doc["checksum"] = fmt::format("fnv1a64:{:016x}", h);
  return doc.dump();
}

TEST(Checkpoint, ErrorsNameTheFieldPathLikeEveryJsonReader) {
  const std::string good = EncodeCheckpoint(StateA());
  auto cp = DecodeCheckpoint(EditedAndSealed(good, [](nlohmann::json& doc) {
    doc["pods"][0]["spec"]["containers"][0]["memoryLimitBytes"] = "1Mi";
  }));
  ASSERT_FALSE(cp.ok());
  EXPECT_EQ(cp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Msg(cp.status()),
            "checkpoint: pods[0].spec.containers[0].memoryLimitBytes: expected an integer, got "
            "string");
  // The allocation is read in place, under the same path.
  cp = DecodeCheckpoint(EditedAndSealed(good, [](nlohmann::json& doc) {
    doc["pods"][0]["allocation"]["containers"][0]["cpuset"] = "4-";
  }));
  ASSERT_FALSE(cp.ok());
  EXPECT_THAT(std::string(cp.status().message()),
              ::testing::StartsWith("checkpoint: pods[0].allocation.containers[0].cpuset: "));
}

TEST(CheckpointFile, MovesACorruptFileAsideWithTheInjectedTime) {
  const std::string dir = TempDir();
  const std::string path = dir + "/state";
  { std::ofstream(path) << "{not json"; }
  CheckpointHooks hooks;
  hooks.now = [] { return int64_t{1700000000}; };
  CheckpointFile file(path, hooks);
  auto r = file.Load();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->state, CheckpointFile::LoadResult::State::kCorrupt);
  EXPECT_EQ(r->moved_to, path + ".corrupt-1700000000");
  EXPECT_TRUE(std::filesystem::exists(r->moved_to));
  EXPECT_FALSE(std::filesystem::exists(path));
  // A second corrupt file at the same second gets a counter.
  { std::ofstream(path) << "garbage"; }
  r = file.Load();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->moved_to, path + ".corrupt-1700000000-1");
  // Now nothing is there.
  r = file.Load();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state, CheckpointFile::LoadResult::State::kMissing);
  std::filesystem::remove_all(dir);
}

// A writer child alternates between states A and B, pausing at random between the write
// steps; the parent SIGKILLs it at a random moment. Whatever the moment, the file on disk is
// exactly A or exactly B.
TEST(CheckpointFile, AKilledWriterLeavesTheOldOrTheNewStateNeverAMix) {
  const NodeCheckpoint a = StateA();
  const NodeCheckpoint b = StateB();
  const std::string dir = TempDir();
  const std::string path = dir + "/state";
  ASSERT_TRUE(CheckpointFile(path).Write(a).ok());
  std::mt19937 rng(7);
  int saw_a = 0, saw_b = 0;
  for (int round = 0; round < 40; ++round) {
    const unsigned seed = static_cast<unsigned>(rng());
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      std::mt19937 crng(seed);
      CheckpointHooks hooks;
      hooks.after_step = [&crng](const char*) {
        std::this_thread::sleep_for(std::chrono::microseconds(crng() % 400));
      };
      CheckpointFile w(path, hooks);
      for (int i = 0;; ++i) {
        if (!w.Write(i % 2 == 0 ? b : a).ok()) ::_exit(3);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 3000));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped on its own";
    CheckpointHooks hooks;
    hooks.now = [] { return int64_t{1}; };
    auto r = CheckpointFile(path, hooks).Load();
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->state, CheckpointFile::LoadResult::State::kLoaded)
        << "round " << round << ": " << r->error;
    if (r->checkpoint == a) {
      ++saw_a;
    } else {
      ASSERT_EQ(r->checkpoint, b) << "round " << round;
      ++saw_b;
    }
  }
  EXPECT_EQ(saw_a + saw_b, 40);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace huygens

// The agent's checkpoint: a node's pods and their allocations, on disk across restarts.
//
// File format (JSON, one object; keys sorted):
//   {"checksum":"fnv1a64:<16 hex digits>","kind":"huygens-node-state","node":"n1",
//    "pods":[{"allocation":{<the huygens.io/allocation value>},"spec":{<PodSpec>},"uid":"..."}],
//    "version":1}
// The checksum is FNV-1a 64-bit over the canonical payload: the same object without the
// "checksum" key, serialised compactly with keys sorted (nlohmann::json::dump()). See
// docs/checkpoint.md.
//
// Writing is atomic: the bytes go to "<path>.tmp", which is fsync'ed, renamed over <path>, and
// the directory is fsync'ed; a crash at any point leaves either the old or the new file.
// Reading: a file that does not parse, fails the checksum or has an unknown version is renamed
// to "<path>.corrupt-<unix seconds>[-<n>]" and reported; the caller rebuilds from the cluster.
//
// Time is injected (CheckpointHooks::now), never read here directly.
// Thread-safety: a CheckpointFile is not thread-safe; one writer per path.
#ifndef HUYGENS_NODE_CHECKPOINT_H_
#define HUYGENS_NODE_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "alloc/pod.h"
#include "node/allocation.h"
#include "node/node_state.h"

namespace huygens {

inline constexpr int kCheckpointVersion = 1;

struct NodeCheckpoint {
  std::string node;
  std::vector<std::pair<PodSpec, PodAllocation>> pods;  // ascending pod uid
  friend bool operator==(const NodeCheckpoint&, const NodeCheckpoint&) = default;
};

// The checkpoint content of a node: every pod with its spec and allocation.
NodeCheckpoint CheckpointOf(const NodeState& node);

// The file bytes (with checksum) / the content of file bytes. Decode errors are
// InvalidArgument "checkpoint: <field path>: <problem>" as base/json_fields.h writes them (e.g.
// `checkpoint: pods[0].spec.containers[1].cpuLimitMilli: expected an integer, got string`,
// `checkpoint: pods[0].allocation.containers[0].cpuset: ...`), "checkpoint: <parser message>"
// for bytes that are not JSON; DataLoss "checkpoint: checksum: ..." for a checksum mismatch.
// Unknown keys are ignored.
std::string EncodeCheckpoint(const NodeCheckpoint& checkpoint);
absl::StatusOr<NodeCheckpoint> DecodeCheckpoint(std::string_view bytes);

struct CheckpointHooks {
  // Seconds since the epoch, for naming a corrupt file. Default: returns 0.
  std::function<int64_t()> now = [] { return int64_t{0}; };
  // Called after each write step ("tmp-written", "tmp-synced", "renamed", "dir-synced"); tests
  // use it to crash a writer between steps. Default: nothing.
  std::function<void(const char* step)> after_step = [](const char*) {};
};

class CheckpointFile {
 public:
  explicit CheckpointFile(std::string path, CheckpointHooks hooks = {})
      : path_(std::move(path)), hooks_(std::move(hooks)) {}

  // Writes atomically (see the file comment). Errors: Internal naming the path and the failed
  // system call, with errno's text.
  absl::Status Write(const NodeCheckpoint& checkpoint) const;

  struct LoadResult {
    enum class State { kMissing, kLoaded, kCorrupt } state = State::kMissing;
    NodeCheckpoint checkpoint;  // kLoaded
    std::string moved_to;       // kCorrupt: where the bad file now is
    std::string error;          // kCorrupt: why it was rejected
  };
  // Reads the file; a corrupt one is moved aside (see the file comment). Errors: Internal when
  // the file exists but cannot be read or moved.
  absl::StatusOr<LoadResult> Load() const;

  const std::string& Path() const { return path_; }

 private:
  std::string path_;
  CheckpointHooks hooks_;
};

}  // namespace huygens

#endif  // HUYGENS_NODE_CHECKPOINT_H_

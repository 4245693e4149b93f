#include "agent/kubelet_memory.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "agent/read_file.h"
#include "base/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace huygens::agent {
namespace {

// kubelet writes "Static"; its own unit tests write "static".
bool IsStaticPolicyName(std::string_view name) {
  constexpr std::string_view kStatic = "static";
  return name.size() == kStatic.size() &&
         std::equal(name.begin(), name.end(), kStatic.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

}  // namespace

absl::StatusOr<NumaMemory> UsedFromKubeletMemory(const KubeletMemoryCheckpoint& cp,
                                                 const CpuTopology& t, const NumaMemory& reserved,
                                                 std::vector<std::string>& left_out) {
  HUYGENS_ASSIGN_OR_RETURN(const auto figures, NrtMemory(t, reserved, {}));
  NumaMemory used;
  for (const auto& [numa, state] : cp.machine_state) {
    for (const auto& [resource, table] : state.memory_map) {
      if (std::optional<std::string> why = UnknownNumaMemory(t, numa, resource)) {
        left_out.push_back(fmt::format("machineState[\"{}\"].memoryMap[{:?}]: {}", numa,
                                       resource, *why));
        continue;
      }
      const uint64_t allocatable = figures.at(numa).at(resource).allocatable;
      const uint64_t in_use = allocatable > table.free ? allocatable - table.free : 0;
      if (in_use > 0) used[numa][resource] = in_use;
    }
  }
  return used;
}

NumaMemory FitReservedMemory(const NumaMemory& reserved, const CpuTopology& t,
                             std::vector<std::string>& left_out) {
  NumaMemory fit;
  for (const auto& [numa, resources] : reserved) {
    for (const auto& [resource, bytes] : resources) {
      if (std::optional<std::string> why = UnknownNumaMemory(t, numa, resource)) {
        left_out.push_back(fmt::format("reservedMemory: {}; {} reservation of {} bytes ignored",
                                       *why, resource, bytes));
      } else {
        fit[numa][resource] = bytes;
      }
    }
  }
  return fit;
}

KubeletMemoryReader::KubeletMemoryReader(KubeletMemoryOptions options)
    : options_(std::move(options)) {}

KubeletMemoryUse KubeletMemoryReader::ReadNow() const {
  const std::string& path = options_.checkpoint_path;
  if (options_.policy != KubeletMemoryPolicy::kStatic) {
    return {.reason = fmt::format("kubelet's memoryManagerPolicy is {}: no per-NUMA memory in "
                                  "use is known; available = allocatable",
                                  ToString(options_.policy))};
  }
  const auto unused = [&](std::string why) {
    return KubeletMemoryUse{
        .reason = fmt::format("{}; available = allocatable", std::move(why))};
  };
  if (path.empty()) return unused("no kubeletMemoryCheckpoint configured");
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok()) return unused(Msg(text.status()));
  absl::StatusOr<KubeletMemoryCheckpoint> cp = ParseKubeletMemoryCheckpoint(*text);
  if (!cp.ok()) return unused(fmt::format("{}: {}", path, Msg(cp.status())));
  if (!cp->checksum_ok) {
    return unused(fmt::format("{}: checksum mismatch (stored {}, computed {}); kubelet would "
                              "reject the file, so it is ignored",
                              path, cp->checksum, cp->computed_checksum));
  }
  if (!IsStaticPolicyName(cp->policy_name)) {
    return unused(fmt::format("{}: written by policy {:?}, but kubelet's config says Static "
                              "(a stale file)",
                              path, cp->policy_name));
  }
  std::vector<std::string> left_out;
  absl::StatusOr<NumaMemory> used =
      UsedFromKubeletMemory(*cp, *options_.topology, options_.reserved, left_out);
  if (!used.ok()) return unused(fmt::format("{}: {}", path, Msg(used.status())));
  KubeletMemoryUse out{.used = *std::move(used), .from_checkpoint = true};
  for (const std::string& line : left_out) {
    out.reason += fmt::format("{}{}: {}; left out", out.reason.empty() ? "" : "; ", path, line);
  }
  return out;
}

KubeletMemoryUse KubeletMemoryReader::Read() {
  KubeletMemoryUse use = ReadNow();
  if (use.reason != last_reason_) {
    if (use.reason.empty()) {
      spdlog::info("memory in use per NUMA node: from {}", options_.checkpoint_path);
    } else if (use.from_checkpoint || options_.policy == KubeletMemoryPolicy::kStatic) {
      spdlog::warn("memory in use per NUMA node: {}", use.reason);
    } else {
      spdlog::info("memory in use per NUMA node: {}", use.reason);
    }
    last_reason_ = use.reason;
  }
  return use;
}

}  // namespace huygens::agent

// VerboseInfo: what Huygens reads from a CRI ContainerStatus verbose `info` value.
//
// containerd answers ContainerStatus(verbose=true) with info["info"] = a JSON object holding,
// among others, "pid" (the container's main process, 0 when it does not run) and "runtimeSpec"
// (the OCI runtime spec the task runs with: linux.cgroupsPath and linux.resources). CRI-O's
// verbose info has the same "pid" and "runtimeSpec" keys. This is external input: the parser
// accepts any JSON, ignores what it does not know and never throws.
//
// Thread-safety: a plain value; ParseVerboseInfo is a pure function.
#ifndef HUYGENS_CRI_VERBOSE_INFO_H_
#define HUYGENS_CRI_VERBOSE_INFO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace huygens::cri {

/// CPU and memory limits of the OCI spec's linux.resources (runtime-spec config-linux.md);
/// an absent field is nullopt / "".
struct SpecResources {
  std::optional<int64_t> cpu_shares;    ///< cpu.shares
  std::optional<int64_t> cpu_quota;     ///< cpu.quota, µs per period
  std::optional<int64_t> cpu_period;    ///< cpu.period, µs
  std::string cpuset_cpus;              ///< cpu.cpus
  std::string cpuset_mems;              ///< cpu.mems
  std::optional<int64_t> memory_limit;  ///< memory.limit, bytes
  std::optional<int64_t> memory_swap;   ///< memory.swap, bytes
};

struct VerboseInfo {
  std::optional<int64_t> pid;  ///< "pid" when > 0
  std::string cgroups_path;    ///< runtimeSpec.linux.cgroupsPath; "" when absent
  SpecResources resources;     ///< runtimeSpec.linux.resources
};

/// Parses the JSON text of a verbose info["info"] value. Fields of the wrong JSON type are
/// treated as absent (a runtime's odd output must not stop the agent). Errors: InvalidArgument
/// when the text is not JSON or not a JSON object (the message gives the parser's byte offset).
absl::StatusOr<VerboseInfo> ParseVerboseInfo(std::string_view json_text);

}  // namespace huygens::cri

#endif  // HUYGENS_CRI_VERBOSE_INFO_H_

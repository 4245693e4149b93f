// FallbackRuntime: a ContainerRuntime that asks a primary runtime (the CRI client) and, when
// that fails in a way the secondary (cgroupfs) can fix, does the same through the secondary.
//
// The fallback rule (ShouldFallBack): the primary's error is one of
//   - kUnavailable, kDeadlineExceeded: the runtime is down or hangs; cgroupfs still works;
//   - kFailedPrecondition, kUnknown: the runtime (runc) hit a kernel refusal or failed in a
//     way we cannot tell apart; CgroupfsWriter's parent-first / child-first write order fixes
//     the common case (a v1 parent cpuset that lacks the new CPUs);
//   - kUnimplemented: the runtime does not offer the call.
// Not for kNotFound (no such container: there is nothing to fix), kInvalidArgument (our input is
// wrong either way) or kPermissionDenied. ListContainers never falls back: cgroupfs cannot list
// containers with their pods. When both fail, the error has the primary's code and both messages.
//
// Which runtime did the work is reported for metrics and logs: last_used() after each
// UpdateCpuset / ReadCpuset, and counters(); each fallback is also logged at spdlog debug level,
// naming the pod (namespace/name), the container, the primary's error and the secondary's result.
//
// Thread-safety: one thread at a time, like the runtimes it wraps.
#ifndef HUYGENS_CRI_FALLBACK_RUNTIME_H_
#define HUYGENS_CRI_FALLBACK_RUNTIME_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "cri/runtime.h"

namespace huygens::cri {

/// The fallback rule of the file comment.
bool ShouldFallBack(const absl::Status& primary_error);

class FallbackRuntime final : public ContainerRuntime {
 public:
  /// Counts of UpdateCpuset and ReadCpuset calls by outcome.
  struct Counters {
    int64_t primary_ok = 0;       ///< done by the primary
    int64_t secondary_ok = 0;     ///< primary failed, done by the secondary
    int64_t both_failed = 0;      ///< primary failed, secondary failed too
    int64_t primary_failed = 0;   ///< primary failed with an error not worth a fallback
  };

  /// REQUIRES: both non-null.
  FallbackRuntime(std::unique_ptr<ContainerRuntime> primary,
                  std::unique_ptr<ContainerRuntime> secondary);

  /// "<primary>+<secondary>", e.g. "cri+cgroupfs".
  std::string Name() const override;
  absl::StatusOr<std::vector<ContainerInfo>> ListContainers() override;
  absl::Status UpdateCpuset(const ContainerInfo& container, const CpuSet& cpus,
                            const CpuSet& mems) override;
  absl::StatusOr<CpusetResources> ReadCpuset(const ContainerInfo& container) override;
  /// The primary's answer, else the secondary's.
  std::optional<int64_t> Pid(const ContainerInfo& container) override;

  /// Name() of the runtime that answered the last UpdateCpuset / ReadCpuset ("" before any
  /// call; the secondary's name also when both failed).
  const std::string& last_used() const { return last_used_; }
  /// The primary's error of the last call that fell back (OK when the last call did not).
  const absl::Status& last_primary_error() const { return last_primary_error_; }
  const Counters& counters() const { return counters_; }

  ContainerRuntime& primary() { return *primary_; }
  ContainerRuntime& secondary() { return *secondary_; }

 private:
  // Runs `call` (`what`, for the log) for `container` on the primary, then on the secondary if
  // the rule says so; keeps the books.
  template <typename Call>
  auto Run(const ContainerInfo& container, const char* what, Call call)
      -> decltype(call(std::declval<ContainerRuntime&>()));

  std::unique_ptr<ContainerRuntime> primary_;
  std::unique_ptr<ContainerRuntime> secondary_;
  std::string last_used_;
  absl::Status last_primary_error_;
  Counters counters_;
};

}  // namespace huygens::cri

#endif  // HUYGENS_CRI_FALLBACK_RUNTIME_H_

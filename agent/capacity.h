// Per-NUMA capacity factors: how much of each NUMA node's CPUs Huygens may hand out, from an
// external source (for example the real share of each NUMA node on a host that also runs other
// VMs). Published by the agent as the NRT zone attribute huygens.io/capacity-factor.
//
// Source format (a file, or the body of a local http:// URL):
//   {"version":1,"numaNodes":{"0":0.75,"1":1}}
// keys are NUMA node ids (decimal), values numbers in [0, 1]; a NUMA node not listed has
// factor 1.
//
// Thread-safety: pure functions, except that reading a URL does network I/O.
#ifndef HUYGENS_AGENT_CAPACITY_H_
#define HUYGENS_AGENT_CAPACITY_H_

#include <map>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/config.h"

namespace huygens::agent {

// Parses the source text. Errors: InvalidArgument naming the field (not JSON, version missing
// or not 1, numaNodes not an object, a key that is not a NUMA id, a factor that is not a number
// in [0, 1]).
absl::StatusOr<std::map<int, double>> ParseCapacityFactors(std::string_view json);

// Reads and parses the configured source; an empty source gives no factors. `timeout` bounds a
// URL request. Errors: NotFound / Internal for an unreadable file, the HTTP error of a URL
// (Unavailable when nothing listens), the parse error prefixed with the file or URL.
absl::StatusOr<std::map<int, double>> ReadCapacityFactors(const CapacitySourceConfig& source,
                                                         std::chrono::milliseconds timeout);

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_CAPACITY_H_

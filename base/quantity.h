// Kubernetes resource quantities for CPU and memory, as pod specs, the API server and our spec
// files write them.
//
// What it is: exact (integer, no floating point) parsers for the subset of resource.Quantity
// that CPU and memory requests use. CPU: a non-negative decimal number of CPUs ("4", "2.5",
// ".5") or of millicores with the suffix "m" ("500m") -> millicores (1000 = one logical CPU).
// Memory: a non-negative decimal number with no suffix (bytes), a binary suffix (Ki Mi Gi Ti Pi
// Ei) or a decimal suffix (k M G T P E) -> bytes.
//
// Errors: InvalidArgument naming the text and what is accepted, e.g.
// `"4Gi" is not a CPU quantity: ... (write CPUs such as "4" or "2.5", or millicores such as
// "500m")`. Rejected: signs, exponents ("1e3"), spaces, any other suffix, a CPU fraction finer
// than one millicore, a fractional byte count, a value above 2^53 millicores or 2^62 bytes.
// Callers add the file/field context.
//
// Thread-safety: pure functions.
#ifndef HUYGENS_BASE_QUANTITY_H_
#define HUYGENS_BASE_QUANTITY_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace huygens {

// CPU quantity -> millicores.
absl::StatusOr<int64_t> ParseCpuMilli(std::string_view text);

// Memory quantity -> bytes.
absl::StatusOr<int64_t> ParseMemoryBytes(std::string_view text);

}  // namespace huygens

#endif  // HUYGENS_BASE_QUANTITY_H_

// Kubernetes-style quantities and durations as the simulator's spec files write them.
//
// What it is: parsers for CPU quantities ("4", "2.5", "500m" -> millicores), memory quantities
// ("512Mi", "16Gi", "1G", "1048576" -> bytes) and durations ("90", "90s", "10m", "2h", "1d",
// "250ms" -> microseconds). Binary suffixes (Ki Mi Gi Ti Pi) and decimal suffixes (k M G T P)
// follow Kubernetes' resource.Quantity; CPU accepts only the plain and "m" forms.
//
// Errors: InvalidArgument with a message that names the text and the units accepted, e.g.
// `"4Gi" is not a CPU quantity (use "4", "2.5" or "500m")`. Negative values are errors.
//
// Thread-safety: pure functions.
#ifndef HUYGENS_SIM_QUANTITY_H_
#define HUYGENS_SIM_QUANTITY_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace huygens::sim {

// CPU quantity -> millicores (1000 = one logical CPU). A fraction finer than 1m is an error.
absl::StatusOr<int64_t> ParseCpuQuantity(std::string_view text);

// Memory quantity -> bytes. A fractional byte count is an error.
absl::StatusOr<int64_t> ParseMemoryQuantity(std::string_view text);

// Duration -> microseconds of simulated time. A bare number is seconds.
absl::StatusOr<int64_t> ParseDuration(std::string_view text);

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_QUANTITY_H_

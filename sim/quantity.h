// Durations as the simulator's spec files (and the agent's config) write them.
//
// What it is: a parser for durations ("90", "90s", "10m", "2h", "1d", "250ms" -> microseconds).
// CPU and memory quantities are parsed by alloc/quantity.h.
//
// Errors: InvalidArgument with a message that names the text and the units accepted, e.g.
// `"5x" is not a duration (use seconds, ...)`. Negative values are errors.
//
// Thread-safety: pure functions.
#ifndef HUYGENS_SIM_QUANTITY_H_
#define HUYGENS_SIM_QUANTITY_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace huygens::sim {

// Duration -> microseconds of simulated time. A bare number is seconds.
absl::StatusOr<int64_t> ParseDuration(std::string_view text);

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_QUANTITY_H_

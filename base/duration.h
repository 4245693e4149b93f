// Durations as the simulator's spec files, the scheduler's and the agent's configs write them.
//
// What it is: a parser for durations ("90", "90s", "10m", "2h", "1d", "250ms" -> microseconds).
// CPU and memory quantities are parsed by base/quantity.h.
//
// Errors: InvalidArgument with a message that names the text and the units accepted, e.g.
// `"5x" is not a duration (use seconds, ...)`. Negative values are errors.
//
// Thread-safety: pure functions.
#ifndef HUYGENS_BASE_DURATION_H_
#define HUYGENS_BASE_DURATION_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace huygens {

// Duration -> microseconds. A bare number is seconds.
absl::StatusOr<int64_t> ParseDuration(std::string_view text);

}  // namespace huygens

#endif  // HUYGENS_BASE_DURATION_H_

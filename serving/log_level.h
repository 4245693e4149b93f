// The daemons' --log-level flag: one parser, so that huygens-scheduler and huygens-agent accept
// the same names and refuse the same mistakes.
//
// Why: spdlog::level::from_str maps any name it does not know ("INFO", "verbose") to `off`, so
// a typo silently turned logging off. Here an unknown name is an error that names the flag and
// the accepted values; the daemons print it and exit 2 at start-up.
//
// Thread-safety: pure function.
#ifndef HUYGENS_SERVING_LOG_LEVEL_H_
#define HUYGENS_SERVING_LOG_LEVEL_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "spdlog/common.h"

namespace huygens::serving {

// The accepted names, in order of verbosity, as the flag's help and the error list them.
inline constexpr std::string_view kLogLevelNames = "trace, debug, info, warn, error, critical, off";

// Maps a --log-level value (exactly one of kLogLevelNames, lower case) to spdlog's level.
// Errors: InvalidArgument `--log-level: unknown level "INFO" (accepted: trace, debug, ...)`.
absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(std::string_view name);

}  // namespace huygens::serving

#endif  // HUYGENS_SERVING_LOG_LEVEL_H_

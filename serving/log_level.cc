#include "serving/log_level.h"

#include <array>
#include <utility>

#include "fmt/format.h"

namespace huygens::serving {

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(std::string_view name) {
  using spdlog::level::level_enum;
  static constexpr std::array<std::pair<std::string_view, level_enum>, 7> kLevels{{
      {"trace", level_enum::trace},
      {"debug", level_enum::debug},
      {"info", level_enum::info},
      {"warn", level_enum::warn},
      {"error", level_enum::err},
      {"critical", level_enum::critical},
      {"off", level_enum::off},
  }};
  for (const auto& [known, level] : kLevels) {
    if (name == known) return level;
  }
  return absl::InvalidArgumentError(
      fmt::format("--log-level: unknown level \"{}\" (accepted: {})", name, kLogLevelNames));
}

}  // namespace huygens::serving

// Fuzzes the agent's config parser: any bytes give an AgentConfig or an error, never a crash;
// a parsed config always has a node name and positive durations.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = huygens::agent::ParseAgentConfig(
      text, [](const char*) -> std::optional<std::string> { return "fuzz-node"; });
  if (config.ok()) {
    if (config->node_name.empty() || config->resync_period.count() <= 0 ||
        config->nrt_min_interval.count() <= 0 || config->runtime.timeout.count() <= 0) {
      std::abort();
    }
    (void)huygens::agent::ResolveSystemCpus(*config, text);
  }
  return 0;
}

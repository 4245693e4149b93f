// Fuzzes the agent's config parser and kubelet's config parser (the same bytes as both files):
// any bytes give a config or an error, never a crash; a parsed agent config always has a node
// name and positive durations; parsed kubelet memory reservations are all > 0.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/config.h"
#include "agent/kubelet_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = huygens::agent::ParseAgentConfig(
      text, "fuzz.yaml", [](const char*) -> std::optional<std::string> { return "fuzz-node"; });
  if (config.ok()) {
    if (config->node_name.empty() || config->resync_period.count() <= 0 ||
        config->nrt_min_interval.count() <= 0 || config->runtime.timeout.count() <= 0) {
      std::abort();
    }
  }
  auto kubelet = huygens::agent::ParseKubeletConfig(text, "fuzz");
  if (kubelet.ok()) {
    for (const auto& [numa, resources] : kubelet->memory.reserved) {
      if (numa < 0) std::abort();
      for (const auto& [resource, bytes] : resources) {
        if (bytes == 0 || resource.empty()) std::abort();
      }
    }
    if (config.ok()) (void)huygens::agent::ResolveSystemCpus(*config, *kubelet);
  }
  return 0;
}

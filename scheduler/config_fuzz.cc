// Fuzzes the scheduler configuration parser: any input gives a config or an error, never a
// crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "scheduler/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = huygens::scheduler::ParseSchedulerConfig(text, "fuzz.yaml");
  if (config.ok()) (void)huygens::scheduler::EffectiveProfiles(*config);
  return 0;
}

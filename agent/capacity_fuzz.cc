// Fuzzes the capacity-factor parser: any bytes give factors in [0, 1] for NUMA ids >= 0, or an
// error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/capacity.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto factors = huygens::agent::ParseCapacityFactors(text);
  if (factors.ok()) {
    for (const auto& [numa, factor] : *factors) {
      if (numa < 0 || !(factor >= 0 && factor <= 1)) std::abort();
    }
  }
  return 0;
}

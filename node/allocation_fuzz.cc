// Fuzzes the huygens.io/allocation parser; a parsed value must print and parse to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "node/allocation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto a = huygens::AllocationFromJson(text, "uid");
  if (a.ok()) {
    auto again = huygens::AllocationFromJson(huygens::AllocationToJson(*a), "uid");
    if (!again.ok() || !(*again == *a)) std::abort();
  }
  return 0;
}

// Fuzzes Huygens' checkpoint decoder; a decoded checkpoint must encode and decode to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "node/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cp = huygens::DecodeCheckpoint(text);
  if (cp.ok()) {
    auto again = huygens::DecodeCheckpoint(huygens::EncodeCheckpoint(*cp));
    if (!again.ok() || !(*again == *cp)) std::abort();
  }
  return 0;
}

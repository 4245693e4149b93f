// Fuzzes both kubelet checkpoint readers: any bytes give a value or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "node/kubelet_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)huygens::ParseKubeletCpuCheckpoint(text);
  (void)huygens::ParseKubeletMemoryCheckpoint(text);
  return 0;
}

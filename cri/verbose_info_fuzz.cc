// Fuzzes ParseVerboseInfo (a runtime's ContainerStatus verbose info JSON): it must never throw
// or crash, and a pid it returns is positive.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "cri/verbose_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<huygens::cri::VerboseInfo> info = huygens::cri::ParseVerboseInfo(text);
  if (info.ok() && info->pid) ABSL_RAW_CHECK(*info->pid > 0, "pid must be positive");
  return 0;
}

// libFuzzer target for base/quantity.h: any text either parses to a non-negative value within
// the documented bounds or gives InvalidArgument, and an accepted value reads back the same from
// its canonical spelling ("<n>m" for CPU, "<n>" for bytes). Never crashes or overflows (UBSan).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "base/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (absl::StatusOr<int64_t> milli = huygens::ParseCpuMilli(text); milli.ok()) {
    ABSL_RAW_CHECK(*milli >= 0 && *milli <= (int64_t{1} << 53), "CPU value out of bounds");
    const absl::StatusOr<int64_t> again = huygens::ParseCpuMilli(std::to_string(*milli) + "m");
    ABSL_RAW_CHECK(again.ok() && *again == *milli, "CPU value does not read back");
  } else {
    ABSL_RAW_CHECK(absl::IsInvalidArgument(milli.status()), "CPU error of the wrong kind");
  }
  if (absl::StatusOr<int64_t> bytes = huygens::ParseMemoryBytes(text); bytes.ok()) {
    ABSL_RAW_CHECK(*bytes >= 0 && *bytes <= (int64_t{1} << 62), "memory value out of bounds");
    const absl::StatusOr<int64_t> again = huygens::ParseMemoryBytes(std::to_string(*bytes));
    ABSL_RAW_CHECK(again.ok() && *again == *bytes, "memory value does not read back");
  } else {
    ABSL_RAW_CHECK(absl::IsInvalidArgument(bytes.status()), "memory error of the wrong kind");
  }
  return 0;
}

// Not a parser fuzzer: a canary for the fuzz build itself (CMakeLists.txt, HUYGENS_BUILD_FUZZERS).
// An input that starts with "overflow" makes it add past INT64_MAX. Its CTest
// (base/CMakeLists.txt) passes only when UBSan reports the overflow and the run stops there,
// before libFuzzer's closing "Done N runs": a build that lets undefined behaviour go on (UBSan's
// default without -fno-sanitize-recover) prints the report, runs to its time limit and exits 0,
// so every fuzzer would pass over the bugs it finds; here it fails instead.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.starts_with("overflow")) {
    volatile int64_t most = std::numeric_limits<int64_t>::max();
    volatile int64_t past = most + static_cast<int64_t>(size);  // size >= 8: overflows
    (void)past;
  }
  return 0;
}

// libFuzzer target for cmd/allocate/batch.h: arbitrary request lines (one per input line) must each
// get exactly one JSON response line carrying the request's id and either a result or an
// error, and never crash, hang or throw. Topologies can only be inline (the loader refuses
// synthetic and file sources), so the fuzzer does no I/O.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "cmd/allocate/batch.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  huygens::AllocateBatch batch([](const huygens::TopologySource&) {
    return absl::StatusOr<huygens::CpuTopology>(
        absl::InvalidArgumentError("only inline topologies here"));
  });
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    const huygens::AllocateBatch::Response r = batch.Handle(line);
    ABSL_RAW_CHECK(r.line.find('\n') == std::string::npos, "a response spans lines");
    const nlohmann::json out = nlohmann::json::parse(r.line, nullptr, /*allow_exceptions=*/false);
    ABSL_RAW_CHECK(out.is_object() && out.contains("id"), "a response without an id");
    ABSL_RAW_CHECK(out.contains("error") == r.error, "error flag and response disagree");
    ABSL_RAW_CHECK(!r.error || out.contains("kind"), "an error without a kind");
    pos = end + 1;
  }
  return 0;
}

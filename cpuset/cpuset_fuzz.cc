// libFuzzer target for CpuSet's two parsers. Every input is tried as a cpu-list and as a mask.
// A parse either fails with InvalidArgument or yields a set whose canonical text form parses
// back to the same set (ToString -> Parse, ToMask -> ParseMask).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "cpuset/cpuset.h"

namespace {

void CheckList(std::string_view text) {
  absl::StatusOr<huygens::CpuSet> s = huygens::CpuSet::Parse(text);
  if (!s.ok()) {
    ABSL_RAW_CHECK(s.status().code() == absl::StatusCode::kInvalidArgument, "Parse: wrong code");
    return;
  }
  absl::StatusOr<huygens::CpuSet> again = huygens::CpuSet::Parse(s->ToString());
  ABSL_RAW_CHECK(again.ok() && *again == *s, "Parse(ToString()) differs");
  absl::StatusOr<huygens::CpuSet> mask = huygens::CpuSet::ParseMask(s->ToMask());
  ABSL_RAW_CHECK(mask.ok() && *mask == *s, "ParseMask(ToMask()) of a parsed list differs");
}

void CheckMask(std::string_view text) {
  absl::StatusOr<huygens::CpuSet> s = huygens::CpuSet::ParseMask(text);
  if (!s.ok()) {
    ABSL_RAW_CHECK(s.status().code() == absl::StatusCode::kInvalidArgument,
                   "ParseMask: wrong code");
    return;
  }
  absl::StatusOr<huygens::CpuSet> again = huygens::CpuSet::ParseMask(s->ToMask());
  ABSL_RAW_CHECK(again.ok() && *again == *s, "ParseMask(ToMask()) differs");
  absl::StatusOr<huygens::CpuSet> list = huygens::CpuSet::Parse(s->ToString());
  ABSL_RAW_CHECK(list.ok() && *list == *s, "Parse(ToString()) of a parsed mask differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckList(text);
  CheckMask(text);
  return 0;
}

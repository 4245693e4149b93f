// libFuzzer target for the topology JSON reader. Any input either fails with InvalidArgument or
// yields a topology whose full form reads back to an equal topology and the same JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "topology/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<huygens::CpuTopology> t = huygens::TopologyFromJson(text);
  if (!t.ok()) {
    ABSL_RAW_CHECK(t.status().code() == absl::StatusCode::kInvalidArgument,
                   "TopologyFromJson: wrong error code");
    return 0;
  }
  const nlohmann::json doc = huygens::ToJson(*t);
  absl::StatusOr<huygens::CpuTopology> back = huygens::TopologyFromJson(doc);
  ABSL_RAW_CHECK(back.ok(), "the full form of a read topology does not read back");
  ABSL_RAW_CHECK(*back == *t, "round trip changed the topology");
  ABSL_RAW_CHECK(huygens::ToJson(*back) == doc, "round trip changed the JSON");
  return 0;
}

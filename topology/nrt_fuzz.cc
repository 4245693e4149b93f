// libFuzzer target for the NodeResourceTopology reader: any JSON text either fails to parse or
// to read with InvalidArgument, or reads into an object whose annotations are then tried as a
// topology and pools (which must also fail cleanly or succeed).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "topology/nrt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  absl::StatusOr<huygens::NrtObject> nrt = huygens::ReadNrt(doc);
  if (!nrt.ok()) {
    ABSL_RAW_CHECK(nrt.status().code() == absl::StatusCode::kInvalidArgument,
                   "ReadNrt: wrong error code");
    return 0;
  }
  for (const huygens::NrtZone& zone : nrt->zones) (void)zone.NumaId();
  absl::StatusOr<huygens::CpuTopology> t = huygens::TopologyFromNrt(*nrt);
  ABSL_RAW_CHECK(t.ok() || t.status().code() == absl::StatusCode::kInvalidArgument,
                 "TopologyFromNrt: wrong error code");
  absl::StatusOr<huygens::NrtPools> pools = huygens::PoolsFromNrt(*nrt);
  ABSL_RAW_CHECK(pools.ok() || pools.status().code() == absl::StatusCode::kInvalidArgument,
                 "PoolsFromNrt: wrong error code");
  return 0;
}

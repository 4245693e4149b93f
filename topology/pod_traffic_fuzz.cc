// libFuzzer target for the huygens.io/pod-traffic reader: any text either fails with
// InvalidArgument or reads into a canonical value that encodes and reads back to itself.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "topology/pod_traffic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<huygens::PodTraffic> traffic = huygens::ParsePodTraffic(text, "fuzz");
  if (!traffic.ok()) {
    ABSL_RAW_CHECK(traffic.status().code() == absl::StatusCode::kInvalidArgument,
                   "ParsePodTraffic: wrong error code");
    return 0;
  }
  ABSL_RAW_CHECK(*traffic == huygens::CanonicalPodTraffic(*traffic), "not canonical");
  absl::StatusOr<huygens::PodTraffic> again =
      huygens::ParsePodTraffic(huygens::EncodePodTraffic(*traffic), "fuzz");
  ABSL_RAW_CHECK(again.ok() && *again == *traffic, "encode/parse round trip differs");
  return 0;
}

// libFuzzer target for kubelet's --cpu-manager-policy-options parsing and the static policy
// built from it: arbitrary option maps must parse or fail cleanly, and a policy built from
// parsed options must allocate within the machine, exactly, or fail cleanly.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/base/internal/raw_logging.h"
#include "alloc/static_policy.h"
#include "topology/testing/machines.h"

namespace {

// Splits the input into "key=value" lines.
std::map<std::string, std::string> OptionsOf(const std::string& text) {
  std::map<std::string, std::string> options;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) options[line.substr(0, eq)] = line.substr(eq + 1);
    pos = end + 1;
  }
  return options;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int request = data[0] % 40;
  const int reserved = 1 + data[1] % 4;
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  absl::StatusOr<huygens::StaticPolicyOptions> options =
      huygens::ParseStaticPolicyOptions(OptionsOf(text));
  if (!options.ok()) return 0;
  static const huygens::CpuTopology kTopo = huygens::testing::DualSocketMultiNumaPerSocketHT();
  absl::StatusOr<huygens::StaticPolicy> policy =
      huygens::StaticPolicy::Create(kTopo, std::nullopt, reserved, *options);
  if (!policy.ok()) return 0;
  huygens::CpuManagerState state = policy->InitialState();
  huygens::PodSpec pod;
  pod.uid = "p";
  pod.containers.push_back({.name = "c",
                            .cpu_request_milli = 1000 * request,
                            .cpu_limit_milli = 1000 * request,
                            .memory_request_bytes = 1,
                            .memory_limit_bytes = 1});
  absl::StatusOr<huygens::CpuSet> got = policy->Allocate(state, pod, "c", std::nullopt);
  if (got.ok() && request > 0) {
    ABSL_RAW_CHECK(got->Size() == request, "wrong size");
    ABSL_RAW_CHECK(got->IsSubsetOf(kTopo.OnlineCpus()), "outside the machine");
    ABSL_RAW_CHECK(!got->Intersects(state.default_cpu_set), "still in the shared pool");
  }
  return 0;
}

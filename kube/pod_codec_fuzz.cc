// Fuzzes the pod codec on arbitrary JSON: any pod object gives a PodObject with non-empty
// identity, non-negative requests and named scheduling gates, claims and claim volumes, or an
// error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kube/pod_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto pod = huygens::kube::DecodePod(j);
  if (pod.ok()) {
    if (pod->spec.uid.empty() || pod->spec.name.empty() || pod->spec.namespace_name.empty()) {
      std::abort();
    }
    for (const auto* list : {&pod->spec.init_containers, &pod->spec.containers}) {
      for (const auto& c : *list) {
        if (c.name.empty() || c.cpu_request_milli < 0 || c.isolated_cpus < 0) std::abort();
        for (const auto& [name, amount] : c.extended_requests) {
          if (name.empty()) std::abort();
        }
      }
    }
    for (const auto* names : {&pod->scheduling_gates, &pod->resource_claims, &pod->claim_volumes}) {
      for (const auto& name : *names) {
        if (name.empty()) std::abort();
      }
    }
    if (pod->overhead_cpu_milli < 0 || pod->pod_cpu_request_milli.value_or(0) < 0) std::abort();
  }
  return 0;
}

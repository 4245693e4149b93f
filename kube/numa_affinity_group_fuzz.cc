// Fuzzes the NumaAffinityGroup codec on arbitrary JSON: any object gives a group with a non-empty
// identity, a non-negative generation and a selector whose requirements have the shape their
// operator needs (the codec's rule 5), or an error; never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kube/numa_affinity_group.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto group = huygens::kube::DecodeNumaAffinityGroup(j);
  if (!group.ok()) return 0;
  if (group->name.empty() || group->namespace_name.empty() || group->uid.empty() || group->generation < 0) {
    std::abort();
  }
  for (const huygens::LabelRequirement& r : group->selector.match_expressions) {
    const bool needs_values = r.op == huygens::SelectorOperator::kIn || r.op == huygens::SelectorOperator::kNotIn;
    const bool label_operator = needs_values || r.op == huygens::SelectorOperator::kExists ||
                                r.op == huygens::SelectorOperator::kDoesNotExist;
    if (r.key.empty() || !label_operator || needs_values == r.values.empty()) std::abort();
  }
  // The selector must answer for any labels, including the group's own.
  (void)group->selector.Matches(group->selector.match_labels);
  return 0;
}

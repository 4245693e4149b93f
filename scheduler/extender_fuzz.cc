// Fuzzes the extender request parsers (scheduler/extender_protocol.h): any body gives parsed
// arguments or an error, never a crash or an exception; parsed arguments render a reply that is
// valid JSON and answers in the request's form.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "scheduler/extender_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using huygens::scheduler::FilterVerdict;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto args = huygens::scheduler::ParseExtenderArgs(body, "filter");
  if (args.ok()) {
    FilterVerdict verdict;
    for (size_t i = 0; i < args->node_names.size(); ++i) {
      if (i % 2 == 0) {
        verdict.passed.push_back(args->node_names[i]);
      } else {
        verdict.failed[args->node_names[i]] = "reason";
      }
    }
    auto reply = nlohmann::json::parse(huygens::scheduler::RenderFilterResult(*args, verdict), nullptr, false);
    ABSL_RAW_CHECK(reply.is_object(), "filter reply is not a JSON object");
    ABSL_RAW_CHECK(reply.contains("nodes") == args->node_items.has_value(), "reply not in the request's form");
    if (args->node_items.has_value()) {
      ABSL_RAW_CHECK(reply["nodes"]["items"].size() == verdict.passed.size(), "reply lost or added nodes");
    }
  }
  auto binding = huygens::scheduler::ParseBindingArgs(body);
  if (binding.ok()) {
    ABSL_RAW_CHECK(!binding->pod_uid.empty() && !binding->node.empty(), "empty binding field accepted");
  }
  return 0;
}

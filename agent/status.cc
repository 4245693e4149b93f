#include "agent/status.h"

#include "nlohmann/json.hpp"

namespace huygens::agent {

const char* ToString(AllocationState state) {
  switch (state) {
    case AllocationState::kApplied: return "applied";
    case AllocationState::kPending: return "pending";
    case AllocationState::kConflict: return "conflict";
    case AllocationState::kFailed: return "failed";
  }
  return "unknown";
}

std::string StatusToJson(const AllocationStatus& status) {
  nlohmann::ordered_json observed = nlohmann::ordered_json::object();
  if (!status.owner.empty()) observed["owner"] = status.owner;
  observed["containers"] = nlohmann::ordered_json::object();
  for (const auto& [name, cpus] : status.observed) observed["containers"][name] = cpus;
  const nlohmann::ordered_json out = {{"version", 1},
                                      {"state", ToString(status.state)},
                                      {"reason", status.reason},
                                      {"observed", observed}};
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace huygens::agent

#include "cri/grpc_status.h"

#include <array>
#include <string>

#include "fmt/format.h"

namespace huygens::cri {
namespace {

std::string_view CodeName(grpc::StatusCode code) {
  static constexpr std::array<std::string_view, 17> kNames = {
      "OK",        "CANCELLED",          "UNKNOWN",        "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED", "NOT_FOUND",  "ALREADY_EXISTS", "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
      "UNIMPLEMENTED", "INTERNAL",       "UNAVAILABLE",    "DATA_LOSS",
      "UNAUTHENTICATED"};
  const auto i = static_cast<size_t>(code);
  return i < kNames.size() ? kNames[i] : std::string_view("?");
}

bool IsKernelRefusal(std::string_view message) {
  std::string lower(message);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (lower.find("cgroup") == std::string::npos && lower.find("cpuset") == std::string::npos) {
    return false;
  }
  for (std::string_view needle : {"invalid argument", "device or resource busy", "permission denied",
                                  "no space left on device", "numerical result out of range"}) {
    if (lower.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

absl::Status FromGrpcStatus(const grpc::Status& status, std::string_view verb,
                            std::string_view id) {
  auto code = static_cast<absl::StatusCode>(static_cast<int>(status.error_code()));
  if (status.error_code() == grpc::StatusCode::UNKNOWN && IsKernelRefusal(status.error_message())) {
    code = absl::StatusCode::kFailedPrecondition;
  }
  const std::string subject = id.empty() ? std::string(verb) : fmt::format("{} {}", verb, id);
  return absl::Status(code, fmt::format("{}: {} (gRPC {})", subject, status.error_message(),
                                        CodeName(status.error_code())));
}

}  // namespace huygens::cri

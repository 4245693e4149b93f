#include "kube/api_error.h"

#include "absl/strings/cord.h"
#include "base/utf8.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace huygens::kube {
namespace {

constexpr char kCodeUrl[] = "huygens.io/kube/http-code";
constexpr char kReasonUrl[] = "huygens.io/kube/reason";

absl::StatusCode CodeFor(int http, std::string_view reason) {
  switch (http) {
    case 400: case 422: return absl::StatusCode::kInvalidArgument;
    case 401: return absl::StatusCode::kUnauthenticated;
    case 403: return absl::StatusCode::kPermissionDenied;
    case 404: return absl::StatusCode::kNotFound;
    case 409: return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists : absl::StatusCode::kAborted;
    case 410: return absl::StatusCode::kOutOfRange;
    case 429: return absl::StatusCode::kResourceExhausted;
    case 503: return absl::StatusCode::kUnavailable;
    case 504: return absl::StatusCode::kDeadlineExceeded;
    default: return http >= 500 ? absl::StatusCode::kInternal : absl::StatusCode::kUnknown;
  }
}

}  // namespace

absl::Status ApiError(int http_code, std::string_view body, std::string_view what) {
  std::string reason, message;
  nlohmann::json status = nlohmann::json::parse(body, nullptr, false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    reason = status.value("reason", "");
    message = status.value("message", "");
  } else {
    message = TruncateUtf8(body, 200);
  }
  absl::Status s(CodeFor(http_code, reason), fmt::format("{}: HTTP {} {}: {}", what, http_code, reason, message));
  s.SetPayload(kCodeUrl, absl::Cord(std::to_string(http_code)));
  s.SetPayload(kReasonUrl, absl::Cord(reason));
  return s;
}

int HttpCode(const absl::Status& status) {
  auto payload = status.GetPayload(kCodeUrl);
  if (!payload) return 0;
  return std::stoi(std::string(*payload));
}

std::string Reason(const absl::Status& status) {
  auto payload = status.GetPayload(kReasonUrl);
  return payload ? std::string(*payload) : std::string();
}

bool IsRetryable(const absl::Status& s) {
  if (s.ok()) return false;
  int code = HttpCode(s);
  if (code == 0) return s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded;
  return code == 429 || code >= 500;
}

}  // namespace huygens::kube

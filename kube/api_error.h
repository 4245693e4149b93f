// API errors: how a failed API request is reported as an absl::Status, and how callers ask what
// kind of failure it was.
//
// An HTTP error answer becomes a Status whose code follows the HTTP code (404 NotFound,
// 409 AlreadyExists or Aborted (Conflict), 410 OutOfRange (Gone/Expired: the version is outside
// the retained window), 400/422 InvalidArgument, 401 Unauthenticated, 403 PermissionDenied,
// 429 ResourceExhausted, 500 Internal, 503 Unavailable, 504 DeadlineExceeded) and whose message
// carries the server's Status message; the HTTP code and reason ride as payloads. A transport
// failure (connect, TLS, reset) is Unavailable with no HTTP code.
#ifndef HUYGENS_KUBE_API_ERROR_H_
#define HUYGENS_KUBE_API_ERROR_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace huygens::kube {

// Builds the Status for an HTTP error answer. `body` is the response body (a Status object, or
// anything else: then its first 200 bytes, cut on a character boundary and made well-formed
// UTF-8 by TruncateUtf8, are the message). `what` names the request ("PATCH pods default/web").
absl::Status ApiError(int http_code, std::string_view body, std::string_view what);

// The HTTP code of an API error; 0 for transport failures and non-API statuses.
int HttpCode(const absl::Status& status);
// The Status reason ("Conflict", "AlreadyExists", "Expired", ...); "" if none.
std::string Reason(const absl::Status& status);

inline bool IsApiNotFound(const absl::Status& s) { return HttpCode(s) == 404; }
inline bool IsApiConflict(const absl::Status& s) { return HttpCode(s) == 409 && Reason(s) != "AlreadyExists"; }
inline bool IsApiAlreadyExists(const absl::Status& s) { return HttpCode(s) == 409 && Reason(s) == "AlreadyExists"; }
inline bool IsApiGone(const absl::Status& s) { return HttpCode(s) == 410; }
// Worth retrying unchanged after a backoff: transport failures, 429, 5xx.
bool IsRetryable(const absl::Status& s);

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_API_ERROR_H_

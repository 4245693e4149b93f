// RestClient: HTTP(S) requests to one API server over libcurl, with the configuration's
// credentials (the token and client certificate re-read from their files when they change,
// kube/credential_files.h), TLS settings, timeouts and client-side rate limit.
//
// Every failure is logged (spdlog, warn) with the verb, the path and the HTTP status or transport
// error; credentials never appear in logs or in returned errors. Connections are kept alive and
// reused across requests (a pool of curl handles).
// Thread-safety: Send and Stream may be called concurrently from any number of threads.
#ifndef HUYGENS_KUBE_REST_CLIENT_H_
#define HUYGENS_KUBE_REST_CLIENT_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/statusor.h"
#include "base/clock.h"
#include "kube/config.h"
#include "kube/credential_files.h"
#include "kube/rate_limiter.h"
#include "nlohmann/json.hpp"

namespace huygens::kube {

struct HttpRequest {
  std::string verb = "GET";  // GET, POST, PUT, PATCH, DELETE
  std::string path;          // "/api/v1/namespaces/default/pods"
  std::vector<std::pair<std::string, std::string>> query;  // URL-encoded when sent
  std::string body;          // sent when non-empty
  std::string content_type = "application/json";
  // Whole-request timeout of this request; zero (default): RestConfig::timeout. Not for Stream.
  // The leader elector bounds each attempt by the time left before its renew deadline.
  std::chrono::milliseconds timeout{0};
};

// A raw answer: what the server sent, whatever its code.
struct HttpAnswer {
  int code = 0;              // HTTP status code
  std::string body;          // the whole body, unparsed
  std::string content_type;  // the Content-Type header; "" if none
};

class RestClient {
 public:
  // Errors: InvalidArgument for a config without a server. `clock` (rate limit) must outlive
  // the client.
  static absl::StatusOr<std::unique_ptr<RestClient>> Create(RestConfig config, Clock* clock = RealClock::Get());
  ~RestClient();
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // Sends one request (after taking a rate-limit token) and returns the parsed body of a 2xx
  // answer (null for an empty body). Errors: see api_error.h (HTTP errors with the server's
  // Status; Unavailable for transport failures, DeadlineExceeded on timeout).
  absl::StatusOr<nlohmann::json> Send(const HttpRequest& request);

  // Sends one request like Send but returns the answer as it came, for any HTTP code (a
  // proxy in front of a real server needs the server's exact code and body). Errors: only
  // transport failures (Unavailable, DeadlineExceeded).
  absl::StatusOr<HttpAnswer> Exchange(const HttpRequest& request);

  // A long-running request (watch): no overall timeout, but cut with DeadlineExceeded when no
  // byte arrives for RestConfig::watch_idle_timeout (a frozen or half-open connection; TCP
  // keepalive per RestConfig::tcp_keepalive); `on_open` (if set) is called once when the
  // headers of a 2xx answer have arrived, before any line (the server took the request: a
  // quiet watch sends nothing else for a while); `on_line` gets each newline-terminated line of
  // a 2xx body as it arrives. Returns OK when the server ends the body cleanly, the HTTP error
  // of a non-2xx answer, Unavailable when the stream breaks, Cancelled when `cancel`
  // becomes true (checked at least once a second) or `on_line` returns false. An idle cut is
  // logged at debug only (the caller knows whether it is routine); other failures as warnings.
  absl::Status Stream(const HttpRequest& request, const std::function<bool(std::string_view line)>& on_line,
                      const std::atomic<bool>* cancel = nullptr, const std::function<void()>& on_open = {});

  const RestConfig& config() const { return config_; }

  // The state of one transfer, shared with libcurl's callbacks (implementation detail).
  struct Call;

 private:
  RestClient(RestConfig config, Clock* clock);
  void* TakeHandle() ABSL_LOCKS_EXCLUDED(mu_);
  void ReturnHandle(void* handle) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Perform(const HttpRequest& request, Call& call, bool streaming);
  // The transfer alone: OK once an answer (any code) arrived, else the transport error.
  absl::Status Transfer(const HttpRequest& request, Call& call, bool streaming);

  const RestConfig config_;
  CredentialFiles credentials_;  // config_'s, re-read from their files when they rotate
  TokenBucket limiter_;
  absl::Mutex mu_;
  std::vector<void*> idle_handles_ ABSL_GUARDED_BY(mu_);  // CURL*
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_REST_CLIENT_H_

#include "kube/rest_client.h"

#include <curl/curl.h>

#include "fmt/format.h"
#include "kube/api_error.h"
#include "spdlog/spdlog.h"

namespace huygens::kube {

// The state of one transfer, shared with curl's callbacks.
struct RestClient::Call {
  std::string body;  // whole body (Send), or the unfinished line (Stream)
  std::string error_body;  // body of a non-2xx streaming answer
  long http_code = 0;
  std::string content_type;
  const std::function<bool(std::string_view)>* on_line = nullptr;
  const std::function<void()>* on_open = nullptr;  // Stream: called once at 2xx headers
  const std::atomic<bool>* cancel = nullptr;
  bool stopped_by_caller = false;
  CURL* curl = nullptr;
};

namespace {

std::once_flag curl_init;

size_t OnData(char* data, size_t size, size_t count, void* user) {
  auto* call = static_cast<RestClient::Call*>(user);
  size_t n = size * count;
  if (call->on_line == nullptr) {
    call->body.append(data, n);
    return n;
  }
  if (call->http_code == 0) curl_easy_getinfo(call->curl, CURLINFO_RESPONSE_CODE, &call->http_code);
  if (call->http_code < 200 || call->http_code >= 300) {
    call->error_body.append(data, n);
    return n;
  }
  call->body.append(data, n);
  std::size_t start = 0;
  for (std::size_t nl; (nl = call->body.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(call->body.data() + start, nl - start);
    if (line.empty()) continue;
    if (!(*call->on_line)(line)) {
      call->stopped_by_caller = true;
      return 0;  // aborts the transfer
    }
  }
  call->body.erase(0, start);
  return n;
}

// Each header line; the empty line ends the headers of one answer (a 1xx answer has its own).
size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* call = static_cast<RestClient::Call*>(user);
  const size_t n = size * count;
  if (std::string_view(data, n) != "\r\n" && std::string_view(data, n) != "\n") return n;
  long code = 0;
  curl_easy_getinfo(call->curl, CURLINFO_RESPONSE_CODE, &code);
  if (code >= 200 && code < 300 && call->on_open != nullptr) {
    (*call->on_open)();
    call->on_open = nullptr;
  }
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* call = static_cast<RestClient::Call*>(user);
  return call->cancel != nullptr && call->cancel->load() ? 1 : 0;
}

struct HeaderList {
  curl_slist* list = nullptr;
  void Add(const std::string& h) { list = curl_slist_append(list, h.c_str()); }
  ~HeaderList() { curl_slist_free_all(list); }
};

}  // namespace

absl::StatusOr<std::unique_ptr<RestClient>> RestClient::Create(RestConfig config, Clock* clock) {
  if (config.server.empty()) return absl::InvalidArgumentError("kube client: the config has no server URL");
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return std::unique_ptr<RestClient>(new RestClient(std::move(config), clock));
}

RestClient::RestClient(RestConfig config, Clock* clock)
    : config_(std::move(config)), credentials_(config_), limiter_(config_.qps, config_.burst, clock) {}

RestClient::~RestClient() {
  for (void* h : idle_handles_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* RestClient::TakeHandle() {
  absl::MutexLock lock(&mu_);
  if (idle_handles_.empty()) return curl_easy_init();
  void* h = idle_handles_.back();
  idle_handles_.pop_back();
  return h;
}

void RestClient::ReturnHandle(void* handle) {
  absl::MutexLock lock(&mu_);
  idle_handles_.push_back(handle);
}

absl::Status RestClient::Perform(const HttpRequest& request, Call& call, bool streaming) {
  if (absl::Status s = Transfer(request, call, streaming); !s.ok()) return s;
  if (call.http_code < 200 || call.http_code >= 300) {
    std::string what = fmt::format("{} {}", request.verb, request.path);
    absl::Status s = ApiError(static_cast<int>(call.http_code), streaming ? call.error_body : call.body, what);
    spdlog::warn("kube: {} failed: HTTP {} {}", what, call.http_code, Reason(s));
    return s;
  }
  return absl::OkStatus();
}

absl::Status RestClient::Transfer(const HttpRequest& request, Call& call, bool streaming) {
  limiter_.Acquire();
  CURL* curl = static_cast<CURL*>(TakeHandle());
  if (curl == nullptr) return absl::ResourceExhaustedError("kube client: curl_easy_init failed");
  curl_easy_reset(curl);  // keeps the connection cache
  call.curl = curl;

  std::string url = config_.server + request.path;
  for (std::size_t i = 0; i < request.query.size(); ++i) {
    const auto& [key, value] = request.query[i];
    char* escaped = curl_easy_escape(curl, value.c_str(), static_cast<int>(value.size()));
    url += fmt::format("{}{}={}", i == 0 ? '?' : '&', key, escaped);
    curl_free(escaped);
  }
  HeaderList headers;
  headers.Add("Accept: application/json");
  if (!request.body.empty()) headers.Add("Content-Type: " + request.content_type);
  const Credentials credentials = credentials_.Current();
  if (!credentials.bearer_token.empty()) headers.Add("Authorization: Bearer " + credentials.bearer_token);

  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.verb.c_str());
  if (!request.body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
  } else if (request.verb == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, config_.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(config_.connect_timeout.count()));
  if (!streaming) {
    const auto timeout = request.timeout.count() > 0 ? request.timeout : config_.timeout;
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  } else if (config_.watch_idle_timeout.count() > 0) {
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(config_.watch_idle_timeout.count()));
  }
  if (config_.tcp_keepalive.count() > 0) {
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, static_cast<long>(config_.tcp_keepalive.count()));
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, static_cast<long>(config_.tcp_keepalive.count()));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnData);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &call);
  if (call.on_open != nullptr) {
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &call);
  }
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &call);
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_blob ca{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_NOCOPY};
  curl_blob cert{const_cast<char*>(credentials.client_certificate_pem.data()),
                 credentials.client_certificate_pem.size(), CURL_BLOB_COPY};
  curl_blob key{const_cast<char*>(credentials.client_key_pem.data()), credentials.client_key_pem.size(),
                CURL_BLOB_COPY};
  if (!config_.ca_pem.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
  if (!credentials.client_certificate_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
  }

  CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &call.http_code);
  const char* content_type = nullptr;
  if (curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &content_type) == CURLE_OK && content_type != nullptr) {
    call.content_type = content_type;
  }
  ReturnHandle(curl);

  std::string what = fmt::format("{} {}", request.verb, request.path);
  if (rc != CURLE_OK) {
    if (call.stopped_by_caller || rc == CURLE_ABORTED_BY_CALLBACK) {
      return absl::CancelledError(fmt::format("{}: cancelled", what));
    }
    absl::Status s = rc == CURLE_OPERATION_TIMEDOUT
                         ? absl::DeadlineExceededError(fmt::format("{}: {}", what, curl_easy_strerror(rc)))
                         : absl::UnavailableError(fmt::format("{}: {}", what, curl_easy_strerror(rc)));
    if (streaming && rc == CURLE_OPERATION_TIMEDOUT) {
      // The idle limit cut the stream: routine on a quiet watch; the caller says what it means.
      spdlog::debug("kube: {} cut at the idle limit: {}", what, curl_easy_strerror(rc));
    } else {
      spdlog::warn("kube: {} failed: {}", what, curl_easy_strerror(rc));
    }
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<HttpAnswer> RestClient::Exchange(const HttpRequest& request) {
  Call call;
  if (absl::Status s = Transfer(request, call, /*streaming=*/false); !s.ok()) return s;
  return HttpAnswer{static_cast<int>(call.http_code), std::move(call.body), std::move(call.content_type)};
}

absl::StatusOr<nlohmann::json> RestClient::Send(const HttpRequest& request) {
  Call call;
  absl::Status s = Perform(request, call, /*streaming=*/false);
  if (!s.ok()) return s;
  if (call.body.empty()) return nlohmann::json();
  nlohmann::json body = nlohmann::json::parse(call.body, nullptr, false);
  if (body.is_discarded()) {
    spdlog::warn("kube: {} {} failed: HTTP {} with a body that is not JSON", request.verb, request.path,
                 call.http_code);
    return absl::InternalError(fmt::format("{} {}: the answer is not JSON", request.verb, request.path));
  }
  return body;
}

absl::Status RestClient::Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_line,
                                const std::atomic<bool>* cancel, const std::function<void()>& on_open) {
  Call call;
  call.on_line = &on_line;
  if (on_open) call.on_open = &on_open;
  call.cancel = cancel;
  return Perform(request, call, /*streaming=*/true);
}

}  // namespace huygens::kube

// Client: the Kubernetes API operations Huygens needs, on JSON objects (nlohmann::json), over a
// RestClient: get, paginated list, watch, create, update, delete, merge and JSON patches with a
// resourceVersion precondition and conflict retry, and the pods/binding subresource (events:
// kube/event_recorder.h).
//
// Retries: a request that fails with a retryable error (transport failure, 429, 5xx; see
// IsRetryable) is sent again after an exponential backoff with jitter, up to
// `ClientOptions::max_attempts` times. Writes are retried too: updates and patches carry a
// resourceVersion precondition, so a repeat cannot apply twice; a retried create or binding can
// answer AlreadyExists / Conflict if the first attempt did land, which callers treat as success
// when the stored object is theirs.
// Thread-safety: all methods may be called concurrently.
#ifndef HUYGENS_KUBE_CLIENT_H_
#define HUYGENS_KUBE_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/backoff.h"
#include "base/clock.h"
#include "kube/resource.h"
#include "kube/rest_client.h"
#include "nlohmann/json.hpp"

namespace huygens::kube {

struct ClientOptions {
  // Attempts per request for retryable errors (1 = no retry). Default 5.
  int max_attempts = 5;
  // Backoff between those attempts. Default 100 ms doubling to 5 s, jitter 0.5.
  BackoffOptions retry_backoff{std::chrono::milliseconds(100), std::chrono::milliseconds(5000), 0.5};
  // Attempts of a read-modify-write on 409 Conflict (MergePatchWithRetry, JsonPatchWithRetry).
  // Default 10.
  int max_conflict_attempts = 10;
};

struct ListOptions {
  std::string label_selector;  // "app=web,tier!=db"
  std::string field_selector;  // "spec.nodeName=n1"
  // Page size (the `limit` parameter); the list follows `continue` tokens until the end.
  // 0: one unpaginated request. Default 500 (client-go's pager default).
  std::int64_t page_size = 500;
};

struct ObjectList {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // of the list: where a watch that follows it starts
};

struct WatchOptions {
  std::string resource_version;  // "" or "0": start with ADDED events for the current objects
  std::string label_selector;
  std::string field_selector;
  bool bookmarks = true;  // allowWatchBookmarks
  // Server-side end of the watch (timeoutSeconds). Default 5 min (client-go picks 5-10 min).
  std::chrono::seconds timeout{300};
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  nlohmann::json object;
};

class Client {
 public:
  // `clock` paces retry backoff and must outlive the client.
  explicit Client(std::unique_ptr<RestClient> rest, ClientOptions options = {}, Clock* clock = RealClock::Get());

  // Errors everywhere: see api_error.h; NotFound for a missing object.
  absl::StatusOr<nlohmann::json> Get(const ResourceRef& r, std::string_view ns, std::string_view name);
  // Every matching object in `ns` ("" = all namespaces), following continue tokens. A 410 on a
  // continue token (the list was too slow) restarts the whole list once.
  absl::StatusOr<ObjectList> List(const ResourceRef& r, std::string_view ns, const ListOptions& options = {});
  // Creates `object` in `ns` (ignored for cluster-scoped resources). Returns the stored object.
  absl::StatusOr<nlohmann::json> Create(const ResourceRef& r, std::string_view ns, const nlohmann::json& object);
  // Replaces the object (PUT); its metadata.resourceVersion, when set, is a precondition.
  absl::StatusOr<nlohmann::json> Update(const ResourceRef& r, const nlohmann::json& object);
  // Deletes the object; a non-empty `resource_version` is a precondition (409 if stale).
  absl::Status Delete(const ResourceRef& r, std::string_view ns, std::string_view name,
                      std::string_view resource_version = "");
  // RFC 7396 merge patch; a metadata.resourceVersion in the patch is a precondition. With a
  // `subresource` ("status"), the patch goes to that subresource: the API server then applies
  // only its part of the object (the status subresource ignores everything but status) and
  // returns the whole object.
  absl::StatusOr<nlohmann::json> MergePatch(const ResourceRef& r, std::string_view ns, std::string_view name,
                                            const nlohmann::json& patch, std::string_view subresource = "");
  // Kubernetes' strategic merge patch (lists with a patch merge key, such as a pod's
  // status.conditions by `type`, are merged element by element), optionally of a subresource,
  // as MergePatch.
  absl::StatusOr<nlohmann::json> StrategicMergePatch(const ResourceRef& r, std::string_view ns, std::string_view name,
                                                     const nlohmann::json& patch, std::string_view subresource = "");
  // RFC 6902 JSON patch (an array of operations).
  absl::StatusOr<nlohmann::json> JsonPatch(const ResourceRef& r, std::string_view ns, std::string_view name,
                                           const nlohmann::json& operations);

  // Read-modify-write with optimistic concurrency: reads the object, asks `make_patch` for a
  // merge patch against it (nullopt: nothing to change, the current object is returned), sends
  // it with metadata.resourceVersion set to the version read, and on 409 Conflict reads again
  // and asks again, up to max_conflict_attempts. Errors from `make_patch` are returned as is.
  using MergePatchFn = std::function<absl::StatusOr<std::optional<nlohmann::json>>(const nlohmann::json& current)>;
  absl::StatusOr<nlohmann::json> MergePatchWithRetry(const ResourceRef& r, std::string_view ns,
                                                     std::string_view name, const MergePatchFn& make_patch);
  // The same with JSON patch operations; a `replace` of /metadata/resourceVersion is appended as
  // the precondition.
  using JsonPatchFn = MergePatchFn;  // returns an array of operations
  absl::StatusOr<nlohmann::json> JsonPatchWithRetry(const ResourceRef& r, std::string_view ns,
                                                    std::string_view name, const JsonPatchFn& make_operations);

  // POST pods/<name>/binding with target Node `node`. A non-empty `pod_uid` is a precondition,
  // and so is a non-empty `resource_version`: the apiserver applies the Binding only while the
  // pod's metadata.resourceVersion is that one (BindingREST.setPodNodeAndMetadata in
  // pkg/registry/core/pod/storage/storage.go takes the Binding's uid and resourceVersion as
  // preconditions), so any write to the pod after the caller read it voids the Binding, however
  // late it arrives. `annotations` ride on the Binding's metadata: the apiserver merges them onto
  // the pod in the same write as spec.nodeName, so the pod is never seen bound without them.
  // Errors: Conflict when the pod is already bound, its uid differs or its resourceVersion moved;
  // NotFound when it is gone.
  absl::Status Bind(std::string_view ns, std::string_view pod, std::string_view node, std::string_view pod_uid = "",
                    const std::map<std::string, std::string>& annotations = {},
                    std::string_view resource_version = "");

  // Opens a watch, calls `on_open` (if set) once the server has answered 2xx (RestClient::Stream),
  // and calls `on_event` for each event until the server ends the stream (OK),
  // `on_event` returns false (OK), `cancel` becomes true (Cancelled), the stream breaks
  // (Unavailable) or the request fails (its HTTP error; 410 when the version is too old — the
  // server may also report that as an ERROR event, which is passed to `on_event`). Not retried:
  // the caller resumes from the last version it saw or relists (see Informer).
  absl::Status Watch(const ResourceRef& r, std::string_view ns, const WatchOptions& options,
                     const std::function<bool(const WatchEvent&)>& on_event, const std::atomic<bool>* cancel = nullptr,
                     const std::function<void()>& on_open = {});

  RestClient& rest() { return *rest_; }
  Clock* clock() { return clock_; }

 private:
  // Sends with retries on retryable errors.
  absl::StatusOr<nlohmann::json> Send(const HttpRequest& request);
  absl::StatusOr<nlohmann::json> PatchWithRetry(const ResourceRef& r, std::string_view ns, std::string_view name,
                                                const MergePatchFn& make_patch, bool json_patch);

  std::unique_ptr<RestClient> rest_;
  ClientOptions options_;
  Clock* clock_;
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_CLIENT_H_

#include "kube/client.h"

#include "fmt/format.h"
#include "kube/api_error.h"
#include "spdlog/spdlog.h"

namespace huygens::kube {
namespace {

using nlohmann::json;

std::string Describe(const ResourceRef& r, std::string_view ns, std::string_view name) {
  if (ns.empty()) return fmt::format("{} {}", r.resource, name);
  return fmt::format("{} {}/{}", r.resource, ns, name);
}

}  // namespace

Client::Client(std::unique_ptr<RestClient> rest, ClientOptions options, Clock* clock)
    : rest_(std::move(rest)), options_(options), clock_(clock) {}

absl::StatusOr<json> Client::Send(const HttpRequest& request) {
  Backoff backoff(options_.retry_backoff);
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<json> result = rest_->Send(request);
    if (result.ok() || !IsRetryable(result.status()) || attempt >= options_.max_attempts) return result;
    auto delay = backoff.Next();
    spdlog::info("kube: {} {}: retrying in {} ms (attempt {} of {})", request.verb, request.path,
                 std::chrono::duration_cast<std::chrono::milliseconds>(delay).count(), attempt + 1,
                 options_.max_attempts);
    clock_->Sleep(delay);
  }
}

absl::StatusOr<json> Client::Get(const ResourceRef& r, std::string_view ns, std::string_view name) {
  return Send(HttpRequest{"GET", r.ObjectPath(ns, name), {}, "", "application/json"});
}

absl::StatusOr<ObjectList> Client::List(const ResourceRef& r, std::string_view ns, const ListOptions& options) {
  for (int restart = 0;; ++restart) {
    ObjectList list;
    std::string token;
    absl::Status failed;
    do {
      HttpRequest request{"GET", r.CollectionPath(ns), {}, "", "application/json"};
      if (!options.label_selector.empty()) request.query.emplace_back("labelSelector", options.label_selector);
      if (!options.field_selector.empty()) request.query.emplace_back("fieldSelector", options.field_selector);
      if (options.page_size > 0) request.query.emplace_back("limit", std::to_string(options.page_size));
      if (!token.empty()) request.query.emplace_back("continue", token);
      absl::StatusOr<json> page = Send(request);
      if (!page.ok()) {
        failed = page.status();
        break;
      }
      const json& meta = page->contains("metadata") ? (*page)["metadata"] : json::object();
      if (list.resource_version.empty()) list.resource_version = meta.value("resourceVersion", "");
      token = meta.value("continue", "");
      if (page->contains("items") && (*page)["items"].is_array()) {
        for (json& item : (*page)["items"]) {
          // Typed lists omit apiVersion and kind on items; restore them for the caller.
          if (!item.contains("kind")) item["kind"] = r.kind;
          if (!item.contains("apiVersion")) item["apiVersion"] = r.ApiVersion();
          list.items.push_back(std::move(item));
        }
      }
    } while (!token.empty());
    if (failed.ok()) return list;
    // An expired continue token: the snapshot is gone; start the list over once.
    if (!(IsApiGone(failed) && !token.empty() && restart == 0)) return failed;
  }
}

absl::StatusOr<json> Client::Create(const ResourceRef& r, std::string_view ns, const json& object) {
  return Send(HttpRequest{"POST", r.CollectionPath(r.namespaced ? ns : ""), {}, object.dump(), "application/json"});
}

absl::StatusOr<json> Client::Update(const ResourceRef& r, const json& object) {
  const json& meta = object.contains("metadata") ? object["metadata"] : json::object();
  std::string ns = r.namespaced ? meta.value("namespace", "") : "";
  return Send(HttpRequest{"PUT", r.ObjectPath(ns, meta.value("name", "")), {}, object.dump(), "application/json"});
}

absl::Status Client::Delete(const ResourceRef& r, std::string_view ns, std::string_view name,
                            std::string_view resource_version) {
  json options = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!resource_version.empty()) options["preconditions"] = {{"resourceVersion", resource_version}};
  return Send(HttpRequest{"DELETE", r.ObjectPath(ns, name), {}, options.dump(), "application/json"}).status();
}

absl::StatusOr<json> Client::MergePatch(const ResourceRef& r, std::string_view ns, std::string_view name,
                                        const json& patch, std::string_view subresource) {
  return Send(HttpRequest{"PATCH", r.ObjectPath(ns, name, subresource), {}, patch.dump(),
                          "application/merge-patch+json"});
}

absl::StatusOr<json> Client::StrategicMergePatch(const ResourceRef& r, std::string_view ns, std::string_view name,
                                                const json& patch, std::string_view subresource) {
  return Send(HttpRequest{"PATCH", r.ObjectPath(ns, name, subresource), {}, patch.dump(),
                          "application/strategic-merge-patch+json"});
}

absl::StatusOr<json> Client::JsonPatch(const ResourceRef& r, std::string_view ns, std::string_view name,
                                       const json& operations) {
  return Send(HttpRequest{"PATCH", r.ObjectPath(ns, name), {}, operations.dump(), "application/json-patch+json"});
}

absl::StatusOr<json> Client::PatchWithRetry(const ResourceRef& r, std::string_view ns, std::string_view name,
                                            const MergePatchFn& make_patch, bool json_patch) {
  absl::Status last;
  for (int attempt = 1; attempt <= options_.max_conflict_attempts; ++attempt) {
    absl::StatusOr<json> current = Get(r, ns, name);
    if (!current.ok()) return current.status();
    absl::StatusOr<std::optional<json>> patch = make_patch(*current);
    if (!patch.ok()) return patch.status();
    if (!patch->has_value()) return current;
    std::string version = (*current)["metadata"].value("resourceVersion", "");
    json body = std::move(**patch);
    absl::StatusOr<json> result;
    if (json_patch) {
      if (!body.is_array()) {
        return absl::InvalidArgumentError(fmt::format("JSON patch of {}: operations must be an array", Describe(r, ns, name)));
      }
      body.push_back({{"op", "replace"}, {"path", "/metadata/resourceVersion"}, {"value", version}});
      result = JsonPatch(r, ns, name, body);
    } else {
      if (!body.is_object()) {
        return absl::InvalidArgumentError(fmt::format("merge patch of {}: the patch must be an object", Describe(r, ns, name)));
      }
      body["metadata"]["resourceVersion"] = version;
      result = MergePatch(r, ns, name, body);
    }
    if (result.ok() || !IsApiConflict(result.status())) return result;
    last = result.status();
    spdlog::info("kube: patch of {} conflicted at version {}; reading again (attempt {} of {})",
                 Describe(r, ns, name), version, attempt, options_.max_conflict_attempts);
  }
  return last;
}

absl::StatusOr<json> Client::MergePatchWithRetry(const ResourceRef& r, std::string_view ns, std::string_view name,
                                                 const MergePatchFn& make_patch) {
  return PatchWithRetry(r, ns, name, make_patch, /*json_patch=*/false);
}

absl::StatusOr<json> Client::JsonPatchWithRetry(const ResourceRef& r, std::string_view ns, std::string_view name,
                                                const JsonPatchFn& make_operations) {
  return PatchWithRetry(r, ns, name, make_operations, /*json_patch=*/true);
}

absl::Status Client::Bind(std::string_view ns, std::string_view pod, std::string_view node, std::string_view pod_uid,
                          const std::map<std::string, std::string>& annotations,
                          std::string_view resource_version) {
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", pod}, {"namespace", ns}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!pod_uid.empty()) binding["metadata"]["uid"] = pod_uid;
  if (!resource_version.empty()) binding["metadata"]["resourceVersion"] = resource_version;
  if (!annotations.empty()) binding["metadata"]["annotations"] = annotations;
  return Send(HttpRequest{"POST", Pods().ObjectPath(ns, pod, "binding"), {}, binding.dump(), "application/json"})
      .status();
}

absl::Status Client::Watch(const ResourceRef& r, std::string_view ns, const WatchOptions& options,
                           const std::function<bool(const WatchEvent&)>& on_event, const std::atomic<bool>* cancel,
                           const std::function<void()>& on_open) {
  HttpRequest request{"GET", r.CollectionPath(ns), {{"watch", "true"}}, "", "application/json"};
  if (!options.resource_version.empty()) request.query.emplace_back("resourceVersion", options.resource_version);
  if (options.bookmarks) request.query.emplace_back("allowWatchBookmarks", "true");
  if (!options.label_selector.empty()) request.query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) request.query.emplace_back("fieldSelector", options.field_selector);
  request.query.emplace_back("timeoutSeconds", std::to_string(options.timeout.count()));
  bool stopped = false;
  absl::Status bad_event;
  absl::Status s = rest_->Stream(
      request,
      [&](std::string_view line) {
        json event = json::parse(line, nullptr, false);
        if (!event.is_object() || !event.contains("type") || !event["type"].is_string()) {
          bad_event = absl::InternalError(fmt::format("watch {}: an event that is not a watch event: {:.200}",
                                                      r.CollectionPath(ns), line));
          return false;
        }
        WatchEvent e{event["type"].get<std::string>(), event.value("object", json())};
        if (!on_event(e)) {
          stopped = true;
          return false;
        }
        return true;
      },
      cancel, on_open);
  if (!bad_event.ok()) {
    spdlog::warn("kube: {}", std::string(bad_event.message()));
    return bad_event;
  }
  if (stopped) return absl::OkStatus();
  return s;
}

}  // namespace huygens::kube

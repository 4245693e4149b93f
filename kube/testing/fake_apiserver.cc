#include "kube/testing/fake_apiserver.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "fmt/chrono.h"
#include "fmt/format.h"
#include "kube/api_error.h"
#include "kube/meta_time.h"
#include "kube/rest_client.h"
#include "kube/testing/selector.h"
#include "spdlog/spdlog.h"

namespace huygens::kube::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The Content-Type of every watch stream, the fake's own and the forwarded ones. The parameter
// keeps cpp-httplib from compressing the stream (it compresses a bare "application/json" when
// the client accepts gzip or br, as libcurl does), which would hold each event in the
// compressor's buffer: a watch would then seem to deliver nothing.
constexpr char kWatchContentType[] = "application/json;charset=utf-8";

// One served resource type, as discovery describes it.
struct ResourceType {
  std::string group;  // "" for the core group
  std::string version;
  std::string resource;  // plural
  std::string singular;
  std::string kind;
  bool namespaced;
  std::vector<std::string> short_names;
  std::vector<std::string> subresources;  // "binding", "status"

  std::string GroupVersion() const { return group.empty() ? version : group + "/" + version; }
  // "pods", "leases.coordination.k8s.io": the store key and the name used in Status messages.
  std::string Qualified() const { return group.empty() ? resource : resource + "." + group; }
};

const std::vector<ResourceType>& Types() {
  static const std::vector<ResourceType> types = {
      {"", "v1", "pods", "pod", "Pod", true, {"po"}, {"binding", "status"}},
      {"", "v1", "nodes", "node", "Node", false, {"no"}, {"status"}},
      {"", "v1", "events", "event", "Event", true, {"ev"}, {}},
      {"events.k8s.io", "v1", "events", "event", "Event", true, {"ev"}, {}},
      {"coordination.k8s.io", "v1", "leases", "lease", "Lease", true, {}, {}},
      {"node.k8s.io", "v1", "runtimeclasses", "runtimeclass", "RuntimeClass", false, {}, {}},
      {"topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", "noderesourcetopology",
       "NodeResourceTopology", false, {"node-res-topo"}, {}},
      {"huygens.io", "v1alpha1", "numaaffinitygroups", "numaaffinitygroup", "NumaAffinityGroup", true, {"nag"},
       {"status"}},
  };
  return types;
}

const ResourceType* FindType(std::string_view group, std::string_view version,
                             std::string_view resource) {
  for (const ResourceType& t : Types()) {
    if (t.group == group && t.version == version && t.resource == resource) return &t;
  }
  return nullptr;
}

const ResourceType* FindQualified(std::string_view qualified) {
  for (const ResourceType& t : Types()) {
    if (t.Qualified() == qualified) return &t;
  }
  return nullptr;
}

// An HTTP answer: status code and JSON body.
struct Reply {
  int code = 200;
  json body;
};

std::string ReasonFor(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "InternalError";
  }
}

// A Status body as the real server writes it (k8s.io/apimachinery/pkg/api/errors).
Reply Failure(int code, std::string reason, std::string message, const ResourceType* type = nullptr,
              std::string_view name = "") {
  json body = {{"kind", "Status"},          {"apiVersion", "v1"}, {"metadata", json::object()},
               {"status", "Failure"},       {"message", message}, {"reason", reason},
               {"code", code}};
  if (type != nullptr) {
    json details = json::object();
    if (!name.empty()) details["name"] = name;
    if (!type->group.empty()) details["group"] = type->group;
    details["kind"] = type->resource;
    body["details"] = details;
  }
  return {code, body};
}

Reply NotFound(const ResourceType& t, std::string_view name) {
  return Failure(404, "NotFound", fmt::format("{} \"{}\" not found", t.Qualified(), name), &t, name);
}

Reply ConflictModified(const ResourceType& t, std::string_view name) {
  return Failure(409, "Conflict",
                 fmt::format("Operation cannot be fulfilled on {} \"{}\": the object has been "
                             "modified; please apply your changes to the latest version and try "
                             "again",
                             t.Qualified(), name),
                 &t, name);
}

std::string Hex(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += fmt::format("{:02x}", c);
  return out;
}

std::optional<std::string> Unhex(std::string_view s) {
  if (s.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < s.size(); i += 2) {
    unsigned value = 0;
    for (std::size_t j = i; j < i + 2; ++j) {
      char c = s[j];
      unsigned digit;
      if (c >= '0' && c <= '9') {
        digit = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<unsigned>(c - 'a' + 10);
      } else {
        return std::nullopt;
      }
      value = value * 16 + digit;
    }
    out.push_back(static_cast<char>(value));
  }
  return out;
}

std::optional<std::int64_t> ParseVersion(std::string_view s) {
  if (s.empty()) return 0;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string NowRfc3339() { return MetaTime(std::chrono::system_clock::now()); }

// Strategic merge patch, reduced to what Huygens and kubectl apply send: a JSON merge patch in
// which `$`-directives are dropped and lists of objects keyed by "name" (containers, env,
// volumes, ...) or, for `conditions`, by "type" (the API's patch merge keys) are merged element by
// element (`$patch: delete` removes one).
json StrategicMerge(json target, const json& patch) {
  if (!patch.is_object()) return patch;
  if (!target.is_object()) target = json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& key = it.key();
    if (!key.empty() && key[0] == '$') continue;
    const json& value = it.value();
    if (value.is_null()) {
      target.erase(key);
    } else if (value.is_object()) {
      target[key] = StrategicMerge(target.contains(key) ? target[key] : json(), value);
    } else if (value.is_array() && target.contains(key) && target[key].is_array()) {
      const char* merge_key = key == "conditions" ? "type" : "name";
      auto keyed = [merge_key](const json& list) {
        return std::all_of(list.begin(), list.end(), [merge_key](const json& e) {
          return e.is_object() && e.contains(merge_key) && e[merge_key].is_string();
        });
      };
      if (!keyed(value) || !keyed(target[key])) {
        target[key] = value;
        continue;
      }
      json& list = target[key];
      for (const json& element : value) {
        auto found = std::find_if(list.begin(), list.end(),
                                  [&](const json& e) { return e[merge_key] == element[merge_key]; });
        bool remove = element.contains("$patch") && element["$patch"] == "delete";
        if (remove) {
          if (found != list.end()) list.erase(found);
        } else if (found != list.end()) {
          *found = StrategicMerge(*found, element);
        } else {
          list.push_back(StrategicMerge(json::object(), element));
        }
      }
    } else {
      target[key] = value;
    }
  }
  return target;
}

using ObjectKey = std::pair<std::string, std::string>;  // namespace, name
using ObjectMap = std::map<ObjectKey, json>;

// One write, retained for watches and for consistent continue pages.
// What kube-apiserver's TaintNodesByCondition admission plugin (on by default; v1.35) does to
// every Node it creates: adds the `node.kubernetes.io/not-ready:NoSchedule` taint unless the
// Node carries it already. The node lifecycle controller removes it once the Node is Ready;
// tests whose Nodes have no kubelet remove it themselves (scheduler/test_cluster.h, AddNode).
void AddNotReadyTaint(json& node) {
  json& spec = node["spec"];
  if (!spec.is_object()) spec = json::object();
  json& taints = spec["taints"];
  if (!taints.is_array()) taints = json::array();
  for (const json& taint : taints) {
    if (taint.is_object() && taint.value("key", "") == "node.kubernetes.io/not-ready" &&
        taint.value("effect", "") == "NoSchedule") {
      return;
    }
  }
  taints.push_back({{"key", "node.kubernetes.io/not-ready"}, {"effect", "NoSchedule"}});
}

struct Event {
  std::int64_t rv;
  std::string type;  // ADDED, MODIFIED, DELETED
  const ResourceType* resource;
  ObjectKey key;
  json object;  // state after the write (for DELETED: the last state)
  json old;     // state before the write; null for ADDED
};

// A parsed request path: /api/v1/... or /apis/<group>/<version>/...
struct Target {
  const ResourceType* type = nullptr;
  std::string ns;
  std::string name;
  std::string subresource;
};

json WatchEvent(std::string_view type, json object) {
  return json{{"type", type}, {"object", std::move(object)}};
}

// One watch forwarded to the upstream server: a worker thread reads the real stream into
// `lines`; the serving thread passes them on. Stop cancels the real stream and joins.
struct ProxiedWatch {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::string> lines;
  bool opened = false;  // the real server answered 2xx
  bool finished = false;
  absl::Status result;
  std::atomic<bool> cancel{false};
  std::thread worker;

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu);
      cancel = true;
      changed.notify_all();
    }
    if (worker.joinable()) worker.join();
  }
};

}  // namespace

struct FakeApiServer::Impl {
  FakeApiServerOptions options;
  std::unique_ptr<httplib::Server> server;
  std::thread listener;
  int port = 0;
  bool tls = false;

  mutable std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, ObjectMap> store;  // by ResourceType::Qualified()
  std::int64_t rv = 1;
  std::deque<Event> events;
  // etcd's compaction floor: a continue token below it is gone (410).
  std::int64_t compacted_rv = 0;
  // The watch cache's floor: a watch from below it gets 410. The cache holds the last
  // options.watch_window events and starts afresh at each RestartApiServer; an etcd compaction
  // does not move it (kube-apiserver v1.35 serves watches from its cache).
  std::int64_t watch_floor_rv = 0;
  bool stopping = false;
  int drop_generation = 0;
  int active_watches = 0;
  std::chrono::milliseconds delay{0};
  struct Fault {
    std::string verb, resource;
    int remaining;
    int code;
  };
  std::vector<Fault> faults;
  std::optional<std::pair<std::string, std::string>> hold;  // HoldRequests' verb and resource
  int held = 0;
  std::condition_variable released;
  std::map<std::pair<std::string, std::string>, int> counts;
  std::mt19937_64 rng{std::random_device{}()};
  std::unique_ptr<Upstream> upstream;  // set in upstream mode
  std::vector<std::weak_ptr<ProxiedWatch>> proxied;  // open forwarded watches

  // --- store primitives (REQUIRES: mu held) ---

  std::string NextVersion() { return std::to_string(++rv); }

  void Record(std::string type, const ResourceType& t, ObjectKey key, json object, json old) {
    events.push_back(Event{rv, std::move(type), &t, std::move(key), std::move(object), std::move(old)});
    while (events.size() > options.watch_window) {
      // Past the window neither a watch nor a continue token can be served from the events.
      compacted_rv = std::max(compacted_rv, events.front().rv);
      watch_floor_rv = std::max(watch_floor_rv, events.front().rv);
      events.pop_front();
    }
    changed.notify_all();
  }

  std::string NewUid() {
    std::uint64_t a = rng(), b = rng();
    return fmt::format("{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}", a >> 32, (a >> 16) & 0xffff,
                       a & 0xfff, b >> 52, b & 0xffffffffffffULL);
  }

  Reply CreateLocked(const ResourceType& t, const std::string& ns, json object) {
    if (!object.is_object()) return Failure(400, "BadRequest", "the body of the request was not a JSON object");
    json& meta = object["metadata"];
    if (!meta.is_object()) meta = json::object();
    if (t.namespaced) {
      std::string body_ns = meta.value("namespace", "");
      if (!body_ns.empty() && !ns.empty() && body_ns != ns) {
        return Failure(400, "BadRequest",
                       "the namespace of the provided object does not match the namespace sent on the request");
      }
      std::string effective = ns.empty() ? body_ns : ns;
      if (effective.empty()) effective = "default";
      meta["namespace"] = effective;
    } else {
      meta.erase("namespace");
    }
    std::string name = meta.value("name", "");
    if (name.empty() && meta.contains("generateName")) {
      static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
      name = meta["generateName"].get<std::string>();
      for (int i = 0; i < 5; ++i) name.push_back(kAlphabet[rng() % (sizeof(kAlphabet) - 1)]);
      meta["name"] = name;
    }
    if (name.empty()) {
      return Failure(422, "Invalid",
                     fmt::format("{} \"\" is invalid: metadata.name: Required value: name or "
                                 "generateName is required",
                                 t.Qualified()),
                     &t);
    }
    ObjectKey key{t.namespaced ? meta["namespace"].get<std::string>() : "", name};
    ObjectMap& objects = store[t.Qualified()];
    if (objects.count(key) != 0) {
      return Failure(409, "AlreadyExists", fmt::format("{} \"{}\" already exists", t.Qualified(), name), &t,
                     name);
    }
    object["apiVersion"] = t.GroupVersion();
    object["kind"] = t.kind;
    // Only a DELETE starts a deletion (the real server clears these on create).
    meta.erase("deletionTimestamp");
    meta.erase("deletionGracePeriodSeconds");
    meta["uid"] = NewUid();
    meta["creationTimestamp"] = NowRfc3339();
    meta["resourceVersion"] = NextVersion();
    if (!meta.contains("generation")) meta["generation"] = 1;
    if (t.kind == "Pod" && t.group.empty()) {
      json& status = object["status"];
      if (!status.is_object()) status = json::object();
      if (!status.contains("phase")) status["phase"] = "Pending";
    }
    if (t.kind == "Node" && t.group.empty()) AddNotReadyTaint(object);
    objects[key] = object;
    Record("ADDED", t, key, object, nullptr);
    return {201, object};
  }

  // Stores `updated` in place of `current`, keeping the fields the server owns.
  Reply StoreUpdate(const ResourceType& t, const ObjectKey& key, const json& current, json updated) {
    if (!updated.is_object()) return Failure(400, "BadRequest", "the body of the request was not a JSON object");
    json& meta = updated["metadata"];
    if (!meta.is_object()) meta = json::object();
    std::string wanted = meta.value("resourceVersion", "");
    if (!wanted.empty() && wanted != current["metadata"].value("resourceVersion", "")) {
      return ConflictModified(t, key.second);
    }
    for (const char* owned : {"uid", "creationTimestamp", "name", "namespace"}) {
      if (current["metadata"].contains(owned)) {
        meta[owned] = current["metadata"][owned];
      } else {
        meta.erase(owned);
      }
    }
    if (std::optional<Reply> refused = KeepDeletion(t, key.second, current["metadata"], meta)) return *refused;
    updated["apiVersion"] = t.GroupVersion();
    updated["kind"] = t.kind;
    std::int64_t generation = current["metadata"].value("generation", 1);
    if (current.value("spec", json()) != updated.value("spec", json())) ++generation;
    meta["generation"] = generation;
    meta["resourceVersion"] = current["metadata"]["resourceVersion"];
    if (updated == current) return {200, updated};  // a no-op write keeps its version
    meta["resourceVersion"] = NextVersion();
    json previous = current;  // `current` may be the stored object that the next line replaces
    if (meta.contains("deletionTimestamp") && meta.value("finalizers", json::array()).empty()) {
      // The last finalizer of an object being deleted is gone: the object goes (as the real
      // server does when the deletion's grace period is 0, always so here).
      store[t.Qualified()].erase(key);
      Record("DELETED", t, key, updated, std::move(previous));
      return {200, updated};
    }
    store[t.Qualified()][key] = updated;
    Record("MODIFIED", t, key, updated, std::move(previous));
    return {200, updated};
  }

  // The deletion fields of an update's metadata `meta`, as the real server (v1.35) keeps them:
  // an update never starts, changes or ends a deletion (422 for one that sets a deletionTimestamp
  // the object does not have), and adds no finalizer to an object being deleted (422). Returns
  // the refusal, or nullopt when the update may go on.
  static std::optional<Reply> KeepDeletion(const ResourceType& t, const std::string& name, const json& current, json& meta) {
    if (!current.contains("deletionTimestamp")) {
      if (!meta.contains("deletionTimestamp")) return std::nullopt;
      return Failure(422, "Invalid",
                     fmt::format("{} \"{}\" is invalid: metadata.deletionTimestamp: Invalid value: {}: field is "
                                 "immutable",
                                 t.Qualified(), name, meta["deletionTimestamp"].dump()),
                     &t, name);
    }
    for (const char* owned : {"deletionTimestamp", "deletionGracePeriodSeconds"}) meta[owned] = current[owned];
    const json before = current.value("finalizers", json::array());
    for (const json& f : meta.value("finalizers", json::array())) {
      if (std::find(before.begin(), before.end(), f) == before.end()) {
        return Failure(422, "Invalid",
                       fmt::format("{} \"{}\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be "
                                   "added if the object is being deleted, found new finalizers [{}]",
                                   t.Qualified(), name, f.is_string() ? f.get<std::string>() : f.dump()),
                       &t, name);
      }
    }
    return std::nullopt;
  }

  Reply DeleteLocked(const ResourceType& t, const ObjectKey& key, const json& delete_options) {
    ObjectMap& objects = store[t.Qualified()];
    auto it = objects.find(key);
    if (it == objects.end()) return NotFound(t, key.second);
    const json& meta = it->second["metadata"];
    if (delete_options.is_object() && delete_options.contains("preconditions") &&
        delete_options["preconditions"].is_object()) {
      const json& pre = delete_options["preconditions"];
      std::string want_rv = pre.value("resourceVersion", "");
      std::string want_uid = pre.value("uid", "");
      std::string have_rv = meta.value("resourceVersion", "");
      std::string have_uid = meta.value("uid", "");
      if (!want_rv.empty() && want_rv != have_rv) {
        return Failure(409, "Conflict",
                       fmt::format("Operation cannot be fulfilled on {} \"{}\": Precondition failed: "
                                   "ResourceVersion in precondition: {}, ResourceVersion in object meta: {}",
                                   t.Qualified(), key.second, want_rv, have_rv),
                       &t, key.second);
      }
      if (!want_uid.empty() && want_uid != have_uid) {
        return Failure(409, "Conflict",
                       fmt::format("Operation cannot be fulfilled on {} \"{}\": Precondition failed: "
                                   "UID in precondition: {}, UID in object meta: {}",
                                   t.Qualified(), key.second, want_uid, have_uid),
                       &t, key.second);
      }
    }
    json last = it->second;
    json old = last;
    if (!meta.value("finalizers", json::array()).empty()) {
      // Finalizers pending: the object stays, being deleted, until an update removes the last
      // one. A second DELETE changes nothing.
      if (meta.contains("deletionTimestamp")) return {200, last};
      last["metadata"]["deletionTimestamp"] = NowRfc3339();
      last["metadata"]["deletionGracePeriodSeconds"] = 0;
      last["metadata"]["resourceVersion"] = NextVersion();
      it->second = last;
      Record("MODIFIED", t, key, last, std::move(old));
      return {200, last};
    }
    last["metadata"]["resourceVersion"] = NextVersion();
    objects.erase(it);
    Record("DELETED", t, key, last, std::move(old));
    return {200, last};
  }

  // The objects of `t` as they were at version `at`, rebuilt by undoing later events.
  // REQUIRES: at >= compacted_rv.
  ObjectMap SnapshotAt(const ResourceType& t, std::int64_t at) {
    ObjectMap snapshot = store[t.Qualified()];
    for (auto e = events.rbegin(); e != events.rend() && e->rv > at; ++e) {
      if (e->resource != &t) continue;
      if (e->type == "ADDED") {
        snapshot.erase(e->key);
      } else {
        snapshot[e->key] = e->old;
      }
    }
    return snapshot;
  }

  // --- HTTP handlers ---

  Reply List(const Target& target, const httplib::Request& req) {
    const ResourceType& t = *target.type;
    auto labels = Selector::ParseLabels(req.get_param_value("labelSelector"));
    if (!labels.ok()) return Failure(400, "BadRequest", std::string(labels.status().message()));
    auto fields = Selector::ParseFields(req.get_param_value("fieldSelector"));
    if (!fields.ok()) return Failure(400, "BadRequest", std::string(fields.status().message()));
    std::size_t limit = 0;
    if (req.has_param("limit")) {
      auto l = ParseVersion(req.get_param_value("limit"));
      if (!l) return Failure(400, "BadRequest", "limit must be a non-negative integer");
      limit = static_cast<std::size_t>(*l);
    }
    std::lock_guard<std::mutex> lock(mu);
    std::int64_t list_rv = rv;
    std::optional<ObjectKey> after;
    ObjectMap snapshot_storage;
    const ObjectMap* objects = &store[t.Qualified()];
    if (std::string token = req.get_param_value("continue"); !token.empty()) {
      auto decoded = Unhex(token);
      std::vector<std::string> parts;
      if (decoded) parts = absl::StrSplit(*decoded, '\n');
      auto token_rv = parts.size() == 3 ? ParseVersion(parts[0]) : std::nullopt;
      if (!token_rv) return Failure(400, "BadRequest", "continue key is not valid");
      if (*token_rv < compacted_rv) {
        return Failure(410, "Expired",
                       "The provided continue parameter is too old to display a consistent list "
                       "result. You can start a new list without the continue parameter.");
      }
      list_rv = *token_rv;
      after = ObjectKey{parts[1], parts[2]};
      if (!events.empty() && events.back().rv > list_rv) {
        snapshot_storage = SnapshotAt(t, list_rv);
        objects = &snapshot_storage;
      }
    }
    json items = json::array();
    auto it = after ? objects->upper_bound(*after) : objects->begin();
    std::optional<ObjectKey> last;
    for (; it != objects->end(); ++it) {
      if (limit != 0 && items.size() >= limit) break;
      if (!target.ns.empty() && it->first.first != target.ns) continue;
      if (!labels->Matches(it->second) || !fields->Matches(it->second)) continue;
      items.push_back(it->second);
      last = it->first;
    }
    json meta = {{"resourceVersion", std::to_string(list_rv)}};
    if (it != objects->end() && last) {
      meta["continue"] = Hex(fmt::format("{}\n{}\n{}", list_rv, last->first, last->second));
    }
    return {200, json{{"kind", t.kind + "List"},
                      {"apiVersion", t.GroupVersion()},
                      {"metadata", meta},
                      {"items", items}}};
  }

  Reply Binding(const Target& target, const json& body) {
    const ResourceType& t = *target.type;
    std::string node = body.is_object() && body.contains("target") && body["target"].is_object()
                           ? body["target"].value("name", "")
                           : "";
    if (node.empty()) {
      return Failure(422, "Invalid",
                     fmt::format("Binding.core \"{}\" is invalid: target.name: Required value", target.name));
    }
    std::lock_guard<std::mutex> lock(mu);
    ObjectKey key{target.ns, target.name};
    auto& objects = store[t.Qualified()];
    auto it = objects.find(key);
    if (it == objects.end()) return NotFound(t, target.name);
    json pod = it->second;
    // The Binding's uid and resourceVersion are preconditions, as on the real server.
    const json meta = body.value("metadata", json::object());
    std::string want_uid = meta.value("uid", "");
    if (!want_uid.empty() && want_uid != pod["metadata"].value("uid", "")) {
      return Failure(409, "Conflict",
                     fmt::format("Operation cannot be fulfilled on pods \"{}\": Precondition failed: UID in "
                                 "precondition: {}, UID in object meta: {}",
                                 target.name, want_uid, pod["metadata"].value("uid", "")),
                     &t, target.name);
    }
    std::string want_rv = meta.value("resourceVersion", "");
    if (!want_rv.empty() && want_rv != pod["metadata"].value("resourceVersion", "")) return ConflictModified(t, target.name);
    if (pod["metadata"].contains("deletionTimestamp")) {
      return Failure(409, "Conflict",
                     fmt::format("Operation cannot be fulfilled on pods/binding \"{}\": pod {} is being deleted, "
                                 "cannot be assigned to a host",
                                 target.name, target.name),
                     &t, target.name);
    }
    if (pod.contains("spec") && pod["spec"].contains("schedulingGates") && !pod["spec"]["schedulingGates"].empty()) {
      return Failure(409, "Conflict", fmt::format("pod {} has non-empty .spec.schedulingGates", target.name), &t,
                     target.name);
    }
    std::string bound = pod.contains("spec") ? pod["spec"].value("nodeName", "") : "";
    if (!bound.empty()) {
      return Failure(409, "Conflict",
                     fmt::format("Operation cannot be fulfilled on pods/binding \"{}\": pod {} is "
                                 "already assigned to node \"{}\"",
                                 target.name, target.name, bound),
                     &t, target.name);
    }
    pod["spec"]["nodeName"] = node;
    // The Binding's annotations are merged onto the pod in the same write (the real server's
    // BindingREST does so), which lets a scheduler record its decision atomically with it.
    if (meta.contains("annotations") && meta["annotations"].is_object()) {
      for (const auto& [k, v] : meta["annotations"].items()) pod["metadata"]["annotations"][k] = v;
    }
    // PodScheduled becomes True, replacing a False one (a scheduler's Unschedulable).
    json& conditions = pod["status"]["conditions"];
    if (!conditions.is_array()) conditions = json::array();
    conditions.erase(std::remove_if(conditions.begin(), conditions.end(),
                                    [](const json& c) { return c.is_object() && c.value("type", "") == "PodScheduled"; }),
                     conditions.end());
    conditions.push_back({{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", NowRfc3339()}});
    Reply stored = StoreUpdate(t, key, it->second, pod);
    if (stored.code != 200) return stored;
    return {201, json{{"kind", "Status"},
                      {"apiVersion", "v1"},
                      {"metadata", json::object()},
                      {"status", "Success"},
                      {"code", 201}}};
  }

  Reply Patch(const Target& target, const httplib::Request& req) {
    const ResourceType& t = *target.type;
    json patch;
    try {
      patch = json::parse(req.body);
    } catch (const json::exception& e) {
      return Failure(400, "BadRequest", fmt::format("the patch is not valid JSON: {}", e.what()));
    }
    std::string type = req.get_header_value("Content-Type");
    type = type.substr(0, type.find(';'));
    std::lock_guard<std::mutex> lock(mu);
    ObjectKey key{target.ns, target.name};
    auto& objects = store[t.Qualified()];
    auto it = objects.find(key);
    if (it == objects.end()) return NotFound(t, target.name);
    json patched;
    try {
      if (type == "application/merge-patch+json") {
        patched = it->second;
        patched.merge_patch(patch);
      } else if (type == "application/json-patch+json") {
        patched = it->second.patch(patch);
      } else if (type == "application/strategic-merge-patch+json") {
        patched = StrategicMerge(it->second, patch);
      } else {
        return Failure(415, "UnsupportedMediaType",
                       fmt::format("the body of the request was in an unknown format - accepted media "
                                   "types include: application/json-patch+json, "
                                   "application/merge-patch+json, application/strategic-merge-patch+json "
                                   "(got {:?})",
                                   type));
      }
    } catch (const json::exception& e) {
      return Failure(422, "Invalid", fmt::format("the patch could not be applied: {}", e.what()));
    }
    return StoreUpdate(t, key, it->second, std::move(patched));
  }

  Reply Dispatch(const httplib::Request& req, const Target& target, std::string_view verb) {
    const ResourceType& t = *target.type;
    if (!target.subresource.empty() &&
        std::find(t.subresources.begin(), t.subresources.end(), target.subresource) == t.subresources.end()) {
      return Failure(404, "NotFound", "the server could not find the requested resource");
    }
    json body;
    if (!req.body.empty() && verb != "patch") {
      try {
        body = json::parse(req.body);
      } catch (const json::exception& e) {
        return Failure(400, "BadRequest", fmt::format("the body is not valid JSON: {}", e.what()));
      }
    }
    if (target.subresource == "binding") {
      if (verb != "create") return Failure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
      return Binding(target, body);
    }
    if (verb == "list") return List(target, req);
    if (verb == "create") {
      std::lock_guard<std::mutex> lock(mu);
      return CreateLocked(t, target.ns, std::move(body));
    }
    if (verb == "patch") return Patch(target, req);
    std::lock_guard<std::mutex> lock(mu);
    ObjectKey key{target.ns, target.name};
    auto& objects = store[t.Qualified()];
    if (verb == "delete") return DeleteLocked(t, key, body);
    auto it = objects.find(key);
    if (it == objects.end()) return NotFound(t, target.name);
    if (verb == "get") return {200, it->second};
    if (verb == "update") {
      if (body.is_object() && body.contains("metadata") && body["metadata"].value("name", target.name) != target.name) {
        return Failure(400, "BadRequest", "the name of the object does not match the name on the URL");
      }
      return StoreUpdate(t, key, it->second, std::move(body));
    }
    return Failure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
  }

  // Serves a watch as a chunked stream. Runs on the worker thread for the whole stream.
  void Watch(const Target& target, const httplib::Request& req, httplib::Response& res) {
    const ResourceType* t = target.type;
    auto labels = Selector::ParseLabels(req.get_param_value("labelSelector"));
    auto fields = Selector::ParseFields(req.get_param_value("fieldSelector"));
    auto from = ParseVersion(req.get_param_value("resourceVersion"));
    if (!labels.ok() || !fields.ok() || !from) {
      Reply r = Failure(400, "BadRequest", "bad labelSelector, fieldSelector or resourceVersion");
      res.status = r.code;
      res.set_content(r.body.dump(), "application/json");
      return;
    }
    bool bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
    std::optional<Clock::time_point> deadline;
    if (auto secs = ParseVersion(req.get_param_value("timeoutSeconds")); secs && *secs > 0) {
      deadline = Clock::now() + std::chrono::seconds(*secs);
    }
    std::string ns = target.ns;
    auto matches = [ns, labels = *labels, fields = *fields](const ObjectKey& key, const json& object) {
      return (ns.empty() || key.first == ns) && !object.is_null() && labels.Matches(object) &&
             fields.Matches(object);
    };

    // State shared with the provider: the position in the event log and the opening events.
    struct Stream {
      std::int64_t cursor = 0;
      std::int64_t start = 0;  // the version the watch started from
      std::vector<json> pending;
      int generation = 0;
      bool expired = false;
      Clock::time_point next_bookmark;
    };
    // When the next bookmark is due, as kube-apiserver's watch cache schedules them (v1.35,
    // cacheWatcher.nextBookmarkTime): every bookmark_interval, and 2 s before the watch's
    // timeout; never again once that moment has passed.
    auto next_bookmark = [interval = options.bookmark_interval, deadline](Clock::time_point now) {
      Clock::time_point next = now + interval;
      if (deadline) {
        Clock::time_point before_timeout = *deadline - std::chrono::seconds(2);
        if (before_timeout < now) return Clock::time_point::max();
        next = std::min(next, before_timeout);
      }
      return next;
    };
    auto stream = std::make_shared<Stream>();
    {
      std::lock_guard<std::mutex> lock(mu);
      stream->generation = drop_generation;
      stream->next_bookmark = next_bookmark(Clock::now());
      if (*from == 0) {
        for (const auto& [key, object] : store[t->Qualified()]) {
          if (matches(key, object)) stream->pending.push_back(WatchEvent("ADDED", object));
        }
        stream->cursor = rv;
      } else if (*from < watch_floor_rv) {
        stream->expired = true;
        stream->pending.push_back(WatchEvent(
            "ERROR", Failure(410, "Expired",
                             fmt::format("too old resource version: {} ({})", *from, watch_floor_rv))
                         .body));
      } else {
        stream->cursor = *from;
      }
      stream->start = stream->cursor;
      ++active_watches;
    }
    res.status = 200;
    res.set_chunked_content_provider(
        kWatchContentType,
        [this, t, stream, matches, bookmarks, deadline, next_bookmark](std::size_t, httplib::DataSink& sink) {
          auto flush = [&](std::vector<json>& out) {
            for (const json& e : out) {
              std::string line = e.dump() + "\n";
              if (!sink.write(line.data(), line.size())) return false;
            }
            out.clear();
            return true;
          };
          if (!flush(stream->pending)) return false;
          if (stream->expired) {
            sink.done();
            return true;
          }
          std::unique_lock<std::mutex> lock(mu);
          auto wake = deadline.value_or(Clock::time_point::max());
          if (bookmarks) wake = std::min(wake, stream->next_bookmark);
          changed.wait_until(lock, wake, [&] {
            return stopping || drop_generation != stream->generation || rv > stream->cursor;
          });
          if (stopping || drop_generation != stream->generation) return false;
          if (stream->cursor < watch_floor_rv) {
            stream->expired = true;
            stream->pending.push_back(WatchEvent(
                "ERROR", Failure(410, "Expired",
                                 fmt::format("too old resource version: {} ({})", stream->cursor,
                                             watch_floor_rv))
                             .body));
            return true;
          }
          auto e = std::upper_bound(events.begin(), events.end(), stream->cursor,
                                    [](std::int64_t v, const Event& ev) { return v < ev.rv; });
          for (; e != events.end(); ++e) {
            if (e->resource != t) continue;
            bool now = e->type != "DELETED" && matches(e->key, e->object);
            bool before = !e->old.is_null() && matches(e->key, e->old);
            if (now && before) {
              stream->pending.push_back(WatchEvent("MODIFIED", e->object));
            } else if (now) {
              stream->pending.push_back(WatchEvent("ADDED", e->object));
            } else if (before) {
              json gone = e->type == "DELETED" ? e->object : e->old;
              gone["metadata"]["resourceVersion"] = std::to_string(e->rv);
              stream->pending.push_back(WatchEvent("DELETED", gone));
            }
          }
          stream->cursor = rv;
          auto now = Clock::now();
          // A bookmark tells a version the watch has not reached yet; the real server sends none
          // while nothing happened since the watch's start version.
          if (bookmarks && now >= stream->next_bookmark && stream->cursor > stream->start) {
            stream->pending.push_back(WatchEvent(
                "BOOKMARK", json{{"kind", t->kind},
                                 {"apiVersion", t->GroupVersion()},
                                 {"metadata", {{"resourceVersion", std::to_string(stream->cursor)}}}}));
            stream->next_bookmark = next_bookmark(now);
          }
          lock.unlock();
          if (!flush(stream->pending)) return false;
          if (deadline && now >= *deadline) sink.done();
          return true;
        },
        [this](bool) {
          std::lock_guard<std::mutex> lock(mu);
          --active_watches;
        });
  }

  // Returns the injected fault for this request, if any, and counts the request; waits first
  // while HoldRequests holds it.
  std::optional<int> CountAndFault(const std::string& verb, const std::string& resource) {
    std::unique_lock<std::mutex> lock(mu);
    ++counts[{verb, resource}];
    auto matches_hold = [&] {
      return hold && (hold->first == "*" || hold->first == verb) && (hold->second == "*" || hold->second == resource);
    };
    if (matches_hold()) {
      ++held;
      released.wait(lock, [&] { return stopping || !matches_hold(); });
      --held;
    }
    for (Fault& f : faults) {
      if (f.remaining > 0 && (f.verb == "*" || f.verb == verb) && (f.resource == "*" || f.resource == resource)) {
        --f.remaining;
        return f.code;
      }
    }
    return std::nullopt;
  }

  void Serve(const httplib::Request& req, httplib::Response& res) {
    std::chrono::milliseconds wait;
    {
      std::lock_guard<std::mutex> lock(mu);
      wait = delay;
    }
    if (wait.count() > 0) std::this_thread::sleep_for(wait);
    auto send = [&](const Reply& r) {
      res.status = r.code;
      res.set_content(r.body.dump(), "application/json");
    };
    if (upstream) {
      ServeUpstream(req, res);
      return;
    }
    if (auto discovery = Discovery(req.path); discovery && req.method == "GET") {
      send(*discovery);
      return;
    }
    std::optional<Target> target = Parse(req.path);
    if (!target) {
      res.status = 404;
      res.set_content("404 page not found\n", "text/plain; charset=utf-8");
      return;
    }
    if (target->type == nullptr) {
      send(Failure(404, "NotFound", "the server could not find the requested resource"));
      return;
    }
    std::string verb;
    bool collection = target->name.empty();
    if (req.method == "GET") {
      verb = collection ? (req.get_param_value("watch") == "true" || req.get_param_value("watch") == "1" ? "watch" : "list") : "get";
    } else if (req.method == "POST") {
      verb = "create";
    } else if (req.method == "PUT") {
      verb = "update";
    } else if (req.method == "PATCH") {
      verb = "patch";
    } else if (req.method == "DELETE") {
      verb = "delete";
    }
    bool valid = !verb.empty() && (collection ? (verb == "list" || verb == "watch" || verb == "create")
                                              : (verb != "create" || target->subresource == "binding"));
    if (!valid) {
      send(Failure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
      return;
    }
    std::string resource = target->type->resource;
    if (!target->subresource.empty()) resource += "/" + target->subresource;
    if (auto fault = CountAndFault(verb, resource)) {
      send(Failure(*fault, ReasonFor(*fault), fmt::format("injected fault for {} {}", verb, resource)));
      return;
    }
    if (verb == "watch") {
      Watch(*target, req, res);
      return;
    }
    send(Dispatch(req, *target, verb));
  }

  // Upstream mode: counts and faults by verb and resource as for the store, then forwards.
  void ServeUpstream(const httplib::Request& req, httplib::Response& res) {
    HttpRequest forward{req.method, req.path, {}, req.body, req.get_header_value("Content-Type")};
    for (const auto& [key, value] : req.params) forward.query.emplace_back(key, value);
    auto [verb, resource] = UpstreamVerb(req);
    if (!verb.empty()) {
      if (auto fault = CountAndFault(verb, resource)) {
        Reply r = Failure(*fault, ReasonFor(*fault), fmt::format("injected fault for {} {}", verb, resource));
        res.status = r.code;
        res.set_content(r.body.dump(), "application/json");
        return;
      }
    }
    if (verb == "watch") {
      ProxyWatch(std::move(forward), res);
      return;
    }
    auto answer = upstream->Forward(forward);
    if (!answer.ok()) {
      Reply r = Failure(502, "InternalError", fmt::format("upstream: {}", std::string(answer.status().message())));
      res.status = r.code;
      res.set_content(r.body.dump(), "application/json");
      return;
    }
    res.status = answer->code;
    res.set_content(answer->body, answer->content_type.empty() ? "application/json" : answer->content_type);
  }

  // The verb and resource a request counts under (the names FailNext takes), from its path
  // alone: "" for discovery and other non-resource paths.
  static std::pair<std::string, std::string> UpstreamVerb(const httplib::Request& req) {
    std::vector<std::string> parts = absl::StrSplit(req.path, '/', absl::SkipEmpty());
    std::size_t at;
    if (parts.size() >= 3 && parts[0] == "api") {
      at = 2;
    } else if (parts.size() >= 4 && parts[0] == "apis") {
      at = 3;
    } else {
      return {};
    }
    std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(at), parts.end());
    // namespaces/<ns>/<resource>... but not the namespace object itself (namespaces/<name>).
    if (rest.size() >= 3 && rest[0] == "namespaces") rest.erase(rest.begin(), rest.begin() + 2);
    if (rest.empty()) return {};
    std::string resource = rest[0];
    if (rest.size() == 3) resource += "/" + rest[2];
    bool collection = rest.size() == 1;
    std::string watch = req.get_param_value("watch");
    if (req.method == "GET") {
      return {collection ? (watch == "true" || watch == "1" ? "watch" : "list") : "get", resource};
    }
    if (req.method == "POST") return {"create", resource};
    if (req.method == "PUT") return {"update", resource};
    if (req.method == "PATCH") return {"patch", resource};
    if (req.method == "DELETE") return {"delete", resource};
    return {};
  }

  // Forwards a watch. The real server's answer is awaited before answering, so that an error
  // answer keeps its code and a 2xx one is sent on at once, as the real server flushes its
  // headers before any event; then each event line is passed on as it arrives. DropWatches and
  // shutdown cut the stream without its closing chunk, as on the store.
  void ProxyWatch(HttpRequest forward, httplib::Response& res) {
    auto w = std::make_shared<ProxiedWatch>();
    {
      std::lock_guard<std::mutex> lock(mu);
      ++active_watches;
      std::erase_if(proxied, [](const std::weak_ptr<ProxiedWatch>& p) { return p.expired(); });
      proxied.push_back(w);
    }
    Upstream* up = upstream.get();
    w->worker = std::thread([w, up, forward = std::move(forward)] {
      absl::Status s = up->ForwardWatch(
          forward,
          [&w](std::string_view line) {
            std::lock_guard<std::mutex> lock(w->mu);
            w->lines.emplace_back(line);
            w->changed.notify_all();
            return true;
          },
          &w->cancel,
          [&w] {
            std::lock_guard<std::mutex> lock(w->mu);
            w->opened = true;
            w->changed.notify_all();
          });
      std::lock_guard<std::mutex> lock(w->mu);
      w->result = s;
      w->finished = true;
      w->changed.notify_all();
    });
    auto end = [this, w] {
      w->Stop();
      std::lock_guard<std::mutex> lock(mu);
      --active_watches;
    };
    {
      std::unique_lock<std::mutex> lock(w->mu);
      w->changed.wait(lock, [&] { return w->opened || !w->lines.empty() || w->finished || w->cancel.load(); });
      if (w->lines.empty() && w->finished && HttpCode(w->result) != 0) {
        int code = HttpCode(w->result);
        Reply r = Failure(code, Reason(w->result), std::string(w->result.message()));
        lock.unlock();
        end();
        res.status = code;
        res.set_content(r.body.dump(), "application/json");
        return;
      }
    }
    res.set_chunked_content_provider(
        kWatchContentType,
        [w](std::size_t, httplib::DataSink& sink) {
          std::unique_lock<std::mutex> lock(w->mu);
          w->changed.wait_for(lock, std::chrono::seconds(1),
                              [&] { return !w->lines.empty() || w->finished || w->cancel.load(); });
          if (w->cancel.load()) return false;  // dropped: no closing chunk
          while (!w->lines.empty()) {
            std::string line = std::move(w->lines.front()) + "\n";
            w->lines.pop_front();
            if (!sink.write(line.data(), line.size())) return false;
          }
          if (w->finished) {
            if (!w->result.ok()) return false;  // the real stream broke: break ours too
            sink.done();
          }
          return true;
        },
        [end](bool) { end(); });
  }

  std::optional<Target> Parse(const std::string& path) {
    std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
    std::string group, version;
    std::size_t at;
    if (parts.size() >= 3 && parts[0] == "api") {
      version = parts[1];
      at = 2;
    } else if (parts.size() >= 4 && parts[0] == "apis") {
      group = parts[1];
      version = parts[2];
      at = 3;
    } else {
      return std::nullopt;
    }
    std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(at), parts.end());
    Target target;
    if (rest.size() >= 3 && rest[0] == "namespaces") {
      target.ns = rest[1];
      rest.erase(rest.begin(), rest.begin() + 2);
    }
    if (rest.empty() || rest.size() > 3) return Target{};
    target.type = FindType(group, version, rest[0]);
    if (target.type != nullptr && target.type->namespaced == false && !target.ns.empty()) return Target{};
    if (rest.size() >= 2) target.name = rest[1];
    if (rest.size() == 3) target.subresource = rest[2];
    if (target.type != nullptr && target.type->namespaced && !target.name.empty() && target.ns.empty()) {
      return Target{};
    }
    return target;
  }

  std::optional<Reply> Discovery(const std::string& path) {
    if (path == "/version") {
      return Reply{200, json{{"major", "1"},
                             {"minor", "32"},
                             {"gitVersion", "v1.32.0-huygens-fake"},
                             {"gitCommit", "0000000000000000000000000000000000000000"},
                             {"gitTreeState", "clean"},
                             {"buildDate", "2026-01-01T00:00:00Z"},
                             {"goVersion", "go1.23.0"},
                             {"compiler", "gc"},
                             {"platform", "linux/amd64"}}};
    }
    if (path == "/api") {
      return Reply{200, json{{"kind", "APIVersions"},
                             {"versions", {"v1"}},
                             {"serverAddressByClientCIDRs",
                              {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", fmt::format("127.0.0.1:{}", port)}}}}}};
    }
    if (path == "/apis") {
      json groups = json::array();
      for (const ResourceType& t : Types()) {
        if (t.group.empty()) continue;
        bool seen = std::any_of(groups.begin(), groups.end(), [&](const json& g) { return g["name"] == t.group; });
        if (seen) continue;
        json v = {{"groupVersion", t.GroupVersion()}, {"version", t.version}};
        groups.push_back({{"name", t.group}, {"versions", {v}}, {"preferredVersion", v}});
      }
      return Reply{200, json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}}};
    }
    // OpenAPI v3, reduced to what kubectl reads: the index of group versions, and per group
    // version the PATCH operations with their x-kubernetes-group-version-kind and the
    // fieldValidation parameter (kubectl checks it to choose server-side validation).
    if (path == "/openapi/v3") {
      json paths = json::object();
      for (const ResourceType& t : Types()) {
        std::string gv = t.group.empty() ? "api/" + t.version : "apis/" + t.GroupVersion();
        paths[gv] = {{"serverRelativeURL", "/openapi/v3/" + gv + "?hash=0"}};
      }
      return Reply{200, json{{"paths", paths}}};
    }
    for (const ResourceType& t : Types()) {
      std::string prefix = t.group.empty() ? "/api/" + t.version : "/apis/" + t.GroupVersion();
      if (path == "/openapi/v3" + prefix) {
        json paths = json::object();
        for (const ResourceType& r : Types()) {
          if (r.GroupVersion() != t.GroupVersion()) continue;
          std::string item = prefix + (r.namespaced ? "/namespaces/{namespace}/" : "/") + r.resource + "/{name}";
          paths[item] = {{"patch",
                          {{"x-kubernetes-group-version-kind",
                            {{"group", r.group}, {"version", r.version}, {"kind", r.kind}}},
                           {"parameters",
                            {{{"name", "fieldValidation"}, {"in", "query"}, {"schema", {{"type", "string"}}}}}}}}};
        }
        return Reply{200, json{{"openapi", "3.0.0"},
                               {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
                               {"paths", paths},
                               {"components", {{"schemas", json::object()}}}}};
      }
      if (path == "/apis/" + t.group && !t.group.empty()) {
        json v = {{"groupVersion", t.GroupVersion()}, {"version", t.version}};
        return Reply{200, json{{"kind", "APIGroup"}, {"apiVersion", "v1"}, {"name", t.group},
                               {"versions", {v}}, {"preferredVersion", v}}};
      }
      if (path != prefix) continue;
      json resources = json::array();
      for (const ResourceType& r : Types()) {
        if (r.GroupVersion() != t.GroupVersion()) continue;
        json entry = {{"name", r.resource},
                      {"singularName", r.singular},
                      {"namespaced", r.namespaced},
                      {"kind", r.kind},
                      {"verbs", {"create", "delete", "get", "list", "patch", "update", "watch"}}};
        if (!r.short_names.empty()) entry["shortNames"] = r.short_names;
        resources.push_back(entry);
        for (const std::string& sub : r.subresources) {
          bool binding = sub == "binding";
          resources.push_back({{"name", r.resource + "/" + sub},
                               {"singularName", ""},
                               {"namespaced", r.namespaced},
                               {"kind", binding ? "Binding" : r.kind},
                               {"verbs", binding ? json{"create"} : json{"get", "patch", "update"}}});
        }
      }
      return Reply{200, json{{"kind", "APIResourceList"},
                             {"apiVersion", "v1"},
                             {"groupVersion", t.GroupVersion()},
                             {"resources", resources}}};
    }
    return std::nullopt;
  }
};

FakeApiServer::FakeApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(FakeApiServerOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.upstream) {
    auto upstream = Upstream::Connect(*options.upstream);
    if (!upstream.ok()) return upstream.status();
    if (options.wipe_upstream) {
      if (absl::Status s = (*upstream)->Wipe(); !s.ok()) return s;
    }
    impl->upstream = std::move(*upstream);
  }
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    impl->server = std::make_unique<httplib::SSLServer>(options.tls_cert_file.c_str(), options.tls_key_file.c_str());
    impl->tls = true;
  } else {
    impl->server = std::make_unique<httplib::Server>();
  }
  if (!impl->server->is_valid()) {
    return absl::InvalidArgumentError(fmt::format("fake apiserver: cannot use TLS certificate {:?} and key {:?}",
                                                  options.tls_cert_file, options.tls_key_file));
  }
  int threads = options.worker_threads;
  impl->server->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  impl->server->set_keep_alive_max_count(1000);
  // As kube-apiserver's connections (Go sets TCP_NODELAY on every one): an answer written in two
  // parts is not held for the client's delayed ACK. Accepted sockets inherit it on Linux.
  impl->server->set_tcp_nodelay(true);
  Impl* raw = impl.get();
  auto handler = [raw](const httplib::Request& req, httplib::Response& res) { raw->Serve(req, res); };
  impl->server->Get(".*", handler);
  impl->server->Post(".*", handler);
  impl->server->Put(".*", handler);
  impl->server->Patch(".*", handler);
  impl->server->Delete(".*", handler);
  if (options.port == 0) {
    impl->port = impl->server->bind_to_any_port(options.host);
  } else if (impl->server->bind_to_port(options.host, options.port)) {
    impl->port = options.port;
  } else {
    impl->port = -1;
  }
  if (impl->port <= 0) {
    return absl::UnavailableError(fmt::format("fake apiserver: cannot bind {}:{}", options.host, options.port));
  }
  impl->listener = std::thread([raw] { raw->server->listen_after_bind(); });
  return std::unique_ptr<FakeApiServer>(new FakeApiServer(std::move(impl)));
}

FakeApiServer::~FakeApiServer() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    impl_->changed.notify_all();
    impl_->released.notify_all();
    for (auto& weak : impl_->proxied) {
      if (auto w = weak.lock()) {
        std::lock_guard<std::mutex> wl(w->mu);
        w->cancel = true;
        w->changed.notify_all();
      }
    }
  }
  impl_->server->stop();
  if (impl_->listener.joinable()) impl_->listener.join();
}

int FakeApiServer::port() const { return impl_->port; }

std::string FakeApiServer::url() const {
  return fmt::format("{}://127.0.0.1:{}", impl_->tls ? "https" : "http", impl_->port);
}

bool FakeApiServer::upstream() const { return impl_->upstream != nullptr; }

absl::StatusOr<json> FakeApiServer::Create(std::string_view resource, json object) {
  if (impl_->upstream) return impl_->upstream->Create(resource, std::move(object));
  const ResourceType* t = FindQualified(resource);
  if (t == nullptr) return absl::NotFoundError(fmt::format("fake apiserver: unknown resource {:?}", resource));
  std::lock_guard<std::mutex> lock(impl_->mu);
  Reply r = impl_->CreateLocked(*t, "", std::move(object));
  if (r.code == 201) return r.body;
  std::string message = r.body.value("message", "");
  if (r.code == 409) return absl::AlreadyExistsError(message);
  return absl::InvalidArgumentError(message);
}

absl::StatusOr<json> FakeApiServer::MergePatch(std::string_view resource, std::string_view ns, std::string_view name,
                                               const json& patch) {
  if (impl_->upstream) return impl_->upstream->MergePatch(resource, ns, name, patch);
  const ResourceType* t = FindQualified(resource);
  if (t == nullptr) return absl::NotFoundError(fmt::format("fake apiserver: unknown resource {:?}", resource));
  std::lock_guard<std::mutex> lock(impl_->mu);
  ObjectKey key{std::string(ns), std::string(name)};
  auto& objects = impl_->store[t->Qualified()];
  auto it = objects.find(key);
  if (it == objects.end()) return absl::NotFoundError(fmt::format("{} {:?} not found", t->Qualified(), name));
  json patched = it->second;
  patched.merge_patch(patch);
  Reply r = impl_->StoreUpdate(*t, key, it->second, std::move(patched));
  if (r.code == 200) return r.body;
  return absl::InvalidArgumentError(r.body.value("message", ""));
}

std::optional<json> FakeApiServer::Get(std::string_view resource, std::string_view ns,
                                       std::string_view name) const {
  if (impl_->upstream) return impl_->upstream->Get(resource, ns, name);
  const ResourceType* t = FindQualified(resource);
  if (t == nullptr) return std::nullopt;
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto objects = impl_->store.find(t->Qualified());
  if (objects == impl_->store.end()) return std::nullopt;
  auto it = objects->second.find(ObjectKey{std::string(ns), std::string(name)});
  if (it == objects->second.end()) return std::nullopt;
  return it->second;
}

std::vector<json> FakeApiServer::List(std::string_view resource, std::string_view ns) const {
  if (impl_->upstream) return impl_->upstream->List(resource, ns);
  std::vector<json> out;
  const ResourceType* t = FindQualified(resource);
  if (t == nullptr) return out;
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto objects = impl_->store.find(t->Qualified());
  if (objects == impl_->store.end()) return out;
  for (const auto& [key, object] : objects->second) {
    if (ns.empty() || key.first == ns) out.push_back(object);
  }
  return out;
}

std::int64_t FakeApiServer::resource_version() const {
  if (impl_->upstream) return impl_->upstream->ResourceVersion();
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->rv;
}

void FakeApiServer::FailNext(std::string verb, std::string resource, int count, int http_code) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->faults.push_back({std::move(verb), std::move(resource), count, http_code});
}

void FakeApiServer::DropWatches() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& weak : impl_->proxied) {
    if (auto w = weak.lock()) {
      std::lock_guard<std::mutex> wl(w->mu);
      w->cancel = true;
      w->changed.notify_all();
    }
  }
  impl_->proxied.clear();
  ++impl_->drop_generation;
  impl_->changed.notify_all();
}

void FakeApiServer::HoldRequests(std::string verb, std::string resource) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->hold.emplace(std::move(verb), std::move(resource));
  impl_->released.notify_all();  // what the new hold does not match goes on
}

void FakeApiServer::ReleaseRequests() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->hold.reset();
  impl_->released.notify_all();
}

int FakeApiServer::HeldRequests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->held;
}

void FakeApiServer::SetDelay(std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->delay = delay;
}

void FakeApiServer::Compact() {
  if (impl_->upstream) {
    if (absl::Status s = impl_->upstream->Compact(); !s.ok()) spdlog::error("fake apiserver: {}", std::string(s.message()));
    return;
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->compacted_rv = impl_->rv;
}

void FakeApiServer::RestartApiServer() {
  if (impl_->upstream) {
    if (absl::Status s = impl_->upstream->RestartApiServer(); !s.ok()) {
      spdlog::error("fake apiserver: {}", std::string(s.message()));
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->watch_floor_rv = impl_->rv;
  }
  DropWatches();
}

int FakeApiServer::RequestCount(std::string_view verb, std::string_view resource) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->counts.find({std::string(verb), std::string(resource)});
  return it == impl_->counts.end() ? 0 : it->second;
}

int FakeApiServer::ActiveWatches() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->active_watches;
}

}  // namespace huygens::kube::testing

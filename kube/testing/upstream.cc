#include "kube/testing/upstream.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "kube/api_error.h"

namespace huygens::kube::testing {
namespace {

using nlohmann::json;

const std::set<std::string, std::less<>>& SystemNamespaces() {
  static const std::set<std::string, std::less<>> names = {"default", "kube-system", "kube-public",
                                                           "kube-node-lease"};
  return names;
}

bool HasStatusSubresource(const ResourceRef& r) {
  return (r.group.empty() && (r.resource == "pods" || r.resource == "nodes")) || &r == &NumaAffinityGroups();
}

}  // namespace

const ResourceRef* ResourceByQualifiedName(std::string_view qualified) {
  for (const ResourceRef* r : {&Pods(), &Nodes(), &Leases(), &Events(), &NodeResourceTopologies(), &Namespaces(),
                               &CoreEvents(), &NumaAffinityGroups(), &RuntimeClasses()}) {
    std::string name = r->group.empty() ? r->resource : r->resource + "." + r->group;
    if (name == qualified) return r;
  }
  return nullptr;
}

std::optional<UpstreamOptions> UpstreamFromEnvironment() {
  const char* kubeconfig = std::getenv("HUYGENS_TEST_UPSTREAM_KUBECONFIG");
  if (kubeconfig == nullptr || *kubeconfig == '\0') return std::nullopt;
  UpstreamOptions options{kubeconfig, "", ""};
  // testbed/cluster.sh writes DIR/restart-apiserver beside DIR/admin.kubeconfig.
  if (auto restart = std::filesystem::path(kubeconfig).parent_path() / "restart-apiserver";
      std::filesystem::exists(restart)) {
    options.restart_command = restart.string();
  }
  if (const char* etcd = std::getenv("HUYGENS_TEST_UPSTREAM_ETCD"); etcd != nullptr) {
    options.etcd_url = etcd;
  } else {
    // testbed/cluster.sh writes etcd's URL beside the kubeconfig.
    std::ifstream in(std::filesystem::path(kubeconfig).parent_path() / "etcd-url");
    std::getline(in, options.etcd_url);
  }
  return options;
}

Upstream::Upstream(std::unique_ptr<Client> client, std::unique_ptr<RestClient> raw, UpstreamOptions options)
    : client_(std::move(client)),
      raw_(std::move(raw)),
      etcd_url_(std::move(options.etcd_url)),
      restart_command_(std::move(options.restart_command)) {}

absl::StatusOr<std::unique_ptr<Upstream>> Upstream::Connect(const UpstreamOptions& options) {
  auto config = LoadKubeconfig(options.kubeconfig);
  if (!config.ok()) return config.status();
  config->qps = 0;  // the tests' own clients carry the rate limits under test
  config->user_agent = "huygens-test-upstream";
  auto raw = RestClient::Create(*config);
  if (!raw.ok()) return raw.status();
  auto rest = RestClient::Create(*config);
  if (!rest.ok()) return rest.status();
  auto client = std::make_unique<Client>(std::move(*rest));
  return std::unique_ptr<Upstream>(new Upstream(std::move(client), std::move(*raw), options));
}

absl::StatusOr<HttpAnswer> Upstream::Forward(const HttpRequest& request) { return raw_->Exchange(request); }

absl::Status Upstream::ForwardWatch(const HttpRequest& request, const std::function<bool(std::string_view)>& on_line,
                                    const std::atomic<bool>* cancel, const std::function<void()>& on_open) {
  return raw_->Stream(request, on_line, cancel, on_open);
}

absl::Status Upstream::Wipe() {
  auto namespaces = client_->List(Namespaces(), "");
  if (!namespaces.ok()) return namespaces.status();
  auto delete_collection = [&](const ResourceRef& r, std::string_view ns,
                               std::vector<std::pair<std::string, std::string>> query) -> absl::Status {
    query.emplace_back("gracePeriodSeconds", "0");
    auto answer = raw_->Exchange(HttpRequest{"DELETE", r.CollectionPath(ns), std::move(query), "", ""});
    if (!answer.ok()) return answer.status();
    // 404: the resource is not installed (the CRDs before deploy/crd).
    if (answer->code != 404 && (answer->code < 200 || answer->code >= 300)) {
      return ApiError(answer->code, answer->body, fmt::format("DELETE {}", r.CollectionPath(ns)));
    }
    return absl::OkStatus();
  };
  // A pod a test left held by a finalizer would outlive the DELETE below: let it go first.
  auto pods = client_->List(Pods(), "");
  if (!pods.ok()) return pods.status();
  for (const json& pod : pods->items) {
    const json& meta = pod["metadata"];
    if (meta.value("finalizers", json::array()).empty()) continue;
    auto released = client_->MergePatch(Pods(), meta.value("namespace", ""), meta.value("name", ""),
                                        {{"metadata", {{"finalizers", nullptr}}}});
    if (!released.ok() && !IsApiNotFound(released.status())) return released.status();
  }
  std::vector<std::string> doomed;
  for (const json& n : namespaces->items) {
    std::string ns = n["metadata"]["name"];
    for (const ResourceRef* r : {&Pods(), &CoreEvents(), &NumaAffinityGroups()}) {
      if (absl::Status s = delete_collection(*r, ns, {}); !s.ok()) return s;
    }
    // The apiserver's own identity leases live in kube-system and are left alone, as are the
    // node heartbeats of kube-node-lease.
    if (ns != "kube-node-lease") {
      if (absl::Status s = delete_collection(Leases(), ns, {{"labelSelector", "!apiserver.kubernetes.io/identity"}});
          !s.ok()) {
        return s;
      }
    }
    if (SystemNamespaces().count(ns) == 0 && !n["metadata"].contains("deletionTimestamp")) {
      doomed.push_back(ns);
    }
  }
  for (const ResourceRef* r : {&Nodes(), &NodeResourceTopologies()}) {
    if (absl::Status s = delete_collection(*r, "", {}); !s.ok()) return s;
  }
  for (const std::string& ns : doomed) {
    absl::Status s = client_->Delete(Namespaces(), "", ns);
    if (!s.ok() && !IsApiNotFound(s)) return s;
  }
  // Namespaces end when the namespace controller has emptied them.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    auto left = client_->List(Namespaces(), "");
    if (!left.ok()) return left.status();
    std::vector<std::string> remaining;
    for (const json& n : left->items) {
      std::string ns = n["metadata"]["name"];
      if (SystemNamespaces().count(ns) == 0) remaining.push_back(ns);
    }
    if (remaining.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(
          fmt::format("upstream wipe: namespace {} is still terminating after 60 s", remaining.front()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return absl::OkStatus();
}

absl::StatusOr<json> Upstream::Create(std::string_view resource, json object) {
  const ResourceRef* r = ResourceByQualifiedName(resource);
  if (r == nullptr) return absl::NotFoundError(fmt::format("upstream: unknown resource {:?}", resource));
  std::string ns;
  if (r->namespaced) {
    ns = object["metadata"].value("namespace", "");
    if (ns.empty()) ns = "default";
  }
  object["apiVersion"] = r->ApiVersion();
  object["kind"] = r->kind;
  json wanted_status = object.contains("status") ? object["status"] : json();
  auto created = client_->Create(*r, ns, object);
  if (!created.ok() || !wanted_status.is_object() || !HasStatusSubresource(*r)) return created;
  json merged = created->value("status", json::object());
  merged.merge_patch(wanted_status);
  if (merged == created->value("status", json::object())) return created;
  json update = *created;
  update["status"] = merged;
  auto stored = client_->rest().Send(HttpRequest{"PUT", r->ObjectPath(ns, (*created)["metadata"]["name"].get<std::string>(), "status"),
                                                 {}, update.dump(), "application/json"});
  return stored;
}

std::optional<json> Upstream::Get(std::string_view resource, std::string_view ns, std::string_view name) {
  const ResourceRef* r = ResourceByQualifiedName(resource);
  if (r == nullptr) return std::nullopt;
  auto object = client_->Get(*r, ns, name);
  if (!object.ok()) return std::nullopt;
  return *object;
}

absl::StatusOr<json> Upstream::MergePatch(std::string_view resource, std::string_view ns, std::string_view name,
                                          const json& patch) {
  const ResourceRef* r = ResourceByQualifiedName(resource);
  if (r == nullptr) return absl::NotFoundError(fmt::format("upstream: unknown resource {:?}", resource));
  return client_->MergePatch(*r, ns, name, patch);
}

std::vector<json> Upstream::List(std::string_view resource, std::string_view ns) {
  const ResourceRef* r = ResourceByQualifiedName(resource);
  if (r == nullptr) return {};
  auto list = client_->List(*r, ns);
  if (!list.ok()) return {};
  return list->items;
}

std::int64_t Upstream::ResourceVersion() {
  // A list of an empty page from etcd (not the watch cache) carries etcd's current revision.
  auto list = client_->rest().Send(HttpRequest{"GET", Namespaces().CollectionPath(""), {{"limit", "1"}}, "", ""});
  if (!list.ok()) return 0;
  return std::atoll(list->value("metadata", json::object()).value("resourceVersion", "0").c_str());
}

absl::Status Upstream::Compact() {
  if (etcd_url_.empty()) return absl::FailedPreconditionError("upstream: no etcd URL to compact (HUYGENS_TEST_UPSTREAM_ETCD)");
  RestConfig config;
  config.server = etcd_url_;
  config.qps = 0;
  auto etcd = RestClient::Create(config);
  if (!etcd.ok()) return etcd.status();
  // etcd's JSON gateway: the status carries the current revision; compaction takes it.
  auto status = (*etcd)->Send(HttpRequest{"POST", "/v3/maintenance/status", {}, "{}", "application/json"});
  if (!status.ok()) return status.status();
  std::string revision = (*status)["header"].value("revision", "");
  if (revision.empty()) return absl::InternalError("upstream: etcd's status has no header.revision");
  auto compacted = (*etcd)->Send(HttpRequest{"POST", "/v3/kv/compaction", {},
                                             json{{"revision", revision}, {"physical", true}}.dump(),
                                             "application/json"});
  return compacted.status();
}

absl::Status Upstream::RestartApiServer() {
  if (restart_command_.empty()) {
    return absl::FailedPreconditionError("upstream: no command restarts this kube-apiserver (UpstreamOptions::restart_command)");
  }
  // The command is a path (testbed/cluster.sh's DIR/restart-apiserver), quoted for the shell.
  std::string quoted = "'";
  for (char c : restart_command_) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  int rc = std::system(quoted.c_str());
  if (rc != 0) return absl::InternalError(fmt::format("upstream: {} exited with status {}", restart_command_, rc));
  return absl::OkStatus();
}

}  // namespace huygens::kube::testing

#include "agent/publisher.h"

#include <chrono>
#include <utility>

#include "base/quantity.h"
#include "fmt/format.h"
#include "kube/api_error.h"
#include "kube/meta_time.h"
#include "kube/resource.h"
#include "topology/nrt.h"

namespace huygens::agent {
namespace {

using nlohmann::json;

// Whether the owner reference `ref` names a Node (core/v1).
bool IsNodeOwner(const json& ref) {
  return ref.is_object() && ref.value("apiVersion", json()) == "v1" && ref.value("kind", json()) == "Node";
}

// The part of an NRT object the publisher owns: what it compares and writes: the spec, Huygens'
// annotations and the Node owner references. The pod traffic annotation is owned when
// `own_pod_traffic`.
json OwnedContent(const json& object, bool own_pod_traffic) {
  json content = json::object();
  for (const char* key : {"topologyPolicies", "attributes", "zones"}) {
    if (object.contains(key)) content[key] = object[key];
  }
  const json* annotations = nullptr;
  if (auto m = object.find("metadata"); m != object.end() && m->is_object()) {
    if (auto a = m->find("annotations"); a != m->end() && a->is_object()) annotations = &*a;
  }
  for (const char* key : {kCpuTopologyAnnotation, kPoolsAnnotation, kPodTrafficAnnotation, kAgentHeartbeatAnnotation}) {
    if (key == kPodTrafficAnnotation && !own_pod_traffic) continue;
    if (annotations != nullptr && annotations->contains(key)) {
      content["annotations"][key] = (*annotations)[key];
    }
  }
  if (auto m = object.find("metadata"); m != object.end() && m->is_object()) {
    if (auto refs = m->find("ownerReferences"); refs != m->end() && refs->is_array()) {
      for (const json& ref : *refs) {
        if (IsNodeOwner(ref)) content["nodeOwners"].push_back(ref);
      }
    }
  }
  return content;
}

// The owner reference of the Node `name` with `uid` (no controller, no blockOwnerDeletion: the
// latter would need the right to update the Node's finalizers).
json NodeOwnerReference(const std::string& name, const std::string& uid) {
  return {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", name}, {"uid", uid}};
}

}  // namespace

const char* ToString(PublishResult r) {
  switch (r) {
    case PublishResult::kWritten: return "written";
    case PublishResult::kUnchanged: return "unchanged";
    case PublishResult::kDeferred: return "deferred";
  }
  return "unknown";
}

Publisher::Publisher(kube::Client* client, Clock* clock, PublisherOptions options)
    : client_(client), clock_(clock), options_(std::move(options)) {}

absl::StatusOr<json> Publisher::BuildObject(const NodePublication& publication) const {
  NrtInput in;
  in.node_name = options_.node_name;
  in.topology = options_.topology.get();
  in.system_cpus = options_.system_cpus;
  in.exclusive_cpus = publication.exclusive;
  in.mode = ToString(options_.mode);
  in.policy = ToString(options_.policy);
  in.scope = ToString(options_.scope);
  in.memory_manager_policy = options_.memory_manager_policy;
  in.devices = publication.devices;
  in.memory_reserved = options_.memory_reserved;
  in.memory_used = publication.memory_used;
  for (const auto& [numa, factor] : publication.capacity) {
    in.zone_attributes[numa][kCapacityFactorAttribute] = fmt::format("{}", factor);
  }
  absl::StatusOr<json> object = BuildNrt(in);
  if (object.ok() && publication.pod_traffic.has_value() && !publication.pod_traffic->empty()) {
    (*object)["metadata"]["annotations"][kPodTrafficAnnotation] = *publication.pod_traffic;
  }
  return object;
}

absl::StatusOr<PublishResult> Publisher::Publish(const NodePublication& publication) {
  absl::StatusOr<json> object = BuildObject(publication);
  if (!object.ok()) return object.status();
  if (!node_uid_.has_value()) {
    absl::StatusOr<json> node = client_->Get(kube::Nodes(), "", options_.node_name);
    const json uid = node.ok() ? node->value("metadata", json::object()).value("uid", json()) : json();
    if (!uid.is_string() || uid.get<std::string>().empty()) {
      return absl::Status(node.ok() ? absl::StatusCode::kFailedPrecondition : node.status().code(),
                          fmt::format("its owner, Node {}: {}; not published until the Node can be read",
                                      options_.node_name,
                                      node.ok() ? "no metadata.uid" : std::string(node.status().message())));
    }
    node_uid_ = uid.get<std::string>();
  }
  (*object)["metadata"]["ownerReferences"] = json::array({NodeOwnerReference(options_.node_name, *node_uid_)});
  // The heartbeat: a fresh value once per interval, else the one written last, so that it
  // alone makes a change once per interval.
  const Clock::TimePoint now = clock_->Now();
  const bool beat_due = options_.heartbeat_interval.count() > 0 &&
                        (!last_beat_time_.has_value() || now >= *last_beat_time_ + options_.heartbeat_interval);
  const std::string beat = beat_due ? kube::MicroTime(std::chrono::system_clock::now()) : last_beat_;
  if (!beat.empty()) (*object)["metadata"]["annotations"][kAgentHeartbeatAnnotation] = beat;
  const bool own_pod_traffic = publication.pod_traffic.has_value();
  const json content = OwnedContent(*object, own_pod_traffic);
  if (last_written_.has_value() && *last_written_ == content) {
    pending_until_.reset();
    return PublishResult::kUnchanged;
  }
  if (last_write_time_.has_value() && now < *last_write_time_ + options_.min_interval) {
    pending_until_ = *last_write_time_ + options_.min_interval;
    return PublishResult::kDeferred;
  }
  const kube::ResourceRef& nrt = kube::NodeResourceTopologies();
  absl::StatusOr<json> current = client_->Get(nrt, "", options_.node_name);
  if (!current.ok() && !kube::IsApiNotFound(current.status())) return current.status();
  if (current.ok() && OwnedContent(*current, own_pod_traffic) == content) {
    last_written_ = content;
    pending_until_.reset();
    return PublishResult::kUnchanged;
  }
  absl::StatusOr<json> stored;
  if (!current.ok()) {
    stored = client_->Create(nrt, "", *object);
  } else {
    // Keep the server's metadata (labels, other annotations, resourceVersion as precondition).
    json updated = *current;
    for (const char* key : {"topologyPolicies", "attributes", "zones"}) updated[key] = (*object)[key];
    for (const auto& [key, value] : (*object)["metadata"]["annotations"].items()) {
      updated["metadata"]["annotations"][key] = value;
    }
    if (publication.pod_traffic == "" && updated["metadata"]["annotations"].is_object()) {
      updated["metadata"]["annotations"].erase(kPodTrafficAnnotation);
    }
    // Our Node's reference replaces any Node owner (an NRT of an older agent has none; one of a
    // Node deleted and registered again names the old uid); other owners are kept.
    json owners = json::array();
    if (const json refs = updated["metadata"].value("ownerReferences", json::array()); refs.is_array()) {
      for (const json& ref : refs) {
        if (!IsNodeOwner(ref)) owners.push_back(ref);
      }
    }
    owners.push_back(NodeOwnerReference(options_.node_name, *node_uid_));
    updated["metadata"]["ownerReferences"] = std::move(owners);
    stored = client_->Update(nrt, updated);
  }
  if (!stored.ok()) return stored.status();
  last_written_ = content;
  last_write_time_ = now;
  if (beat_due) {
    last_beat_time_ = now;
    last_beat_ = beat;
  }
  pending_until_.reset();
  return PublishResult::kWritten;
}

std::optional<Clock::TimePoint> Publisher::PendingUntil() const { return pending_until_; }

absl::StatusOr<bool> Publisher::PublishExtendedResources(const std::map<std::string, int>& resources) {
  if (extended_published_ == resources) return false;
  absl::StatusOr<json> node = client_->Get(kube::Nodes(), "", options_.node_name);
  if (!node.ok()) return node.status();
  const json status = node->value("status", json::object());
  json wanted = json::object();
  bool says_all = true;
  for (const auto& [name, count] : resources) {
    const std::string value = std::to_string(count);
    wanted[name] = value;
    for (const char* list : {"capacity", "allocatable"}) {
      // The apiserver stores a quantity in canonical form (1000 reads back "1k"): compared as
      // amounts, or the Node would be patched at every pass.
      const json l = status.value(list, json::object());
      const json said = l.is_object() ? l.value(name, json()) : json();
      absl::StatusOr<int64_t> amount =
          said.is_string() ? ParseMemoryBytes(said.get<std::string>()) : absl::InvalidArgumentError("absent");
      if (!amount.ok() || *amount != count) says_all = false;
    }
  }
  if (says_all) {
    extended_published_ = resources;
    return false;
  }
  const json patch = {{"status", {{"capacity", wanted}, {"allocatable", wanted}}}};
  absl::StatusOr<json> patched = client_->rest().Send(
      kube::HttpRequest{"PATCH", kube::Nodes().ObjectPath("", options_.node_name, "status"), {},
                        patch.dump(), "application/merge-patch+json"});
  if (!patched.ok()) return patched.status();
  extended_published_ = resources;
  return true;
}

}  // namespace huygens::agent

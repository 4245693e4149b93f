#include "node/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json_fields.h"
#include "base/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace huygens {
namespace {

using json_fields::Child;
using json_fields::Element;
using json_fields::FieldError;
using json_fields::ReadRequired;
using nlohmann::json;

uint64_t Fnv1a64(std::string_view data) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string ChecksumOf(const json& payload) {
  return fmt::format("fnv1a64:{:016x}", Fnv1a64(payload.dump()));
}

json ContainerToJson(const ContainerSpec& c) {
  return json{{"name", c.name},
              {"cpuRequestMilli", c.cpu_request_milli},
              {"cpuLimitMilli", c.cpu_limit_milli},
              {"memoryRequestBytes", c.memory_request_bytes},
              {"memoryLimitBytes", c.memory_limit_bytes},
              {"isolatedCpus", c.isolated_cpus},
              {"restartable", c.restartable}};
}

json SpecToJson(const PodSpec& p) {
  json j{{"namespace", p.namespace_name},
         {"name", p.name},
         {"podCpuRequestMilli", p.pod_cpu_request_milli},
         {"podCpuLimitMilli", p.pod_cpu_limit_milli},
         {"affinityGroup", p.affinity_group},
         {"initContainers", json::array()},
         {"containers", json::array()}};
  for (const ContainerSpec& c : p.init_containers) j["initContainers"].push_back(ContainerToJson(c));
  for (const ContainerSpec& c : p.containers) j["containers"].push_back(ContainerToJson(c));
  if (p.cpu_policy) j["cpuPolicy"] = ToString(*p.cpu_policy);
  if (p.topology_policy) j["topologyPolicy"] = ToString(*p.topology_policy);
  if (p.bind_policy) j["bindPolicy"] = ToString(*p.bind_policy);
  return j;
}

// The fields of a container or pod spec, as SpecToJson writes them; unknown keys are ignored.
absl::StatusOr<ContainerSpec> ContainerFromJson(const json& j, std::string_view path, bool init) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  ContainerSpec c;
  c.init = init;
  HUYGENS_ASSIGN_OR_RETURN(c.name, ReadRequired(j, path, "name", json_fields::ReadString));
  for (auto [key, field] : {std::pair{"cpuRequestMilli", &c.cpu_request_milli},
                            std::pair{"cpuLimitMilli", &c.cpu_limit_milli},
                            std::pair{"memoryRequestBytes", &c.memory_request_bytes},
                            std::pair{"memoryLimitBytes", &c.memory_limit_bytes},
                            std::pair{"isolatedCpus", &c.isolated_cpus}}) {
    HUYGENS_ASSIGN_OR_RETURN(*field, ReadRequired(j, path, key, json_fields::ReadInt64));
  }
  HUYGENS_ASSIGN_OR_RETURN(c.restartable,
                           ReadRequired(j, path, "restartable", json_fields::ReadBool));
  return c;
}

absl::StatusOr<std::vector<ContainerSpec>> ContainersFromJson(const json& list,
                                                              std::string_view path, bool init) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(list, path));
  std::vector<ContainerSpec> out;
  for (size_t i = 0; i < list.size(); ++i) {
    ContainerSpec c;
    HUYGENS_ASSIGN_OR_RETURN(c, ContainerFromJson(list[i], Element(path, i), init));
    out.push_back(std::move(c));
  }
  return out;
}

// An optional policy name (`parse` is ParseCpuPolicy, ...); nullopt when absent.
template <typename T>
absl::StatusOr<std::optional<T>> PolicyFromJson(const json& j, std::string_view path,
                                                const char* key,
                                                std::optional<T> (*parse)(const std::string&)) {
  const json* v = json_fields::Find(j, key);
  if (v == nullptr) return std::nullopt;
  const std::string field = Child(path, key);
  std::string name;
  HUYGENS_ASSIGN_OR_RETURN(name, json_fields::ReadString(*v, field));
  std::optional<T> policy = parse(name);
  if (!policy) return FieldError(field, fmt::format("{:?} is not a known value", name));
  return policy;
}

absl::StatusOr<PodSpec> SpecFromJson(const json& j, std::string_view path, std::string uid) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  PodSpec p;
  p.uid = std::move(uid);
  for (auto [key, field] : {std::pair{"namespace", &p.namespace_name}, std::pair{"name", &p.name},
                            std::pair{"affinityGroup", &p.affinity_group}}) {
    HUYGENS_ASSIGN_OR_RETURN(*field, ReadRequired(j, path, key, json_fields::ReadString));
  }
  for (auto [key, field] : {std::pair{"podCpuRequestMilli", &p.pod_cpu_request_milli},
                            std::pair{"podCpuLimitMilli", &p.pod_cpu_limit_milli}}) {
    HUYGENS_ASSIGN_OR_RETURN(*field, ReadRequired(j, path, key, json_fields::ReadInt64));
  }
  const auto containers = [](bool init) {
    return [init](const json& list, std::string_view at) {
      return ContainersFromJson(list, at, init);
    };
  };
  HUYGENS_ASSIGN_OR_RETURN(p.init_containers,
                           ReadRequired(j, path, "initContainers", containers(true)));
  HUYGENS_ASSIGN_OR_RETURN(p.containers, ReadRequired(j, path, "containers", containers(false)));
  HUYGENS_ASSIGN_OR_RETURN(p.cpu_policy, PolicyFromJson(j, path, "cpuPolicy", ParseCpuPolicy));
  HUYGENS_ASSIGN_OR_RETURN(p.topology_policy,
                           PolicyFromJson(j, path, "topologyPolicy", ParseTopologyPolicy));
  HUYGENS_ASSIGN_OR_RETURN(p.bind_policy, PolicyFromJson(j, path, "bindPolicy", ParseBindPolicy));
  return p;
}

// One entry of "pods": its uid, spec and allocation.
absl::StatusOr<std::pair<PodSpec, PodAllocation>> PodFromJson(const json& j,
                                                              std::string_view path) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(j, path));
  std::string uid;
  HUYGENS_ASSIGN_OR_RETURN(uid, ReadRequired(j, path, "uid", json_fields::ReadString));
  const json* spec = nullptr;
  HUYGENS_ASSIGN_OR_RETURN(spec, json_fields::Required(j, path, "spec"));
  const json* allocation = nullptr;
  HUYGENS_ASSIGN_OR_RETURN(allocation, json_fields::Required(j, path, "allocation"));
  std::pair<PodSpec, PodAllocation> pod;
  HUYGENS_ASSIGN_OR_RETURN(pod.first, SpecFromJson(*spec, Child(path, "spec"), uid));
  HUYGENS_ASSIGN_OR_RETURN(
      pod.second, AllocationFromJsonValue(*allocation, Child(path, "allocation"), std::move(uid)));
  return pod;
}

// The content of a parsed file: the checksum over the rest, then kind, version, node and pods.
// Errors name the field (the caller adds "checkpoint: "); DataLoss for a checksum mismatch.
absl::StatusOr<NodeCheckpoint> ContentFromJson(json& doc) {
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectObject(doc, ""));
  std::string stored;
  HUYGENS_ASSIGN_OR_RETURN(stored, ReadRequired(doc, "", "checksum", json_fields::ReadString));
  doc.erase("checksum");
  if (const std::string computed = ChecksumOf(doc); computed != stored) {
    return absl::DataLossError(
        fmt::format("checksum: file says {}, content gives {}", stored, computed));
  }
  std::string kind;
  HUYGENS_ASSIGN_OR_RETURN(kind, ReadRequired(doc, "", "kind", json_fields::ReadString));
  if (kind != "huygens-node-state") return FieldError("kind", "not huygens-node-state");
  int version = 0;
  HUYGENS_ASSIGN_OR_RETURN(version, ReadRequired(doc, "", "version", json_fields::ReadInt));
  if (version != kCheckpointVersion) {
    return FieldError("version", fmt::format("{} is not supported (this reader knows {})",
                                             version, kCheckpointVersion));
  }
  NodeCheckpoint cp;
  HUYGENS_ASSIGN_OR_RETURN(cp.node, ReadRequired(doc, "", "node", json_fields::ReadString));
  const json* pods = nullptr;
  HUYGENS_ASSIGN_OR_RETURN(pods, json_fields::Required(doc, "", "pods"));
  HUYGENS_RETURN_IF_ERROR(json_fields::ExpectArray(*pods, "pods"));
  for (size_t i = 0; i < pods->size(); ++i) {
    std::pair<PodSpec, PodAllocation> pod;
    HUYGENS_ASSIGN_OR_RETURN(pod, PodFromJson((*pods)[i], Element("pods", i)));
    cp.pods.push_back(std::move(pod));
  }
  return cp;
}

absl::Status SysError(std::string_view what, const std::string& path) {
  return absl::InternalError(fmt::format("checkpoint {}: {}: {}", path, what, std::strerror(errno)));
}

}  // namespace

NodeCheckpoint CheckpointOf(const NodeState& node) {
  NodeCheckpoint cp;
  cp.node = node.Config().name;
  for (const auto& [uid, alloc] : node.Pods()) {
    cp.pods.emplace_back(*node.SpecOf(uid), alloc);  // every allocated pod has its spec
  }
  return cp;
}

std::string EncodeCheckpoint(const NodeCheckpoint& cp) {
  json doc{{"kind", "huygens-node-state"},
           {"version", kCheckpointVersion},
           {"node", cp.node},
           {"pods", json::array()}};
  for (const auto& [spec, alloc] : cp.pods) {
    doc["pods"].push_back(json{{"uid", spec.uid},
                               {"spec", SpecToJson(spec)},
                               {"allocation", json::parse(AllocationToJson(alloc))}});
  }
  doc["checksum"] = ChecksumOf(doc);  // computed before the key exists: over the payload
  return doc.dump() + "\n";
}

absl::StatusOr<NodeCheckpoint> DecodeCheckpoint(std::string_view bytes) {
  json doc;
  HUYGENS_ASSIGN_OR_RETURN(doc, json_fields::ParseJson(bytes, "checkpoint"));
  absl::StatusOr<NodeCheckpoint> cp = ContentFromJson(doc);
  if (!cp.ok()) {
    return absl::Status(cp.status().code(), fmt::format("checkpoint: {}", Msg(cp.status())));
  }
  return cp;
}

absl::Status CheckpointFile::Write(const NodeCheckpoint& checkpoint) const {
  const std::string bytes = EncodeCheckpoint(checkpoint);
  const std::string tmp = path_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return SysError("open " + tmp, path_);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return SysError("write " + tmp, path_);
    }
    done += static_cast<size_t>(n);
  }
  hooks_.after_step("tmp-written");
  if (::fsync(fd) != 0) {
    ::close(fd);
    return SysError("fsync " + tmp, path_);
  }
  if (::close(fd) != 0) return SysError("close " + tmp, path_);
  hooks_.after_step("tmp-synced");
  if (::rename(tmp.c_str(), path_.c_str()) != 0) return SysError("rename", path_);
  hooks_.after_step("renamed");
  std::string dir = std::filesystem::path(path_).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return SysError("open directory " + dir, path_);
  const int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) return SysError("fsync directory " + dir, path_);
  hooks_.after_step("dir-synced");
  return absl::OkStatus();
}

absl::StatusOr<CheckpointFile::LoadResult> CheckpointFile::Load() const {
  LoadResult result;
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return result;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return SysError("open", path_);
  std::stringstream ss;
  ss << in.rdbuf();
  auto cp = DecodeCheckpoint(ss.str());
  if (cp.ok()) {
    result.state = LoadResult::State::kLoaded;
    result.checkpoint = *std::move(cp);
    return result;
  }
  result.state = LoadResult::State::kCorrupt;
  result.error = std::string(cp.status().message());
  const std::string base = fmt::format("{}.corrupt-{}", path_, hooks_.now());
  std::string target = base;
  for (int n = 1; std::filesystem::exists(target, ec); ++n) target = fmt::format("{}-{}", base, n);
  if (::rename(path_.c_str(), target.c_str()) != 0) return SysError("rename to " + target, path_);
  result.moved_to = target;
  return result;
}

}  // namespace huygens

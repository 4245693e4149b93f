#include "node/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace huygens {
namespace {

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

// Throws nlohmann::json exceptions on a wrong type or missing key; the caller converts them.
ContainerSpec ContainerFromJson(const json& j, bool init) {
  ContainerSpec c;
  c.name = j.at("name").get<std::string>();
  c.cpu_request_milli = j.at("cpuRequestMilli").get<int64_t>();
  c.cpu_limit_milli = j.at("cpuLimitMilli").get<int64_t>();
  c.memory_request_bytes = j.at("memoryRequestBytes").get<int64_t>();
  c.memory_limit_bytes = j.at("memoryLimitBytes").get<int64_t>();
  c.isolated_cpus = j.at("isolatedCpus").get<int64_t>();
  c.restartable = j.at("restartable").get<bool>();
  c.init = init;
  return c;
}

template <typename T>
std::optional<T> Named(const json& j, const char* key,
                       std::optional<T> (*parse)(const std::string&)) {
  if (!j.contains(key)) return std::nullopt;
  auto v = parse(j.at(key).get<std::string>());
  if (!v) throw std::invalid_argument(fmt::format("{}: unknown value", key));
  return v;
}

PodSpec SpecFromJson(const json& j, std::string uid) {
  PodSpec p;
  p.uid = std::move(uid);
  p.namespace_name = j.at("namespace").get<std::string>();
  p.name = j.at("name").get<std::string>();
  p.pod_cpu_request_milli = j.at("podCpuRequestMilli").get<int64_t>();
  p.pod_cpu_limit_milli = j.at("podCpuLimitMilli").get<int64_t>();
  p.affinity_group = j.at("affinityGroup").get<std::string>();
  for (const json& c : j.at("initContainers")) p.init_containers.push_back(ContainerFromJson(c, true));
  for (const json& c : j.at("containers")) p.containers.push_back(ContainerFromJson(c, false));
  p.cpu_policy = Named<CpuPolicy>(j, "cpuPolicy", ParseCpuPolicy);
  p.topology_policy = Named<TopologyPolicy>(j, "topologyPolicy", ParseTopologyPolicy);
  p.bind_policy = Named<BindPolicy>(j, "bindPolicy", ParseBindPolicy);
  return p;
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
  json doc = json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("checkpoint: not a JSON object");
  }
  auto sum = doc.find("checksum");
  if (sum == doc.end() || !sum->is_string()) {
    return absl::InvalidArgumentError("checkpoint: checksum: missing or not a string");
  }
  const std::string stored = sum->get<std::string>();
  doc.erase("checksum");
  if (const std::string computed = ChecksumOf(doc); computed != stored) {
    return absl::DataLossError(
        fmt::format("checkpoint: checksum: file says {}, content gives {}", stored, computed));
  }
  NodeCheckpoint cp;
  std::string field = "kind";
  try {
    if (doc.at("kind").get<std::string>() != "huygens-node-state") {
      return absl::InvalidArgumentError("checkpoint: kind: not huygens-node-state");
    }
    field = "version";
    if (doc.at("version").get<int>() != kCheckpointVersion) {
      return absl::InvalidArgumentError(fmt::format(
          "checkpoint: version: {} is not supported (this reader knows {})",
          doc.at("version").dump(), kCheckpointVersion));
    }
    field = "node";
    cp.node = doc.at("node").get<std::string>();
    const json& pods = doc.at("pods");
    for (size_t i = 0; i < pods.size(); ++i) {
      field = fmt::format("pods[{}]", i);
      const std::string uid = pods[i].at("uid").get<std::string>();
      PodSpec spec = SpecFromJson(pods[i].at("spec"), uid);
      auto alloc = AllocationFromJson(pods[i].at("allocation").dump(), uid);
      if (!alloc.ok()) {
        return absl::InvalidArgumentError(
            fmt::format("checkpoint: {}.allocation: {}", field, std::string(alloc.status().message())));
      }
      cp.pods.emplace_back(std::move(spec), *std::move(alloc));
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(fmt::format("checkpoint: {}: {}", field, e.what()));
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

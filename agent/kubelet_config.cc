#include "agent/kubelet_config.h"

#include <charconv>
#include <string>

#include "base/quantity.h"
#include "base/status.h"
#include "fmt/format.h"
#include "yaml-cpp/yaml.h"

namespace huygens::agent {
namespace {

constexpr std::string_view kMemory = "memory";
constexpr std::string_view kHugepagesPrefix = "hugepages-";

class Reader {
 public:
  explicit Reader(std::string_view path) : where_(fmt::format("kubelet config {}", path)) {}

  absl::Status Error(std::string_view field, std::string_view problem) const {
    return absl::InvalidArgumentError(fmt::format("{}: {}: {}", where_, field, problem));
  }

  absl::StatusOr<std::string> Scalar(const YAML::Node& node, std::string_view field) const {
    if (!node.IsScalar()) return Error(field, "expected a string");
    return node.Scalar();
  }

  absl::Status ReadReservedMemory(const YAML::Node& list, NumaMemory& out) const {
    if (list.IsNull()) return absl::OkStatus();
    if (!list.IsSequence()) return Error("reservedMemory", "expected a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      const std::string path = fmt::format("reservedMemory[{}]", i);
      if (!item.IsMap()) return Error(path, "expected a mapping with numaNode and limits");
      const YAML::Node numa_node = item["numaNode"];
      if (!numa_node) return Error(path + ".numaNode", "missing");
      auto numa_text = Scalar(numa_node, path + ".numaNode");
      if (!numa_text.ok()) return numa_text.status();
      int numa = -1;
      const char* end = numa_text->data() + numa_text->size();
      if (auto [p, ec] = std::from_chars(numa_text->data(), end, numa);
          ec != std::errc() || p != end || numa < 0) {
        return Error(path + ".numaNode",
                     fmt::format("{:?} is not a NUMA node id (an integer >= 0)", *numa_text));
      }
      const YAML::Node limits = item["limits"];
      if (!limits) return Error(path + ".limits", "missing");
      if (!limits.IsMap()) return Error(path + ".limits", "expected a mapping");
      for (const auto& kv : limits) {
        if (!kv.first.IsScalar()) return Error(path + ".limits", "a key is not a string");
        const std::string resource = kv.first.Scalar();
        const std::string field = fmt::format("{}.limits[{:?}]", path, resource);
        if (resource != kMemory &&
            !(resource.starts_with(kHugepagesPrefix) &&
              resource.size() > kHugepagesPrefix.size())) {
          return Error(field, "only memory and hugepages-<size> can be reserved");
        }
        auto text = Scalar(kv.second, field);
        if (!text.ok()) return text.status();
        absl::StatusOr<int64_t> bytes = ParseMemoryBytes(*text);
        if (!bytes.ok()) return Error(field, Msg(bytes.status()));
        if (*bytes == 0) return Error(field, "reserved memory may not be zero");
        auto [it, inserted] = out[numa].emplace(resource, static_cast<uint64_t>(*bytes));
        if (!inserted) {
          return Error(field, fmt::format("NUMA node {} reserves {} twice", numa, resource));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<KubeletConfig> Read(const YAML::Node& root) const {
    KubeletConfig out;
    if (root.IsNull()) return out;  // an empty file: kubelet's defaults
    if (!root.IsMap()) return Error("file", "expected a mapping");
    if (const YAML::Node cpus = root["reservedSystemCPUs"]) {
      if (!cpus.IsScalar()) return Error("reservedSystemCPUs", "expected a cpu-list");
      absl::StatusOr<CpuSet> set = CpuSet::Parse(cpus.Scalar());
      if (!set.ok()) return Error("reservedSystemCPUs", Msg(set.status()));
      out.reserved_system_cpus = *set;
    }
    if (const YAML::Node policy = root["memoryManagerPolicy"]) {
      auto text = Scalar(policy, "memoryManagerPolicy");
      if (!text.ok()) return text.status();
      if (*text == "Static") {
        out.memory.policy = KubeletMemoryPolicy::kStatic;
      } else if (*text != "None") {
        return Error("memoryManagerPolicy",
                     fmt::format("{:?} is not None or Static (kubelet's spelling)", *text));
      }
    }
    if (const YAML::Node reserved = root["reservedMemory"]) {
      if (absl::Status s = ReadReservedMemory(reserved, out.memory.reserved); !s.ok()) return s;
    }
    return out;
  }

  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

}  // namespace

const char* ToString(KubeletMemoryPolicy p) {
  return p == KubeletMemoryPolicy::kStatic ? "Static" : "None";
}

absl::StatusOr<KubeletConfig> ParseKubeletConfig(std::string_view text, std::string_view path) {
  const Reader reader(path);
  try {
    return reader.Read(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        fmt::format("{}: not valid YAML: {}", reader.where(), e.what()));
  }
}

}  // namespace huygens::agent

// The header of Huygens' configuration files: `apiVersion` and `kind`, as a Kubernetes
// component's configuration file carries them (kube-scheduler's KubeSchedulerConfiguration,
// kubelet's KubeletConfiguration), so that a later format can be told apart.
//
//   apiVersion: huygens.io/v1alpha1
//   kind: SchedulerConfiguration        # huygens-scheduler; AgentConfiguration: huygens-agent
//
// Both keys are optional (files written before they existed have neither); when present they
// must be exactly these values.
//
// Thread-safety: a pure function.
#ifndef HUYGENS_BASE_CONFIG_KIND_H_
#define HUYGENS_BASE_CONFIG_KIND_H_

#include <optional>
#include <string>
#include <string_view>

#include "yaml-cpp/yaml.h"

namespace huygens {

// The one apiVersion of the configuration files that this code reads.
inline constexpr char kConfigApiVersion[] = "huygens.io/v1alpha1";
// The kinds, one per daemon.
inline constexpr char kSchedulerConfigurationKind[] = "SchedulerConfiguration";
inline constexpr char kAgentConfigurationKind[] = "AgentConfiguration";

// What is wrong with a configuration file's header: the field ("apiVersion" or "kind") and the
// problem, for the caller to report in its own error format.
struct ConfigKindProblem {
  std::string field;
  std::string message;
};

// Checks `root` (the file's top-level map; REQUIRES: a map) for an `apiVersion` other than
// kConfigApiVersion and a `kind` other than `kind`, apiVersion first, e.g.
//   {"apiVersion", "\"huygens.io/v1\" is not supported (this version of Huygens reads only
//                  huygens.io/v1alpha1)"}
//   {"kind", "\"AgentConfiguration\" is not supported (this file is for another Huygens
//            component; expected SchedulerConfiguration)"}
// A value that is not a string reads "expected huygens.io/v1alpha1" (or the kind).
// nullopt when both are absent or right.
std::optional<ConfigKindProblem> CheckConfigKind(const YAML::Node& root, std::string_view kind);

}  // namespace huygens

#endif  // HUYGENS_BASE_CONFIG_KIND_H_

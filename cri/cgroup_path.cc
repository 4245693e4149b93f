#include "cri/cgroup_path.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cri/status_message.h"
#include "fmt/format.h"

namespace huygens::cri {
namespace {

constexpr std::string_view kSliceSuffix = ".slice";

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    if (end == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

std::string_view CgroupVersionName(CgroupVersion version) {
  return version == CgroupVersion::kV1 ? "v1" : "v2";
}

absl::StatusOr<std::string> NormaliseCgroupPath(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(
        fmt::format("cgroup path {:?}: must start with '/'", path));
  }
  if (path.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(fmt::format("cgroup path {:?}: holds a NUL byte", path));
  }
  std::string out;
  for (std::string_view segment : Split(path.substr(1), '/')) {
    if (segment.empty()) continue;
    if (segment == "." || segment == "..") {
      return absl::InvalidArgumentError(
          fmt::format("cgroup path {:?}: segment {:?} is not allowed", path, segment));
    }
    out += '/';
    out += segment;
  }
  if (out.empty()) return std::string(1, '/');
  return out;
}

absl::StatusOr<std::string> ExpandSlice(std::string_view slice) {
  if (slice.size() <= kSliceSuffix.size() || !slice.ends_with(kSliceSuffix)) {
    return absl::InvalidArgumentError(
        fmt::format("systemd slice {:?}: does not end in \".slice\"", slice));
  }
  if (slice.find('/') != std::string_view::npos || slice.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        fmt::format("systemd slice {:?}: holds '/' or a NUL byte", slice));
  }
  const std::string_view stem = slice.substr(0, slice.size() - kSliceSuffix.size());
  if (stem == "-") return std::string("/");
  std::string path;
  std::string prefix;
  for (std::string_view part : Split(stem, '-')) {
    if (part.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("systemd slice {:?}: empty part between dashes", slice));
    }
    if (!prefix.empty()) prefix += '-';
    prefix += part;
    path += fmt::format("/{}{}", prefix, kSliceSuffix);
  }
  return path;
}

absl::StatusOr<std::string> CgroupsPathToCgroup(std::string_view cgroups_path) {
  if (cgroups_path.empty()) {
    return absl::InvalidArgumentError("linux.cgroupsPath is empty");
  }
  if (cgroups_path.front() == '/') {
    absl::StatusOr<std::string> path = NormaliseCgroupPath(cgroups_path);
    if (!path.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("linux.cgroupsPath: {}", MessageOf(path.status())));
    }
    return path;
  }
  const std::vector<std::string_view> parts = Split(cgroups_path, ':');
  if (parts.size() != 3) {
    return absl::InvalidArgumentError(fmt::format(
        "linux.cgroupsPath {:?}: neither an absolute path (cgroupfs driver) nor "
        "\"slice:prefix:name\" (systemd driver)",
        cgroups_path));
  }
  const std::string_view slice = parts[0].empty() ? "system.slice" : parts[0];
  const std::string_view prefix = parts[1];
  const std::string_view name = parts[2];
  if (name.empty() || name.find('/') != std::string_view::npos ||
      prefix.find('/') != std::string_view::npos) {
    return absl::InvalidArgumentError(fmt::format(
        "linux.cgroupsPath {:?}: the unit name is empty or holds '/'", cgroups_path));
  }
  absl::StatusOr<std::string> parent = ExpandSlice(slice);
  if (!parent.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("linux.cgroupsPath {:?}: {}", cgroups_path, MessageOf(parent.status())));
  }
  const std::string unit = name.ends_with(kSliceSuffix)
                               ? std::string(name)
                               : (prefix.empty() ? fmt::format("{}.scope", name)
                                                 : fmt::format("{}-{}.scope", prefix, name));
  const std::string joined = *parent == "/" ? "/" + unit : *parent + "/" + unit;
  absl::StatusOr<std::string> path = NormaliseCgroupPath(joined);
  if (!path.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("linux.cgroupsPath {:?}: {}", cgroups_path, MessageOf(path.status())));
  }
  return path;
}

absl::StatusOr<std::string> CpusetPathFromProcCgroup(std::string_view text,
                                                     CgroupVersion version) {
  int line_number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_number;
    if (line.empty()) continue;
    // "hierarchy-id:controller-list:path"; the path itself may hold ':'.
    const size_t first = line.find(':');
    const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      return absl::InvalidArgumentError(fmt::format(
          "/proc/<pid>/cgroup line {} {:?}: not \"id:controllers:path\"", line_number, line));
    }
    const std::string_view id = line.substr(0, first);
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::string_view path = line.substr(second + 1);
    bool match = false;
    if (version == CgroupVersion::kV2) {
      match = id == "0" && controllers.empty();
    } else {
      for (std::string_view c : Split(controllers, ',')) match = match || c == "cpuset";
    }
    if (!match) continue;
    absl::StatusOr<std::string> normal = NormaliseCgroupPath(path);
    if (!normal.ok()) {
      return absl::InvalidArgumentError(fmt::format("/proc/<pid>/cgroup line {}: {}",
                                                    line_number, MessageOf(normal.status())));
    }
    return normal;
  }
  return absl::NotFoundError(fmt::format("/proc/<pid>/cgroup: no {} line",
                                         version == CgroupVersion::kV2 ? "\"0::\" (cgroup v2)"
                                                                       : "cpuset (cgroup v1)"));
}

}  // namespace huygens::cri

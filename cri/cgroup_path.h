// Cgroup paths of containers: the parsers that turn what a runtime or the kernel reports into a
// path inside a cgroup hierarchy.
//
// A "cgroup path" here is always absolute within the hierarchy ("/kubepods/burstable/pod<uid>/
// <id>"), never a filesystem path: CgroupfsWriter joins it to the mount point. Every returned
// path is normalised: it starts with '/', has no empty, "." or ".." segments and no trailing '/'
// (the root cgroup is "/"), so joining it to a root can never leave that root.
//
// The layouts handled (kubelet's two cgroup drivers, as runc names them):
//   - cgroupfs driver: the OCI spec's linux.cgroupsPath is the path itself,
//     "/kubepods/burstable/pod<uid>/<container id>" (v1 and v2 alike).
//   - systemd driver: linux.cgroupsPath is "slice:prefix:name", e.g.
//     "kubepods-burstable-pod<uid>.slice:cri-containerd:<id>", which runc places at
//     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/
//     cri-containerd-<id>.scope" (a slice name's dashes spell its parents).
//
// Thread-safety: pure functions.
#ifndef HUYGENS_CRI_CGROUP_PATH_H_
#define HUYGENS_CRI_CGROUP_PATH_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace huygens::cri {

/// Which cgroup hierarchy the node runs: v1 (one hierarchy per controller, cpuset at
/// <root>/cpuset) or v2 (the unified hierarchy at <root>).
enum class CgroupVersion { kV1, kV2 };

/// "v1" or "v2".
std::string_view CgroupVersionName(CgroupVersion version);

/// Expands a systemd slice unit name into its cgroup path: "kubepods-burstable.slice" ->
/// "/kubepods.slice/kubepods-burstable.slice"; the root slice "-.slice" -> "/". Matches runc's
/// systemd driver. Errors: InvalidArgument when the name does not end in ".slice", contains '/',
/// or has an empty dash-separated part ("a--b.slice", "-a.slice", "a-.slice").
absl::StatusOr<std::string> ExpandSlice(std::string_view slice);

/// Converts an OCI runtime spec's linux.cgroupsPath to a normalised cgroup path (see the file
/// comment for both driver forms). In the systemd form an empty slice means "system.slice" and a
/// name ending in ".slice" is used as is (runc's rules). Errors: InvalidArgument naming the value
/// for an empty path, a relative cgroupfs path, ".." segments, NUL bytes, or a systemd form whose
/// parts are malformed.
absl::StatusOr<std::string> CgroupsPathToCgroup(std::string_view cgroups_path);

/// Normalises an absolute cgroup path ("/a//b/" -> "/a/b"). Errors: InvalidArgument for a path
/// that does not start with '/', or holds "." / ".." segments or NUL bytes.
absl::StatusOr<std::string> NormaliseCgroupPath(std::string_view path);

/// Finds the cpuset controller's cgroup path in the text of /proc/<pid>/cgroup (lines
/// "hierarchy-id:controller-list:path"): on v1 the line whose controller list holds "cpuset",
/// on v2 the "0::<path>" line. Errors: NotFound when there is no such line; InvalidArgument
/// naming the line number for a malformed line on the way (fewer than three fields) or a path
/// that does not normalise.
absl::StatusOr<std::string> CpusetPathFromProcCgroup(std::string_view text,
                                                     CgroupVersion version);

}  // namespace huygens::cri

#endif  // HUYGENS_CRI_CGROUP_PATH_H_

// Fuzzes the parsers of cgroup paths from outside: /proc/<pid>/cgroup text and OCI
// linux.cgroupsPath values (both drivers). Invariant checked: every path they return is
// normalised (starts with '/', no empty, "." or ".." segment), so it cannot leave the root.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "cri/cgroup_path.h"

namespace {

void CheckNormalised(const absl::StatusOr<std::string>& path) {
  if (!path.ok()) return;
  const std::string& p = *path;
  ABSL_RAW_CHECK(!p.empty() && p.front() == '/', "cgroup path must start with '/'");
  ABSL_RAW_CHECK(p == "/" || p.back() != '/', "cgroup path must not end in '/'");
  ABSL_RAW_CHECK(p.find("//") == std::string::npos, "cgroup path has an empty segment");
  ABSL_RAW_CHECK(p.find("/../") == std::string::npos && !p.ends_with("/.."),
                 "cgroup path has a '..' segment");
  ABSL_RAW_CHECK(p.find('\0') == std::string::npos, "cgroup path has a NUL byte");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckNormalised(huygens::cri::CpusetPathFromProcCgroup(text, huygens::cri::CgroupVersion::kV1));
  CheckNormalised(huygens::cri::CpusetPathFromProcCgroup(text, huygens::cri::CgroupVersion::kV2));
  CheckNormalised(huygens::cri::CgroupsPathToCgroup(text));
  CheckNormalised(huygens::cri::ExpandSlice(text));
  return 0;
}

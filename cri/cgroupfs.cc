#include "cri/cgroupfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "cri/status_message.h"
#include "fmt/format.h"

namespace huygens::cri {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxSearchDepth = 8;

std::string ErrnoText(int err) {
  const char* name = strerrorname_np(err);
  const char* desc = strerrordesc_np(err);
  return fmt::format("{} ({})", desc != nullptr ? desc : "unknown error",
                     name != nullptr ? name : fmt::format("errno {}", err));
}

absl::Status ErrnoStatus(int err, std::string message) {
  message += ": " + ErrnoText(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
      // As root, EACCES from a cpuset file is cgroup v1's answer to a cpuset that is not within
      // its parent's (kernel/cgroup/cpuset-v1.c), not a permission problem.
      if (::geteuid() == 0) {
        return absl::FailedPreconditionError(
            message + " (on cgroup v1: the cpuset is not within the parent's)");
      }
      return absl::PermissionDeniedError(message);
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::FailedPreconditionError(message);
  }
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, fmt::format("read {}", path));
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(err, fmt::format("read {}", path));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

absl::Status WriteFile(const std::string& path, const std::string& value) {
  // O_TRUNC matters only for the test trees (regular files); cgroupfs ignores it.
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, fmt::format("write {:?} to {}", value, path));
  ssize_t n;
  do {
    n = ::write(fd, value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (n < 0) return ErrnoStatus(err, fmt::format("write {:?} to {}", value, path));
  if (static_cast<size_t>(n) != value.size()) {
    return absl::DataLossError(fmt::format("write {:?} to {}: short write ({} of {} bytes)",
                                           value, path, n, value.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<CpuSet> ReadSet(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<CpuSet> set = CpuSet::Parse(*text);
  if (!set.ok()) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", path, MessageOf(set.status())));
  }
  return set;
}

// Narrows every descendant of `dir` to its intersection with `limit`, deepest first, so that no
// write makes a cgroup narrower than one of its children (v1's EBUSY).
absl::Status NarrowDescendants(const fs::path& dir, std::string_view file, const CpuSet& limit) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec) || it->is_symlink(ec)) continue;
    const std::string child_file = (it->path() / file).string();
    absl::StatusOr<CpuSet> current = ReadSet(child_file);
    if (!current.ok()) {
      if (absl::IsNotFound(current.status())) continue;  // not a cgroup (test trees)
      return current.status();
    }
    const CpuSet narrowed = current->Intersection(limit);
    if (narrowed.Empty()) continue;  // left alone: the kernel reports EBUSY on the parent
    if (absl::Status s = NarrowDescendants(it->path(), file, narrowed); !s.ok()) return s;
    if (narrowed != *current) {
      if (absl::Status s = WriteFile(child_file, narrowed.ToString()); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

CgroupfsWriter::CgroupfsWriter(CgroupfsOptions options) : root_(std::move(options.root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (options.version) {
    version_ = *options.version;
  } else {
    std::error_code ec;
    version_ = fs::exists(fs::path(root_) / "cgroup.controllers", ec) ? CgroupVersion::kV2
                                                                      : CgroupVersion::kV1;
  }
}

std::string CgroupfsWriter::CpusetDir(std::string_view cgroup) const {
  const std::string base = version_ == CgroupVersion::kV1 ? root_ + "/cpuset" : root_;
  return cgroup == "/" ? base : base + std::string(cgroup);
}

absl::Status CgroupfsWriter::SetOne(const std::string& cgroup, std::string_view file,
                                    const CpuSet& want) const {
  // Ancestors below the hierarchy root, top-down: widen any that lacks a wanted member.
  for (size_t slash = cgroup.find('/', 1); slash != std::string::npos;
       slash = cgroup.find('/', slash + 1)) {
    const std::string ancestor_file = fmt::format("{}/{}", CpusetDir(cgroup.substr(0, slash)),
                                                  file);
    absl::StatusOr<CpuSet> current = ReadSet(ancestor_file);
    if (!current.ok()) return current.status();
    // On v2 an empty cpuset.cpus means "inherit the parent's": no bound to widen.
    if (version_ == CgroupVersion::kV2 && current->Empty()) continue;
    if (want.IsSubsetOf(*current)) continue;
    if (absl::Status s = WriteFile(ancestor_file, current->Union(want).ToString()); !s.ok()) {
      return absl::Status(s.code(), fmt::format("widening ancestor of {}: {}", cgroup,
                                                MessageOf(s)));
    }
  }
  const std::string dir = CpusetDir(cgroup);
  if (version_ == CgroupVersion::kV1) {
    if (absl::Status s = NarrowDescendants(dir, file, want); !s.ok()) {
      return absl::Status(s.code(), fmt::format("narrowing a child of {}: {}", cgroup,
                                                MessageOf(s)));
    }
  }
  return WriteFile(fmt::format("{}/{}", dir, file), want.ToString());
}

absl::Status CgroupfsWriter::SetCpuset(std::string_view cgroup, const CpuSet& cpus,
                                       const CpuSet& mems) const {
  if (cpus.Empty() || mems.Empty()) {
    return absl::InvalidArgumentError(
        fmt::format("cgroup {:?}: cpuset.cpus {:?} and cpuset.mems {:?} must both be non-empty",
                    cgroup, cpus.ToString(), mems.ToString()));
  }
  absl::StatusOr<std::string> path = NormaliseCgroupPath(cgroup);
  if (!path.ok()) return path.status();
  if (*path == "/") {
    return absl::InvalidArgumentError("the root cgroup's cpuset is the kernel's; not written");
  }
  std::error_code ec;
  if (!fs::is_directory(CpusetDir(*path), ec)) {
    return absl::NotFoundError(fmt::format("cgroup {:?}: no directory {} (cgroup {})", *path,
                                           CpusetDir(*path), CgroupVersionName(version_)));
  }
  if (absl::Status s = SetOne(*path, "cpuset.cpus", cpus); !s.ok()) return s;
  if (absl::Status s = SetOne(*path, "cpuset.mems", mems); !s.ok()) {
    return absl::Status(s.code(), fmt::format("{} (cpuset.cpus was already set to {:?})",
                                              MessageOf(s), cpus.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<CpusetResources> CgroupfsWriter::ReadCpuset(std::string_view cgroup) const {
  absl::StatusOr<std::string> path = NormaliseCgroupPath(cgroup);
  if (!path.ok()) return path.status();
  const std::string dir = CpusetDir(*path);
  const bool v2 = version_ == CgroupVersion::kV2;
  absl::StatusOr<CpuSet> cpus = ReadSet(dir + (v2 ? "/cpuset.cpus.effective" : "/cpuset.cpus"));
  if (!cpus.ok()) return cpus.status();
  absl::StatusOr<CpuSet> mems = ReadSet(dir + (v2 ? "/cpuset.mems.effective" : "/cpuset.mems"));
  if (!mems.ok()) return mems.status();
  return CpusetResources{*std::move(cpus), *std::move(mems)};
}

absl::StatusOr<std::vector<int64_t>> CgroupfsWriter::Procs(std::string_view cgroup) const {
  absl::StatusOr<std::string> path = NormaliseCgroupPath(cgroup);
  if (!path.ok()) return path.status();
  const std::string file = CpusetDir(*path) + "/cgroup.procs";
  absl::StatusOr<std::string> text = ReadFile(file);
  if (!text.ok()) return text.status();
  std::vector<int64_t> pids;
  int64_t value = 0;
  bool in_number = false;
  for (char c : *text) {
    if (c >= '0' && c <= '9') {
      if (value > (INT64_MAX - 9) / 10) {
        return absl::InvalidArgumentError(fmt::format("{}: pid out of range", file));
      }
      value = value * 10 + (c - '0');
      in_number = true;
    } else if (c == '\n' || c == ' ') {
      if (in_number) pids.push_back(value);
      value = 0;
      in_number = false;
    } else {
      return absl::InvalidArgumentError(
          fmt::format("{}: unexpected character {:?}", file, std::string(1, c)));
    }
  }
  if (in_number) pids.push_back(value);
  return pids;
}

absl::StatusOr<std::string> CgroupfsWriter::FindContainer(std::string_view container_id) const {
  if (container_id.empty() || container_id.find('/') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        fmt::format("container id {:?}: empty or holds '/'", container_id));
  }
  const std::string scope_suffix = fmt::format("-{}.scope", container_id);
  const fs::path base = CpusetDir("/");
  std::error_code ec;
  fs::recursive_directory_iterator it(base, fs::directory_options::skip_permission_denied, ec);
  for (fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    if (it.depth() >= kMaxSearchDepth) it.disable_recursion_pending();
    if (!it->is_directory(ec) || it->is_symlink(ec)) {
      if (it->is_symlink(ec)) it.disable_recursion_pending();
      continue;
    }
    const std::string name = it->path().filename().string();
    if (name == container_id || name.ends_with(scope_suffix)) {
      const std::string rel = it->path().lexically_relative(base).string();
      return NormaliseCgroupPath("/" + rel);
    }
  }
  return absl::NotFoundError(fmt::format("container {}: no cgroup named after it under {}",
                                         container_id, base.string()));
}

}  // namespace huygens::cri

// CgroupTree: a temporary folder tree laid out like a cgroup mount, for tests of code that reads
// and writes cgroupfs (CgroupfsWriter, CgroupfsRuntime). Files are plain files: the tree checks
// nothing the kernel would (subset rules, EBUSY); tests assert the writes made.
// Test-only; header-only. Thread-safety: none needed (one test thread).
#ifndef HUYGENS_CRI_TESTING_CGROUP_TREE_H_
#define HUYGENS_CRI_TESTING_CGROUP_TREE_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace huygens::cri::testing {

class CgroupTree {
 public:
  /// A fresh empty folder under $TMPDIR (or /tmp); removed with everything in it on destruction.
  CgroupTree() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") + "/huygens-cgroup-XXXXXX";
    root_ = ::mkdtemp(templ.data()) != nullptr ? templ : std::string();
  }
  ~CgroupTree() {
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }
  CgroupTree(const CgroupTree&) = delete;
  CgroupTree& operator=(const CgroupTree&) = delete;

  const std::string& root() const { return root_; }
  std::string Path(std::string_view rel) const { return root_ + "/" + std::string(rel); }

  /// Writes `content` to root/rel, creating the folders on the way.
  void Write(std::string_view rel, std::string_view content) const {
    const std::filesystem::path p = Path(rel);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  /// The content of root/rel, or "<missing>".
  std::string Read(std::string_view rel) const {
    std::ifstream in(Path(rel));
    if (!in) return "<missing>";
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void MakeDir(std::string_view rel) const { std::filesystem::create_directories(Path(rel)); }

  /// A v1 cpuset cgroup at root/cpuset/<cgroup> holding cpus and mems.
  void V1Cgroup(std::string_view cgroup, std::string_view cpus, std::string_view mems) const {
    Write("cpuset" + std::string(cgroup) + "/cpuset.cpus", cpus);
    Write("cpuset" + std::string(cgroup) + "/cpuset.mems", mems);
  }
  /// A v2 cgroup at root/<cgroup> with configured and effective cpuset files.
  void V2Cgroup(std::string_view cgroup, std::string_view cpus, std::string_view effective) const {
    const std::string base = std::string(cgroup).substr(1);
    Write(base + "/cpuset.cpus", cpus);
    Write(base + "/cpuset.mems", "");
    Write(base + "/cpuset.cpus.effective", effective);
    Write(base + "/cpuset.mems.effective", "0");
  }

 private:
  std::string root_;
};

}  // namespace huygens::cri::testing

#endif  // HUYGENS_CRI_TESTING_CGROUP_TREE_H_

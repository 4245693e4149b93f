#include "topology/discovery/discovery.h"

#include <cerrno>
#include <fcntl.h>
#include <hwloc.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "fmt/format.h"
#include "topology/discovery/assemble.h"
#include "topology/discovery/hwloc_view.h"
#include "topology/discovery/sysfs_view.h"
#include "topology/json.h"

extern char** environ;

namespace huygens {
namespace {

namespace fs = std::filesystem;
using discovery_internal::Assemble;
using discovery_internal::DistanceRow;
using discovery_internal::HwlocSource;
using discovery_internal::HwlocView;
using discovery_internal::LoadHwloc;
using discovery_internal::ReadSysfs;
using discovery_internal::SocketDistances;
using discovery_internal::SysfsView;

absl::Status Invalid(std::string_view what, std::string_view problem) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", what, problem));
}

// Distances between the nodes in `ids`, from the sysfs rows; a missing entry is completed from
// the reverse direction, or 10 on the diagonal. When some pair stays unknown the table is
// dropped altogether (every node gets no distances), which CpuTopology reads as "unknown".
absl::StatusOr<std::map<int, std::map<int, int>>> SysfsDistances(const SysfsView& sys,
                                                                 const std::set<int>& ids,
                                                                 const std::string& root) {
  std::map<int, std::map<int, int>> rows;
  for (const discovery_internal::SysfsNode& node : sys.nodes) {
    if (node.distance_row.empty()) continue;
    absl::StatusOr<std::map<int, int>> row = DistanceRow(sys, node, root);
    if (!row.ok()) return row.status();
    for (const auto& [to, d] : *row) {
      if (ids.contains(to)) rows[node.id][to] = d;
    }
  }
  std::map<int, std::map<int, int>> table;
  for (int a : ids) {
    for (int b : ids) {
      int d = 0;
      if (rows[a].contains(b)) {
        d = rows[a][b];
      } else if (rows[b].contains(a)) {
        d = rows[b][a];
      } else if (a == b) {
        d = 10;
      } else {
        return std::map<int, std::map<int, int>>();
      }
      table[a][b] = d;
    }
  }
  return table;
}

// Raw keys of units made up for CPUs without topology/ (CpuInfo::id + this): apart from
// hwloc's keys (gp_index, small) and below Assemble's fallback keys.
constexpr int kOwnUnitBase = 1 << 28;

// Places the online CPUs at `unplaced` (indexes into `cpus`), whose cpuN/ has no topology/
// folder so that hwloc made no PU for them, from what the other sysfs files say: the core,
// cluster, die, socket and L3 group of a placed CPU whose core_cpus_list names it as a
// sibling; else a core of its own in the socket the other CPUs of its NUMA node (its node's
// cpulist) share, with their die and L3 group when they share one; else a socket of its own.
// REQUIRES: cpus[i].numa >= 0 for every i in `unplaced`; `cpus` parallel to sys.cpus.
void PlaceCpusWithoutTopology(std::vector<CpuInfo>& cpus, const SysfsView& sys,
                              const std::vector<size_t>& unplaced) {
  std::map<int, size_t> named_by;  // cpu id -> a placed CPU whose siblings name it
  for (size_t i = 0; i < cpus.size(); ++i) {
    if (!cpus[i].online || cpus[i].core < 0) continue;
    for (int sibling : sys.cpus[i].siblings) named_by.try_emplace(sibling, i);
  }
  for (size_t i : unplaced) {
    CpuInfo& c = cpus[i];
    if (auto it = named_by.find(c.id); it != named_by.end()) {
      const CpuInfo& sibling = cpus[it->second];
      c.core = sibling.core;
      c.cluster = sibling.cluster;
      c.die = sibling.die;
      c.socket = sibling.socket;
      c.l3 = sibling.l3;
      continue;
    }
    c.core = kOwnUnitBase + c.id;
    std::set<int> sockets, dies, l3s;
    for (const CpuInfo& peer : cpus) {
      if (!peer.online || peer.core < 0 || peer.numa != c.numa || peer.core >= kOwnUnitBase) {
        continue;
      }
      sockets.insert(peer.socket);
      dies.insert(peer.die);
      l3s.insert(peer.l3);
    }
    if (sockets.size() != 1) {
      c.socket = kOwnUnitBase + c.id;  // die and L3 group fall back to it (Assemble)
      continue;
    }
    c.socket = *sockets.begin();
    if (dies.size() == 1) c.die = *dies.begin();
    if (l3s.size() == 1) c.l3 = *l3s.begin();
  }
}

// Merges the sysfs view (NUMA membership, online state, memory, distances, machine masks) with
// hwloc's (core, cluster, die, package, L3). See docs/discovery.md.
absl::StatusOr<CpuTopology> MergeSysfsAndHwloc(const SysfsView& sys, const HwlocView& hw,
                                               const std::string& root,
                                               const std::string& what) {
  std::map<int, const CpuInfo*> pu;
  for (const CpuInfo& c : hw.cpus) {
    if (c.online) pu[c.id] = &c;
  }

  std::map<int, int> owner;  // cpu -> NUMA node whose cpulist names it (lowest node first)
  for (const discovery_internal::SysfsNode& n : sys.nodes) {
    for (int cpu : n.cpus) owner.try_emplace(cpu, n.id);
  }
  std::set<int> node_ids;
  for (const discovery_internal::SysfsNode& n : sys.nodes) node_ids.insert(n.id);
  const bool numa_kernel = !sys.nodes.empty();

  std::vector<CpuInfo> cpus;
  std::vector<size_t> unplaced;  // online CPUs without topology/, placed after the loop
  std::set<int> known;
  bool any_package = false;  // some online CPU has a physical_package_id other than -1
  bool any_topology = false;
  for (const discovery_internal::SysfsCpu& s : sys.cpus) {
    known.insert(s.id);
    CpuInfo c;
    c.id = s.id;
    c.online = s.online;
    c.isolated = sys.machine.isolated.Contains(s.id);
    if (auto it = owner.find(s.id); it != owner.end()) {
      c.numa = it->second;
    } else if (s.node_link >= 0) {
      c.numa = s.node_link;  // node directory missing (offlined node): trust cpuN/nodeM
    } else if (!numa_kernel) {
      c.numa = 0;  // kernel without NUMA: one node
    }
    if (s.online) {
      auto it = pu.find(s.id);
      if (it == pu.end() && !(s.has_directory && !s.has_topology)) {
        return Invalid(what, fmt::format("cpu {} is online in sysfs but hwloc found no PU for it "
                                         "(truncated dump?)",
                                         s.id));
      }
      if (it == pu.end()) {
        unplaced.push_back(cpus.size());
      } else {
        const CpuInfo& h = *it->second;
        c.core = h.core;
        c.cluster = h.cluster;
        c.die = h.die;
        c.socket = h.socket;
        c.l3 = h.l3;
      }
      if (c.numa < 0) {
        return Invalid(what, fmt::format("cpu {} is online but no NUMA node lists it", s.id));
      }
      if (s.has_topology) {
        any_topology = true;
        any_package = any_package || s.package_id != -1;
      }
    }
    if (c.numa >= 0) node_ids.insert(c.numa);
    cpus.push_back(c);
  }
  for (const auto& [id, h] : pu) {
    if (!known.contains(id)) {
      return Invalid(what, fmt::format("hwloc reports PU {} which sysfs does not list", id));
    }
  }
  PlaceCpusWithoutTopology(cpus, sys, unplaced);
  // IBM POWER reports physical_package_id -1: hwloc then makes one package per core; a POWER
  // chip is one NUMA node, so the NUMA node stands in for the socket.
  if (any_topology && !any_package) {
    for (CpuInfo& c : cpus) {
      if (!c.online) continue;
      c.socket = c.numa;
      c.die = -1;
    }
  }

  absl::StatusOr<std::map<int, std::map<int, int>>> distances =
      SysfsDistances(sys, node_ids, root);
  if (!distances.ok()) return distances.status();
  std::vector<NumaNode> nodes;
  for (int id : node_ids) {
    NumaNode n;
    n.id = id;
    auto it = std::ranges::find(sys.nodes, id, &discovery_internal::SysfsNode::id);
    if (it != sys.nodes.end()) {
      n.memory_bytes = it->memory_bytes;
      n.hugepages = it->hugepages;
    } else if (!numa_kernel) {
      n.memory_bytes = sys.mem_total_bytes;
    }
    if (auto d = distances->find(id); d != distances->end()) n.distances = d->second;
    nodes.push_back(std::move(n));
  }
  return Assemble(std::move(cpus), std::move(nodes), sys.machine, what);
}

absl::StatusOr<CpuTopology> DiscoverRoot(const std::string& root, HwlocSource source,
                                         const std::string& what) {
  absl::StatusOr<SysfsView> sys = ReadSysfs(root);
  if (!sys.ok()) return sys.status();
  absl::StatusOr<HwlocView> hw = LoadHwloc(source, root, what);
  if (!hw.ok()) return hw.status();
  return MergeSysfsAndHwloc(*sys, *hw, root, what);
}

// A private temporary directory, removed (with everything in it) on destruction.
class TempDir {
 public:
  static absl::StatusOr<TempDir> Make() {
    std::string pattern = (fs::temp_directory_path() / "huygens-discover-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(fmt::format("cannot create a temporary directory in {}",
                                             fs::temp_directory_path().string()));
    }
    return TempDir(pattern);
  }
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    // Dumps may hold read-only directories; make them writable so they can be removed.
    for (auto it = fs::recursive_directory_iterator(path_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) {
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
      }
    }
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  explicit TempDir(fs::path path) : path_(std::move(path)) {}
  fs::path path_;
};

// Runs `tar -xjf tarball -C dir`. Errors: InvalidArgument with tar's first line of complaint.
absl::Status Untar(const std::string& tarball, const fs::path& dir) {
  const fs::path out = dir / "x";
  const fs::path err = dir / "tar.stderr";
  fs::create_directory(out);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> args = {"tar", "-xjf", tarball, "-C", out.string(),
                                   "--no-same-owner", "--no-same-permissions"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "tar", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return Invalid(tarball, fmt::format("cannot run tar to unpack it: {}", std::strerror(rc)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  std::ifstream in(err);
  std::string line;
  std::getline(in, line);
  return Invalid(tarball, fmt::format("not a readable .tar.bz2 ({})",
                                      line.empty() ? "tar failed" : line));
}

// The directory under `dir` that holds sys/devices/system/cpu: `dir`, `dir/fsroot`, `dir/*` or
// `dir/*/fsroot`, in that order.
std::optional<fs::path> FindFsroot(const fs::path& dir) {
  std::error_code ec;
  auto is_root = [&](const fs::path& p) {
    return fs::is_directory(p / "sys/devices/system/cpu", ec);
  };
  if (is_root(dir)) return dir;
  if (is_root(dir / "fsroot")) return dir / "fsroot";
  std::vector<fs::path> subdirs;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) subdirs.push_back(e.path());
  }
  std::ranges::sort(subdirs);
  for (const fs::path& d : subdirs) {
    if (is_root(d)) return d;
    if (is_root(d / "fsroot")) return d / "fsroot";
  }
  return std::nullopt;
}

// Rewrites a message about a file inside an unpacked tarball so that it names the tarball.
absl::Status NameTarball(const absl::Status& s, const fs::path& root, const std::string& tarball) {
  std::string message(s.message());
  const std::string prefix = root.string() + "/";
  if (message.starts_with(prefix)) {
    message = fmt::format("{}: {}", tarball, message.substr(prefix.size()));
  } else if (message.starts_with(root.string())) {
    message = fmt::format("{}{}", tarball, message.substr(root.string().size()));
  }
  return absl::Status(s.code(), message);
}

// Splits a synthetic description into tokens at blanks outside parentheses.
std::vector<std::string> SyntheticTokens(std::string_view spec) {
  std::vector<std::string> tokens;
  std::string current;
  int depth = 0;
  for (char ch : spec) {
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (depth <= 0 && std::isspace(static_cast<unsigned char>(ch))) {
      if (!current.empty()) tokens.push_back(std::exchange(current, {}));
      continue;
    }
    current += ch;
  }
  if (!current.empty()) tokens.push_back(current);
  return tokens;
}

// Checks every level token's type against hwloc's names, to name the bad one.
absl::Status CheckSyntheticTokens(std::string_view spec, const std::string& what) {
  const std::vector<std::string> tokens = SyntheticTokens(spec);
  if (tokens.empty()) return Invalid(what, "empty synthetic description");
  for (const std::string& token : tokens) {
    if (token.front() == '(' || token.front() == '[') continue;  // machine attrs, memory
    const size_t colon = token.find(':');
    if (colon == std::string::npos) {
      return Invalid(what, fmt::format("token {:?} is not <type>:<count>", token));
    }
    const std::string type = token.substr(0, colon);
    hwloc_obj_type_t t{};
    if (hwloc_type_sscanf(type.c_str(), &t, nullptr, 0) != 0) {
      return Invalid(what, fmt::format("unknown object type {:?} in token {:?}", type, token));
    }
    const std::string count = token.substr(colon + 1, token.find('(') - colon - 1);
    if (count.empty() || !std::ranges::all_of(count, [](char c) { return std::isdigit(c); }) ||
        std::stoul(count.substr(0, 9)) == 0) {
      return Invalid(what, fmt::format("token {:?}: count {:?} is not a positive number", token,
                                       count));
    }
  }
  return absl::OkStatus();
}

// Renumbers CPUs Linux-style: thread k of the c-th core becomes k * (cpus / threads) + c.
absl::Status RenumberLinux(std::vector<CpuInfo>& cpus, const std::string& what) {
  std::map<int, std::vector<size_t>> by_core;  // raw core -> indexes into cpus, by cpu id
  std::vector<int> core_order;
  for (size_t i = 0; i < cpus.size(); ++i) {
    auto [it, inserted] = by_core.try_emplace(cpus[i].core);
    if (inserted) core_order.push_back(cpus[i].core);
    it->second.push_back(i);
  }
  const size_t threads = by_core.begin()->second.size();
  const size_t per_thread = cpus.size() / threads;
  for (size_t c = 0; c < core_order.size(); ++c) {
    const std::vector<size_t>& members = by_core[core_order[c]];
    if (members.size() != threads) {
      return Invalid(what, "linux numbering needs the same number of threads in every core");
    }
    for (size_t k = 0; k < members.size(); ++k) {
      cpus[members[k]].id = static_cast<int>(k * per_thread + c);
    }
  }
  std::ranges::sort(cpus, {}, &CpuInfo::id);
  return absl::OkStatus();
}

CpuSet IdsOf(const std::vector<CpuInfo>& cpus) {
  CpuSet::Builder b;
  for (const CpuInfo& c : cpus) b.Add(c.id);
  return b.Build();
}

}  // namespace

absl::StatusOr<CpuTopology> DiscoverLive() {
  return DiscoverRoot("/", HwlocSource::kLive, "live machine");
}

absl::StatusOr<CpuTopology> DiscoverFromFsroot(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return absl::NotFoundError(fmt::format("{}: no such file or directory", path));
  if (fs::is_directory(st)) {
    std::optional<fs::path> root = FindFsroot(path);
    if (!root) {
      return Invalid(path, "no sys/devices/system/cpu inside (not a sysfs dump, or an empty one)");
    }
    return DiscoverRoot(root->string(), HwlocSource::kFsroot, path);
  }
  absl::StatusOr<TempDir> tmp = TempDir::Make();
  if (!tmp.ok()) return tmp.status();
  if (absl::Status s = Untar(path, tmp->path()); !s.ok()) return s;
  std::optional<fs::path> root = FindFsroot(tmp->path() / "x");
  if (!root) {
    return Invalid(path, "the tarball holds no sys/devices/system/cpu (not a sysfs dump, or an "
                         "empty one)");
  }
  absl::StatusOr<CpuTopology> topology =
      DiscoverRoot(root->string(), HwlocSource::kFsroot, path);
  if (!topology.ok()) return NameTarball(topology.status(), *root, path);
  return topology;
}

absl::StatusOr<CpuTopology> DiscoverFromFile(const std::string& path) {
  if (path.ends_with(".xml")) return DiscoverFromXml(path);
  if (!path.ends_with(".json")) return DiscoverFromFsroot(path);
  std::ifstream in(path);
  if (!in) return absl::ErrnoToStatus(errno, fmt::format("{}: cannot open", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<CpuTopology> t = TopologyFromJson(text.str());
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path, std::string(t.status().message())));
  }
  return t;
}

absl::StatusOr<CpuTopology> DiscoverFromXml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  if (!fs::exists(path, ec)) return absl::NotFoundError(fmt::format("{}: no such file", path));
  if (!in || fs::is_directory(path, ec)) return Invalid(path, "cannot read this file");
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.empty()) return Invalid(path, "empty file");
  if (head.find("<topology") == std::string::npos) {
    return Invalid(path, "not an hwloc XML topology (no <topology> element)");
  }
  if (const size_t v = head.find("<topology version=\""); v != std::string::npos) {
    const char major = head[v + std::string_view("<topology version=\"").size()];
    if (major >= '3' && major <= '9') {
      return Invalid(path, "hwloc XML version 3 or later; this hwloc (2.x) reads version 2 only "
                           "(use the *.hwloc2.xml copy)");
    }
  }
  absl::StatusOr<HwlocView> hw = LoadHwloc(HwlocSource::kXml, path, path);
  if (!hw.ok()) return hw.status();
  MachineCpus machine;
  machine.possible = machine.present = IdsOf(hw->cpus);
  return Assemble(hw->cpus, hw->numa_nodes, machine, path);
}

absl::StatusOr<CpuTopology> DiscoverSynthetic(std::string_view spec, CpuNumbering numbering) {
  const std::string what = fmt::format("synthetic {:?}", spec);
  if (absl::Status s = CheckSyntheticTokens(spec, what); !s.ok()) return s;
  absl::StatusOr<HwlocView> hw = LoadHwloc(HwlocSource::kSynthetic, std::string(spec), what);
  if (!hw.ok()) return hw.status();
  if (numbering == CpuNumbering::kLinux) {
    if (absl::Status s = RenumberLinux(hw->cpus, what); !s.ok()) return s;
  }
  MachineCpus machine;
  machine.possible = machine.present = IdsOf(hw->cpus);
  absl::StatusOr<CpuTopology> topology = Assemble(hw->cpus, hw->numa_nodes, machine, what);
  if (!topology.ok() || topology->HasDistances() || topology->NumNumaNodes() < 2) {
    return topology;
  }
  std::map<int, int> socket_of_node;
  for (const NumaNode& n : topology->NumaNodes()) {
    socket_of_node[n.id] = n.cpus.Empty() ? -1 : topology->Cpu(n.cpus.Min()).socket;
  }
  std::vector<NumaNode> nodes = topology->NumaNodes();
  std::map<int, std::map<int, int>> table = SocketDistances(socket_of_node);
  for (NumaNode& n : nodes) n.distances = table[n.id];
  return CpuTopology::Create(topology->Cpus(), std::move(nodes), topology->Machine());
}

absl::StatusOr<CpuNumbering> ParseCpuNumbering(std::string_view text) {
  if (text == "linux") return CpuNumbering::kLinux;
  if (text == "adjacent") return CpuNumbering::kAdjacent;
  return absl::InvalidArgumentError(
      fmt::format("CPU numbering {:?}: want \"linux\" or \"adjacent\"", text));
}

}  // namespace huygens

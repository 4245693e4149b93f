#include "topology/discovery/sysfs_view.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "fmt/format.h"

namespace huygens::discovery_internal {
namespace {

namespace fs = std::filesystem;

// The file's content, or nullopt when it does not exist or cannot be read.
std::optional<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return out.str();
}

// Strips white space, and the NUL bytes some dump tools append to sysfs files.
std::string_view Trim(std::string_view s) {
  auto blank = [](char c) { return c == '\0' || std::isspace(static_cast<unsigned char>(c)); };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<int> ParseInt(std::string_view s) {
  s = Trim(s);
  int value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// Parses a "<prefix><digits>" directory name (cpu12, node250) into the number.
std::optional<int> NumberedName(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return std::nullopt;
  const std::string_view digits = name.substr(prefix.size());
  if (!std::ranges::all_of(digits, [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return ParseInt(digits);
}

absl::Status FileError(const fs::path& path, std::string_view problem) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", path.string(), problem));
}

// Reads an optional cpu-list file; nullopt when absent. The kernel writes "(null)" into
// nohz_full when the option is off.
absl::Status ReadCpuList(const fs::path& path, std::optional<CpuSet>& out) {
  std::optional<std::string> text = ReadFile(path);
  if (!text) return absl::OkStatus();
  const std::string_view t = Trim(*text);
  absl::StatusOr<CpuSet> set = t == "(null)" ? CpuSet() : CpuSet::Parse(t);
  if (!set.ok()) return FileError(path, std::string(set.status().message()));
  out.emplace(*std::move(set));
  return absl::OkStatus();
}

absl::Status ReadCpuMask(const fs::path& path, std::optional<CpuSet>& out) {
  std::optional<std::string> text = ReadFile(path);
  if (!text) return absl::OkStatus();
  absl::StatusOr<CpuSet> set = CpuSet::ParseMask(Trim(*text));
  if (!set.ok()) return FileError(path, std::string(set.status().message()));
  out.emplace(*std::move(set));
  return absl::OkStatus();
}

std::vector<std::string_view> SplitWhitespace(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// Applies isolcpus= and nohz_full= from the kernel command line (kernel-parameters.rst:
// "isolcpus=[flag-list,]<cpu-list>", flags nohz, domain, managed_irq; without flags, domain).
absl::Status ApplyCmdline(const fs::path& path, std::string_view cmdline, MachineCpus& m) {
  for (std::string_view token : SplitWhitespace(cmdline)) {
    if (token.starts_with("isolcpus=")) {
      std::string_view rest = token.substr(std::string_view("isolcpus=").size());
      m.isolcpus_flags.clear();
      while (!rest.empty() && std::isalpha(static_cast<unsigned char>(rest.front()))) {
        const size_t comma = rest.find(',');
        m.isolcpus_flags.emplace_back(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
      absl::StatusOr<CpuSet> cpus = CpuSet::Parse(rest);
      if (!cpus.ok()) return FileError(path, fmt::format("isolcpus=: {}", std::string(cpus.status().message())));
      const bool domain =
          m.isolcpus_flags.empty() ||
          std::ranges::find(m.isolcpus_flags, "domain") != m.isolcpus_flags.end();
      if (domain) m.isolated = m.isolated.Union(*cpus);
    } else if (token.starts_with("nohz_full=")) {
      absl::StatusOr<CpuSet> cpus = CpuSet::Parse(token.substr(std::string_view("nohz_full=").size()));
      if (!cpus.ok()) {
        return FileError(path, fmt::format("nohz_full=: {}", std::string(cpus.status().message())));
      }
      m.nohz_full = m.nohz_full.Union(*cpus);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SysfsNode> ReadNode(const fs::path& dir, int id) {
  SysfsNode node;
  node.id = id;
  std::optional<CpuSet> cpus;
  if (absl::Status s = ReadCpuList(dir / "cpulist", cpus); !s.ok()) return s;
  if (!cpus) {
    if (absl::Status s = ReadCpuMask(dir / "cpumap", cpus); !s.ok()) return s;
  }
  if (!cpus) return FileError(dir, "has neither cpulist nor cpumap");
  node.cpus = *cpus;
  if (std::optional<std::string> meminfo = ReadFile(dir / "meminfo")) {
    std::istringstream in(*meminfo);
    std::string line;
    while (std::getline(in, line)) {
      const size_t at = line.find("MemTotal:");
      if (at == std::string::npos) continue;
      std::istringstream fields(line.substr(at + 9));
      uint64_t kib = 0;
      if (!(fields >> kib)) return FileError(dir / "meminfo", "MemTotal has no number");
      node.memory_bytes = kib * 1024;
    }
  }
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir / "hugepages", ec)) {
    const std::string name = e.path().filename().string();  // hugepages-2048kB
    if (!name.starts_with("hugepages-") || !name.ends_with("kB")) continue;
    std::optional<int> kib = ParseInt(std::string_view(name).substr(10, name.size() - 12));
    std::optional<std::string> nr = ReadFile(e.path() / "nr_hugepages");
    if (!kib || !nr) continue;
    std::optional<int> count = ParseInt(*nr);
    if (!count || *count < 0) return FileError(e.path() / "nr_hugepages", "not a count");
    node.hugepages[static_cast<uint64_t>(*kib) * 1024] = static_cast<uint64_t>(*count);
  }
  if (std::optional<std::string> distance = ReadFile(dir / "distance")) {
    for (std::string_view word : SplitWhitespace(*distance)) {
      std::optional<int> d = ParseInt(word);
      if (!d) return FileError(dir / "distance", fmt::format("{:?} is not a number", word));
      node.distance_row.push_back(*d);
    }
  }
  return node;
}

}  // namespace

absl::StatusOr<SysfsView> ReadSysfs(const std::string& root_text) {
  const fs::path root(root_text);
  const fs::path cpu_dir = root / "sys/devices/system/cpu";
  const fs::path node_dir = root / "sys/devices/system/node";
  std::error_code ec;
  if (!fs::is_directory(cpu_dir, ec)) {
    return absl::NotFoundError(fmt::format("{}: not found (not a sysfs tree)", cpu_dir.string()));
  }
  SysfsView view;

  // Machine-wide masks.
  struct MaskFile {
    const char* name;
    std::optional<CpuSet> value;
  };
  MaskFile masks[] = {{"possible", {}}, {"present", {}}, {"online", {}},
                      {"isolated", {}}, {"nohz_full", {}}};
  for (MaskFile& f : masks) {
    if (absl::Status s = ReadCpuList(cpu_dir / f.name, f.value); !s.ok()) return s;
  }
  const std::optional<CpuSet>& online_file = masks[2].value;

  // cpuN directories.
  std::map<int, SysfsCpu> cpus;
  for (const fs::directory_entry& e : fs::directory_iterator(cpu_dir, ec)) {
    std::optional<int> id = NumberedName(e.path().filename().string(), "cpu");
    if (!id || *id >= CpuSet::kMaxCpus) continue;
    SysfsCpu cpu;
    cpu.id = *id;
    cpu.has_directory = true;
    const fs::path topo = e.path() / "topology";
    cpu.has_topology = fs::is_directory(topo, ec);
    if (std::optional<std::string> pkg = ReadFile(topo / "physical_package_id")) {
      std::optional<int> value = ParseInt(*pkg);
      if (!value) return FileError(topo / "physical_package_id", "not a number");
      cpu.package_id = *value;
    }
    std::optional<CpuSet> siblings;
    if (absl::Status s = ReadCpuList(topo / "core_cpus_list", siblings); !s.ok()) return s;
    if (!siblings) {
      if (absl::Status s = ReadCpuList(topo / "thread_siblings_list", siblings); !s.ok()) {
        return s;
      }
    }
    if (siblings) cpu.siblings = *siblings;
    if (online_file) {
      cpu.online = online_file->Contains(cpu.id);
    } else if (std::optional<std::string> flag = ReadFile(e.path() / "online")) {
      cpu.online = Trim(*flag) != "0";  // no flag file: the CPU cannot go offline (cpu0)
    }
    for (const fs::directory_entry& link : fs::directory_iterator(e.path(), ec)) {
      if (std::optional<int> node = NumberedName(link.path().filename().string(), "node")) {
        cpu.node_link = *node;
      }
    }
    cpus[cpu.id] = cpu;
  }
  if (ec) return FileError(cpu_dir, fmt::format("cannot list: {}", ec.message()));
  for (const std::optional<CpuSet>& extra : {masks[1].value, online_file}) {
    if (!extra) continue;
    for (int id : *extra) {
      auto [it, inserted] = cpus.try_emplace(id);
      if (inserted) {
        it->second.id = id;
        it->second.online = !online_file || online_file->Contains(id);
      }
    }
  }
  if (cpus.empty()) return FileError(cpu_dir, "has no cpuN directory (empty or truncated dump)");
  CpuSet::Builder known;
  for (auto& [id, cpu] : cpus) {
    known.Add(id);
    view.cpus.push_back(cpu);
  }
  const CpuSet known_cpus = known.Build();
  view.machine.possible = masks[0].value ? *masks[0].value : known_cpus;
  view.machine.present = masks[1].value ? *masks[1].value : known_cpus;
  if (masks[3].value) view.machine.isolated = *masks[3].value;
  if (masks[4].value) view.machine.nohz_full = *masks[4].value;
  if (std::optional<std::string> cmdline = ReadFile(root / "proc/cmdline")) {
    if (absl::Status s = ApplyCmdline(root / "proc/cmdline", *cmdline, view.machine); !s.ok()) {
      return s;
    }
  }
  if (std::optional<std::string> meminfo = ReadFile(root / "proc/meminfo")) {
    std::istringstream in(*meminfo);
    std::string key;
    uint64_t kib = 0;
    if (in >> key >> kib && key == "MemTotal:") view.mem_total_bytes = kib * 1024;
  }

  // NUMA node directories.
  for (const fs::directory_entry& e : fs::directory_iterator(node_dir, ec)) {
    std::optional<int> id = NumberedName(e.path().filename().string(), "node");
    if (!id) continue;
    absl::StatusOr<SysfsNode> node = ReadNode(e.path(), *id);
    if (!node.ok()) return node.status();
    view.nodes.push_back(*std::move(node));
  }
  std::ranges::sort(view.nodes, {}, &SysfsNode::id);
  for (auto [name, target] : {std::pair{"possible", &view.possible_nodes},
                              std::pair{"online", &view.online_nodes}}) {
    if (absl::Status s = ReadCpuList(node_dir / name, *target); !s.ok()) return s;
  }
  return view;
}

absl::StatusOr<std::map<int, int>> DistanceRow(const SysfsView& view, const SysfsNode& node,
                                               const std::string& root) {
  std::vector<int> dir_ids;
  for (const SysfsNode& n : view.nodes) dir_ids.push_back(n.id);
  std::vector<std::vector<int>> orders = {dir_ids};
  for (const std::optional<CpuSet>& list : {view.possible_nodes, view.online_nodes}) {
    if (list) orders.push_back(list->ToVector());
  }
  for (const std::vector<int>& ids : orders) {
    if (ids.size() != node.distance_row.size()) continue;
    std::map<int, int> row;
    for (size_t i = 0; i < ids.size(); ++i) row[ids[i]] = node.distance_row[i];
    return row;
  }
  return FileError(fs::path(root) / fmt::format("sys/devices/system/node/node{}/distance", node.id),
                   fmt::format("{} entries, but the machine has {} NUMA node directories",
                               node.distance_row.size(), dir_ids.size()));
}

}  // namespace huygens::discovery_internal

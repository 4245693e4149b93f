#include "cri/testing/containerd_env.h"

#include <dirent.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cri/api/cri.grpc.pb.h"
#include "cri/grpc_status.h"
#include "cri/status_message.h"
#include "fmt/format.h"

namespace huygens::cri::testing {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::runtime::v1;
using Clock = std::chrono::steady_clock;

constexpr long kOverlayfsMagic = 0x794c7630;
constexpr const char* kCgroupRoot = "/sys/fs/cgroup";

// Builds the busybox OCI image tar ($D/image.tar); see the script's header.
constexpr const char* kBuildImageScript = HUYGENS_SOURCE_DIR "/cri/testing/busybox_image.sh";
// Writes DIR/config.toml for this containerd; see the script's header.
constexpr const char* kConfigScript = HUYGENS_SOURCE_DIR "/cri/testing/containerd_config.sh";
// The CNI plugins of the pod network: the network's own and the one containerd 1.6 adds for
// every sandbox's loopback interface.
constexpr const char* kCniPlugins[] = {"bridge", "host-local", "loopback"};

// The absolute path of `name` (as is when it holds '/'), or "" when not found in PATH.
std::string FindBinary(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Starts argv with stdout and stderr appended to `log`; in a new process group when asked.
// `env` entries ("K=V") are added to the environment.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& log,
                            bool new_group, const std::vector<std::string>& env = {}) {
  // Everything the child needs is built before fork (only async-signal-safe calls after it).
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    if (new_group) ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, 0);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for `pid` up to `timeout`; kills it after. Returns its exit status (-1 when killed).
int WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0) return -1;
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += all[i] + "\n";
  }
  return out;
}

// Runs a command to completion (output appended to `log`). Errors name the command.
absl::Status Run(const std::vector<std::string>& argv, const std::string& log,
                 std::chrono::milliseconds timeout, const std::vector<std::string>& env = {}) {
  absl::StatusOr<pid_t> pid = Spawn(argv, log, /*new_group=*/false, env);
  if (!pid.ok()) return pid.status();
  const int code = WaitFor(*pid, timeout);
  if (code != 0) {
    return absl::InternalError(fmt::format("{} exited with {} (log {}):\n{}", argv[0], code, log,
                                           Tail(log, 15)));
  }
  return absl::OkStatus();
}

// Removes a cgroup folder and its children (cgroupfs only lets rmdir remove empty cgroups).
void RemoveCgroupTree(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) RemoveCgroupTree(it->path());
  }
  ::rmdir(dir.c_str());
}

// Pids of the processes in a cgroup folder and its children.
void CollectCgroupPids(const fs::path& dir, std::vector<pid_t>& out) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::ifstream procs(dir / "cgroup.procs");
  for (long pid; procs >> pid;) out.push_back(static_cast<pid_t>(pid));
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) CollectCgroupPids(it->path(), out);
  }
}

// Every cgroup hierarchy mounted under /sys/fs/cgroup (v1: one per controller; v2: the root).
std::vector<fs::path> CgroupHierarchies() {
  std::vector<fs::path> out{kCgroupRoot};
  std::error_code ec;
  for (fs::directory_iterator it(kCgroupRoot, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) out.push_back(it->path());
  }
  return out;
}

// Mount points at or below `dir`, deepest first (from /proc/self/mountinfo, field 5).
std::vector<std::string> MountsUnder(const std::string& dir) {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, mount_point;
    fields >> id >> parent >> dev >> root >> mount_point;
    std::string decoded;  // mountinfo escapes space, tab, newline and backslash as \ooo
    for (size_t i = 0; i < mount_point.size(); ++i) {
      if (mount_point[i] == '\\' && i + 3 < mount_point.size()) {
        decoded += static_cast<char>(std::stoi(mount_point.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        decoded += mount_point[i];
      }
    }
    if (decoded == dir || decoded.starts_with(dir + "/")) out.push_back(decoded);
  }
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

std::string Arch() {
  utsname u{};
  ::uname(&u);
  const std::string m = u.machine;
  if (m == "x86_64") return "amd64";
  if (m == "aarch64") return "arm64";
  return m;
}

}  // namespace

struct ContainerdEnv::Rpc {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::RuntimeService::Stub> runtime;
  std::unique_ptr<v1::ImageService::Stub> images;
  std::chrono::seconds timeout;

  void Connect(const std::string& socket) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    channel = grpc::CreateCustomChannel("unix://" + socket, grpc::InsecureChannelCredentials(),
                                        args);
    runtime = v1::RuntimeService::NewStub(channel);
    images = v1::ImageService::NewStub(channel);
  }
  void Arm(grpc::ClientContext& ctx) const {
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  }
};

std::optional<std::string> ContainerdEnv::Unsupported(const ContainerdEnvOptions& options) {
  if (::geteuid() != 0) return "needs root (containerd and runc manage cgroups and mounts)";
  for (const std::string* bin : {&options.containerd, &options.ctr, &options.runc}) {
    if (FindBinary(*bin).empty()) {
      return fmt::format("{} is not installed (Debian packages containerd and runc)", *bin);
    }
  }
  if (::access(options.busybox.c_str(), X_OK) != 0) {
    return fmt::format("{} is missing (Debian package busybox-static)", options.busybox);
  }
  if (options.pod_network) {
    for (const char* plugin : kCniPlugins) {
      const std::string path = options.cni_plugins + "/" + plugin;
      if (::access(path.c_str(), X_OK) != 0) {
        return fmt::format("the CNI plugin {} is missing (Debian package containernetworking-plugins)", path);
      }
    }
    if (FindBinary("ip").empty()) return "ip is not installed (Debian package iproute2)";
  }
  return std::nullopt;
}

ContainerdEnv::ContainerdEnv(ContainerdEnvOptions options)
    : options_(std::move(options)), rpc_(std::make_unique<Rpc>()) {
  rpc_->timeout = options_.call_timeout;
}

absl::StatusOr<std::unique_ptr<ContainerdEnv>> ContainerdEnv::Start(ContainerdEnvOptions options) {
  if (std::optional<std::string> why = Unsupported(options)) {
    return absl::FailedPreconditionError(*why);
  }
  std::unique_ptr<ContainerdEnv> env(new ContainerdEnv(std::move(options)));
  if (absl::Status s = env->Setup(); !s.ok()) return s;  // the destructor cleans up
  return env;
}

absl::Status ContainerdEnv::Setup() {
  std::string templ = "/tmp/huygens-containerd-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(fmt::format("mkdtemp {}: {}", templ, std::strerror(errno)));
  }
  dir_ = templ;
  socket_ = dir_ + "/containerd.sock";
  cgroup_base_ = fmt::format("/huygens-e2e-{}", ::getpid());
  std::error_code ec;
  fs::create_directories(dir_ + "/logs", ec);

  // overlayfs cannot stack on overlayfs (a containerised CI): use the native snapshotter there.
  struct statfs st {};
  bool overlay = false;
  {
    std::ifstream fss("/proc/filesystems");
    for (std::string line; std::getline(fss, line);) overlay = overlay || line.ends_with("overlay");
  }
  if (::statfs(dir_.c_str(), &st) == 0 && static_cast<long>(st.f_type) == kOverlayfsMagic) {
    overlay = false;
  }
  snapshotter_ = overlay ? "overlayfs" : "native";

  if (absl::Status s = Run({"/bin/sh", kConfigScript, dir_, socket_, options_.image, snapshotter_},
                           dir_ + "/logs/config.log", std::chrono::seconds(10));
      !s.ok()) {
    return absl::InternalError(fmt::format("writing containerd's config: {}", MessageOf(s)));
  }

  if (options_.pod_network) {
    if (absl::Status s = SetupPodNetwork(); !s.ok()) return s;
  }
  if (absl::Status s = LaunchContainerd(); !s.ok()) return s;
  return ImportImage();
}

absl::Status ContainerdEnv::SetupPodNetwork() {
  // containerd reads the plugins from its CNI bin folder (containerd_config.sh) and the network
  // list from its conf folder, both under dir_, at start.
  std::error_code ec;
  for (const char* plugin : kCniPlugins) {
    const fs::path link = fs::path(dir_) / "cni/bin" / plugin;
    fs::create_symlink(fs::path(options_.cni_plugins) / plugin, link, ec);
    if (ec) return absl::InternalError(fmt::format("linking {}: {}", link.string(), ec.message()));
  }
  bridge_ = fmt::format("hye2e{}", ::getpid());
  const std::string conflist = dir_ + "/cni/conf/10-huygens-e2e.conflist";
  std::ofstream out(conflist);
  out << fmt::format(
      R"({{"cniVersion": "1.0.0", "name": "huygens-e2e", "plugins": [{{"type": "bridge", )"
      R"("bridge": "{}", "isGateway": false, "ipMasq": false, "ipam": {{"type": "host-local", )"
      R"("ranges": [[{{"subnet": "{}"}}]], "dataDir": "{}/cni/ipam"}}}}]}})",
      bridge_, kPodSubnet, dir_);
  out.close();
  if (!out) return absl::InternalError(fmt::format("writing {}", conflist));
  return absl::OkStatus();
}

absl::Status ContainerdEnv::LaunchContainerd() {
  absl::StatusOr<pid_t> pid =
      Spawn({FindBinary(options_.containerd), "--config", dir_ + "/config.toml"},
            dir_ + "/containerd.log", /*new_group=*/true);
  if (!pid.ok()) return pid.status();
  containerd_pid_ = *pid;
  return WaitReady();
}

absl::Status ContainerdEnv::WaitReady() {
  const auto deadline = Clock::now() + options_.start_timeout;
  std::string last = "no socket yet";
  bool connected = false;
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(containerd_pid_, &status, WNOHANG) == containerd_pid_) {
      containerd_pid_ = -1;
      return absl::InternalError(
          fmt::format("containerd exited during start; log:\n{}", LogTail()));
    }
    // Connect only once the socket exists, so that gRPC starts without a reconnect backoff.
    struct stat st {};
    if (!connected) {
      if (::stat(socket_.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      rpc_->Connect(socket_);
      connected = true;
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::VersionRequest req;
    req.set_version("v1");
    v1::VersionResponse resp;
    grpc::Status s = rpc_->runtime->Version(&ctx, req, &resp);
    if (s.ok()) return absl::OkStatus();
    last = s.error_message();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::DeadlineExceededError(fmt::format(
      "containerd did not answer CRI Version within {} s (last: {}); log:\n{}",
      options_.start_timeout.count(), last, LogTail()));
}

absl::Status ContainerdEnv::ImportImage() {
  const std::string log = dir_ + "/image.log";
  if (absl::Status s = Run({"/bin/sh", kBuildImageScript}, log, std::chrono::seconds(60),
                           {"D=" + dir_, "BUSYBOX=" + options_.busybox, "IMAGE=" + options_.image,
                            "ARCH=" + Arch()});
      !s.ok()) {
    return absl::InternalError(fmt::format("building the busybox image: {}", MessageOf(s)));
  }
  if (absl::Status s = Run({FindBinary(options_.ctr), "-a", socket_, "-n", "k8s.io", "images",
                            "import", "--snapshotter", snapshotter_, dir_ + "/image.tar"},
                           log, std::chrono::seconds(60));
      !s.ok()) {
    return absl::InternalError(fmt::format("ctr images import: {}", MessageOf(s)));
  }
  // The CRI plugin learns of the image from containerd's events: wait until it sees it.
  const auto deadline = Clock::now() + options_.start_timeout;
  while (Clock::now() < deadline) {
    grpc::ClientContext ctx;
    rpc_->Arm(ctx);
    v1::ImageStatusRequest req;
    req.mutable_image()->set_image(options_.image);
    v1::ImageStatusResponse resp;
    grpc::Status s = rpc_->images->ImageStatus(&ctx, req, &resp);
    if (s.ok() && resp.has_image()) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::DeadlineExceededError(
      fmt::format("CRI ImageStatus never showed {}; log:\n{}", options_.image, LogTail()));
}

CriRuntimeOptions ContainerdEnv::RuntimeOptions() const {
  CriRuntimeOptions o;
  o.socket = socket_;
  o.timeout = std::chrono::milliseconds(5000);
  return o;
}

namespace {

void KubeletLabels(google::protobuf::Map<std::string, std::string>& labels, const EnvPod& pod) {
  labels["io.kubernetes.pod.uid"] = pod.uid;
  labels["io.kubernetes.pod.name"] = pod.name;
  labels["io.kubernetes.pod.namespace"] = pod.pod_namespace;
}

// The network namespace option of a pod's sandbox and containers.
v1::NamespaceMode NetworkMode(bool pod_network) { return pod_network ? v1::POD : v1::NODE; }

v1::PodSandboxConfig SandboxConfig(const EnvPod& pod, const std::string& log_dir, bool pod_network) {
  v1::PodSandboxConfig config;
  config.mutable_metadata()->set_name(pod.name);
  config.mutable_metadata()->set_uid(pod.uid);
  config.mutable_metadata()->set_namespace_(pod.pod_namespace);
  config.set_log_directory(log_dir);
  KubeletLabels(*config.mutable_labels(), pod);
  config.mutable_linux()->set_cgroup_parent(pod.cgroup_parent);
  v1::NamespaceOption* ns =
      config.mutable_linux()->mutable_security_context()->mutable_namespace_options();
  ns->set_network(NetworkMode(pod_network));
  ns->set_pid(v1::CONTAINER);
  ns->set_ipc(v1::POD);
  return config;
}

}  // namespace

absl::StatusOr<EnvPod> ContainerdEnv::RunPodSandbox(std::string_view uid, std::string_view name,
                                                    std::string_view pod_namespace,
                                                    bool pod_network) {
  if (pod_network && bridge_.empty()) {
    return absl::FailedPreconditionError(fmt::format(
        "pod {}: a pod network needs an environment started with pod_network", name));
  }
  EnvPod pod;
  pod.uid = std::string(uid);
  pod.name = std::string(name);
  pod.pod_namespace = std::string(pod_namespace);
  pod.cgroup_parent = fmt::format("{}/pod{}", cgroup_base_, uid);
  const std::string log_dir = fmt::format("{}/logs/{}", dir_, uid);
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  grpc::ClientContext ctx;
  rpc_->Arm(ctx);
  v1::RunPodSandboxRequest req;
  *req.mutable_config() = SandboxConfig(pod, log_dir, pod_network);
  v1::RunPodSandboxResponse resp;
  grpc::Status s = rpc_->runtime->RunPodSandbox(&ctx, req, &resp);
  if (!s.ok()) {
    absl::Status st = FromGrpcStatus(s, "RunPodSandbox", pod.name);
    return absl::Status(st.code(), fmt::format("{}; log:\n{}", MessageOf(st), LogTail()));
  }
  pod.sandbox_id = resp.pod_sandbox_id();
  pods_.push_back(pod);
  if (!pod_network) return pod;
  grpc::ClientContext status_ctx;
  rpc_->Arm(status_ctx);
  v1::PodSandboxStatusRequest status_req;
  status_req.set_pod_sandbox_id(pod.sandbox_id);
  v1::PodSandboxStatusResponse status;
  s = rpc_->runtime->PodSandboxStatus(&status_ctx, status_req, &status);
  if (!s.ok()) return FromGrpcStatus(s, "PodSandboxStatus", pod.sandbox_id);
  pod.ip = status.status().network().ip();
  if (pod.ip.empty()) {
    return absl::InternalError(fmt::format("pod {}: its sandbox {} has no IP on the pod network",
                                           pod.name, pod.sandbox_id));
  }
  pods_.back().ip = pod.ip;
  return pod;
}

absl::StatusOr<std::string> ContainerdEnv::StartContainer(const EnvPod& pod,
                                                          std::string_view name,
                                                          uint32_t attempt,
                                                          std::vector<std::string> command) {
  v1::CreateContainerRequest create;
  create.set_pod_sandbox_id(pod.sandbox_id);
  const std::string log_dir = fmt::format("{}/logs/{}", dir_, pod.uid);
  *create.mutable_sandbox_config() = SandboxConfig(pod, log_dir, !pod.ip.empty());
  v1::ContainerConfig* config = create.mutable_config();
  config->mutable_metadata()->set_name(std::string(name));
  config->mutable_metadata()->set_attempt(attempt);
  config->mutable_image()->set_image(options_.image);
  for (const std::string& arg : command) config->add_command(arg);
  KubeletLabels(*config->mutable_labels(), pod);
  (*config->mutable_labels())["io.kubernetes.container.name"] = std::string(name);
  config->set_log_path(fmt::format("{}_{}.log", name, attempt));
  config->mutable_linux()->mutable_resources()->set_cpu_shares(512);
  v1::NamespaceOption* ns =
      config->mutable_linux()->mutable_security_context()->mutable_namespace_options();
  ns->set_network(NetworkMode(!pod.ip.empty()));
  ns->set_pid(v1::CONTAINER);
  ns->set_ipc(v1::POD);

  grpc::ClientContext ctx;
  rpc_->Arm(ctx);
  v1::CreateContainerResponse created;
  grpc::Status s = rpc_->runtime->CreateContainer(&ctx, create, &created);
  if (!s.ok()) return FromGrpcStatus(s, "CreateContainer", name);

  grpc::ClientContext start_ctx;
  rpc_->Arm(start_ctx);
  v1::StartContainerRequest start;
  start.set_container_id(created.container_id());
  v1::StartContainerResponse started;
  s = rpc_->runtime->StartContainer(&start_ctx, start, &started);
  if (!s.ok()) return FromGrpcStatus(s, "StartContainer", created.container_id());
  return created.container_id();
}

absl::Status ContainerdEnv::StopContainer(std::string_view container_id) {
  grpc::ClientContext ctx;
  rpc_->Arm(ctx);
  v1::StopContainerRequest req;
  req.set_container_id(std::string(container_id));
  req.set_timeout(0);
  v1::StopContainerResponse resp;
  grpc::Status s = rpc_->runtime->StopContainer(&ctx, req, &resp);
  return s.ok() ? absl::OkStatus() : FromGrpcStatus(s, "StopContainer", container_id);
}

absl::StatusOr<std::string> ContainerdEnv::RestartContainer(const EnvPod& pod,
                                                            std::string_view container_id) {
  grpc::ClientContext ctx;
  rpc_->Arm(ctx);
  v1::ContainerStatusRequest req;
  req.set_container_id(std::string(container_id));
  v1::ContainerStatusResponse resp;
  grpc::Status s = rpc_->runtime->ContainerStatus(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s, "ContainerStatus", container_id);
  if (absl::Status stop = StopContainer(container_id); !stop.ok()) return stop;
  return StartContainer(pod, resp.status().metadata().name(),
                        resp.status().metadata().attempt() + 1);
}

absl::Status ContainerdEnv::RemoveContainer(std::string_view container_id) {
  grpc::ClientContext ctx;
  rpc_->Arm(ctx);
  v1::RemoveContainerRequest req;
  req.set_container_id(std::string(container_id));
  v1::RemoveContainerResponse resp;
  grpc::Status s = rpc_->runtime->RemoveContainer(&ctx, req, &resp);
  return s.ok() ? absl::OkStatus() : FromGrpcStatus(s, "RemoveContainer", container_id);
}

absl::Status ContainerdEnv::RemovePodSandbox(const EnvPod& pod) {
  {
    grpc::ClientContext ctx;
    rpc_->Arm(ctx);
    v1::StopPodSandboxRequest req;
    req.set_pod_sandbox_id(pod.sandbox_id);
    v1::StopPodSandboxResponse resp;
    grpc::Status s = rpc_->runtime->StopPodSandbox(&ctx, req, &resp);
    if (!s.ok()) return FromGrpcStatus(s, "StopPodSandbox", pod.sandbox_id);
  }
  grpc::ClientContext ctx;
  rpc_->Arm(ctx);
  v1::RemovePodSandboxRequest req;
  req.set_pod_sandbox_id(pod.sandbox_id);
  v1::RemovePodSandboxResponse resp;
  grpc::Status s = rpc_->runtime->RemovePodSandbox(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s, "RemovePodSandbox", pod.sandbox_id);
  std::erase_if(pods_, [&](const EnvPod& p) { return p.sandbox_id == pod.sandbox_id; });
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ContainerdEnv::ContainerPid(std::string_view container_id) {
  CriRuntime runtime(RuntimeOptions());
  ContainerInfo c;
  c.id = std::string(container_id);
  absl::StatusOr<CriContainerDetails> details = runtime.Details(c);
  if (!details.ok()) return details.status();
  if (!details->pid) {
    return absl::NotFoundError(fmt::format("container {} has no pid (not running)", container_id));
  }
  return *details->pid;
}

void ContainerdEnv::StopContainerd() {
  if (containerd_pid_ <= 0) return;
  ::kill(-containerd_pid_, SIGTERM);
  if (WaitFor(containerd_pid_, std::chrono::seconds(3)) < 0) ::kill(-containerd_pid_, SIGKILL);
  containerd_pid_ = -1;
}

absl::Status ContainerdEnv::RestartContainerd() {
  StopContainerd();
  return LaunchContainerd();
}

std::string ContainerdEnv::LogTail(size_t lines) const {
  return Tail(dir_ + "/containerd.log", lines);
}

void ContainerdEnv::Teardown() {
  if (containerd_pid_ > 0) {
    for (const EnvPod& pod : std::vector<EnvPod>(pods_)) (void)RemovePodSandbox(pod);
  }
  StopContainerd();
  // The bridge outlives the pods' links (CNI DEL removes those).
  if (!bridge_.empty() && fs::exists("/sys/class/net/" + bridge_)) {
    (void)Run({FindBinary("ip"), "link", "delete", bridge_}, dir_ + "/logs/network.log",
              std::chrono::seconds(10));
  }
  // Shims started for this containerd outlive it: find them by their -address argument.
  if (!socket_.empty()) {
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string pid = it->path().filename().string();
      if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
      std::ifstream in(it->path() / "cmdline");
      std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (cmdline.find(std::string(1, '\0') + socket_ + '\0') != std::string::npos) {
        ::kill(static_cast<pid_t>(std::stol(pid)), SIGKILL);
      }
    }
  }
  // Containers left behind (if removal failed) live in our cgroup parent.
  if (!cgroup_base_.empty()) {
    for (const fs::path& h : CgroupHierarchies()) {
      std::vector<pid_t> pids;
      CollectCgroupPids(h / cgroup_base_.substr(1), pids);
      for (pid_t p : pids) ::kill(p, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pods_.empty() ? 0 : 200));
    for (const fs::path& h : CgroupHierarchies()) RemoveCgroupTree(h / cgroup_base_.substr(1));
  }
  if (!dir_.empty()) {
    for (const std::string& m : MountsUnder(dir_)) ::umount2(m.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

ContainerdEnv::~ContainerdEnv() { Teardown(); }

}  // namespace huygens::cri::testing

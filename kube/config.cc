#include "kube/config.h"

#include <cerrno>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "fmt/format.h"

namespace huygens::kube {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::ErrnoToStatus(
      errno, fmt::format("{}: cannot read file \"{}\"", what, path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Resolve(std::string_view base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return (std::filesystem::path(std::string(base_dir)) / path).string();
}

// The named entry of a kubeconfig list (`clusters`, `users`, `contexts`) and its inner map.
absl::StatusOr<YAML::Node> FindNamed(const YAML::Node& root, const char* list, const char* inner,
                                     const std::string& name) {
  const YAML::Node entries = root[list];
  if (entries && entries.IsSequence()) {
    for (const YAML::Node& entry : entries) {
      if (entry["name"] && entry["name"].as<std::string>() == name) {
        YAML::Node body = entry[inner];
        return body ? body : YAML::Node(YAML::NodeType::Map);
      }
    }
  }
  return absl::NotFoundError(fmt::format("kubeconfig: {} has no entry named \"{}\"", list, name));
}

std::string Scalar(const YAML::Node& map, const char* key) {
  const YAML::Node v = map[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// PEM from `<key>-data` (base64) or from the file `<key>` (then named in `*file`).
absl::StatusOr<std::string> Pem(const YAML::Node& map, const std::string& key, std::string_view base_dir,
                                std::string_view where, std::string* file = nullptr) {
  std::string data = Scalar(map, (key + "-data").c_str());
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(absl::string_view(data.data(), data.size()), &decoded)) {
      return absl::InvalidArgumentError(fmt::format("kubeconfig: {}.{}-data is not valid base64", where, key));
    }
    return decoded;
  }
  std::string path = Scalar(map, key.c_str());
  if (path.empty()) return std::string();
  path = Resolve(base_dir, path);
  if (file != nullptr) *file = path;
  return ReadFile(path, fmt::format("kubeconfig: {}.{}", where, key));
}

}  // namespace

absl::StatusOr<RestConfig> ParseKubeconfig(std::string_view yaml, std::string_view base_dir,
                                           std::string_view context) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(fmt::format("kubeconfig: not valid YAML: {}", e.what()));
  }
  if (!root.IsMap()) return absl::InvalidArgumentError("kubeconfig: the document is not a map");
  try {
    std::string context_name = context.empty() ? Scalar(root, "current-context") : std::string(context);
    if (context_name.empty()) {
      return absl::NotFoundError("kubeconfig: no context given and current-context is not set");
    }
    auto ctx = FindNamed(root, "contexts", "context", context_name);
    if (!ctx.ok()) return ctx.status();
    std::string cluster_name = Scalar(*ctx, "cluster");
    std::string user_name = Scalar(*ctx, "user");
    auto cluster = FindNamed(root, "clusters", "cluster", cluster_name);
    if (!cluster.ok()) return cluster.status();

    RestConfig config;
    std::string cluster_where = fmt::format("clusters[{}].cluster", cluster_name);
    config.server = Scalar(*cluster, "server");
    while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
    if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
      return absl::InvalidArgumentError(
          fmt::format("kubeconfig: {}.server \"{}\" is not an http(s) URL", cluster_where, config.server));
    }
    config.insecure_skip_tls_verify = Scalar(*cluster, "insecure-skip-tls-verify") == "true";
    auto ca = Pem(*cluster, "certificate-authority", base_dir, cluster_where);
    if (!ca.ok()) return ca.status();
    config.ca_pem = *ca;
    if (std::string ns = Scalar(*ctx, "namespace"); !ns.empty()) config.default_namespace = ns;

    if (!user_name.empty()) {
      auto user = FindNamed(root, "users", "user", user_name);
      if (!user.ok()) return user.status();
      std::string where = fmt::format("users[{}].user", user_name);
      for (const char* unsupported : {"exec", "auth-provider", "username"}) {
        if ((*user)[unsupported]) {
          return absl::InvalidArgumentError(fmt::format("kubeconfig: {}.{} is not supported", where, unsupported));
        }
      }
      config.bearer_token = Scalar(*user, "token");
      if (std::string file = Scalar(*user, "tokenFile"); config.bearer_token.empty() && !file.empty()) {
        config.bearer_token_file = Resolve(base_dir, file);
        auto token = ReadFile(config.bearer_token_file, fmt::format("kubeconfig: {}.tokenFile", where));
        if (!token.ok()) return token.status();
        config.bearer_token = *token;
        absl::StripTrailingAsciiWhitespace(&config.bearer_token);
      }
      auto cert = Pem(*user, "client-certificate", base_dir, where, &config.client_certificate_file);
      if (!cert.ok()) return cert.status();
      auto key = Pem(*user, "client-key", base_dir, where, &config.client_key_file);
      if (!key.ok()) return key.status();
      if (cert->empty() != key->empty()) {
        return absl::InvalidArgumentError(
            fmt::format("kubeconfig: {} has a client certificate without a key or a key without a certificate", where));
      }
      config.client_certificate_pem = *cert;
      config.client_key_pem = *key;
    }
    return config;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(fmt::format("kubeconfig: unexpected structure: {}", e.what()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(fmt::format("kubeconfig: cannot be read: {}", e.what()));
  }
}

absl::StatusOr<RestConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  auto text = ReadFile(path, "kubeconfig");
  if (!text.ok()) return text.status();
  return ParseKubeconfig(*text, std::filesystem::path(path).parent_path().string(), context);
}

absl::StatusOr<RestConfig> InClusterConfig(const InClusterSource& source) {
  auto getenv = source.getenv ? source.getenv : [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v == nullptr ? std::nullopt : std::optional<std::string>(v);
  };
  auto host = getenv("KUBERNETES_SERVICE_HOST");
  auto port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || host->empty() || port->empty()) {
    return absl::FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (not running in a pod?)");
  }
  RestConfig config;
  bool ipv6 = host->find(':') != std::string::npos;
  config.server = fmt::format("https://{}{}{}:{}", ipv6 ? "[" : "", *host, ipv6 ? "]" : "", *port);
  const std::string dir = source.service_account_dir;
  config.bearer_token_file = dir + "/token";
  auto token = ReadFile(config.bearer_token_file, "in-cluster config: service-account token");
  if (!token.ok()) return token.status();
  config.bearer_token = *token;
  absl::StripTrailingAsciiWhitespace(&config.bearer_token);
  auto ca = ReadFile(dir + "/ca.crt", "in-cluster config: service-account CA");
  if (!ca.ok()) return ca.status();
  config.ca_pem = *ca;
  if (auto ns = ReadFile(dir + "/namespace", "in-cluster config: namespace"); ns.ok() && !ns->empty()) {
    config.default_namespace = *ns;
    absl::StripTrailingAsciiWhitespace(&config.default_namespace);
  }
  return config;
}

}  // namespace huygens::kube

// RestConfig: how to reach and authenticate to one Kubernetes API server, read from a kubeconfig
// file or from the in-cluster service-account environment (the two sources client-go supports
// without plugins).
//
// Invariants after a successful load: `server` is an http:// or https:// URL without a trailing
// slash; at most one of the token / client-certificate credentials is used per request (both
// may be set; the server decides). PEM material is held in memory (files are read at load);
// the token and client certificate files are also named, so that RestClient re-reads them when
// they rotate (kube/credential_files.h).
// A value type: copy freely; no thread-safety concerns.
#ifndef HUYGENS_KUBE_CONFIG_H_
#define HUYGENS_KUBE_CONFIG_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace huygens::kube {

struct RestConfig {
  // API server URL, e.g. "https://10.0.0.1:6443". Required.
  std::string server;
  // Bearer token (kubeconfig `token`/`tokenFile`, in-cluster service-account token). Never logged.
  std::string bearer_token;
  // Client certificate and key, PEM (kubeconfig `client-certificate[-data]`, `client-key[-data]`).
  std::string client_certificate_pem;
  std::string client_key_pem;
  // The files bearer_token, client_certificate_pem and client_key_pem were read from (kubeconfig
  // `tokenFile`, `client-certificate`, `client-key`; in-cluster, the service-account token);
  // empty when given inline. RestClient re-reads a named file when it changes, as client-go
  // re-reads a rotated (bound) service-account token and a rotated client certificate.
  std::string bearer_token_file;
  std::string client_certificate_file;
  std::string client_key_file;
  // CA bundle, PEM, that the server certificate must chain to. Empty: the system's CAs.
  std::string ca_pem;
  // Skip verifying the server certificate (kubeconfig `insecure-skip-tls-verify`). Default false.
  bool insecure_skip_tls_verify = false;
  // Namespace of the selected context (kubeconfig) or of the pod (in-cluster). Default "default".
  std::string default_namespace = "default";
  // Client-side rate limit, requests per second and burst (client-go's QPS and Burst; watches
  // count once, when opened). Default 50 / 100 (kube-scheduler's defaults). qps <= 0: unlimited.
  double qps = 50;
  int burst = 100;
  // Whole-request timeout for everything but watches. Default 30 s.
  std::chrono::milliseconds timeout{30000};
  // TCP + TLS connect timeout. Default 5 s.
  std::chrono::milliseconds connect_timeout{5000};
  // TCP keepalive on every connection: first probe after this idle time, then one every this
  // interval, so a peer that vanished (half-open connection) is noticed; client-go's dialer
  // keeps alive every 30 s. Default 30 s; zero turns keepalive off.
  std::chrono::seconds tcp_keepalive{30};
  // A watch (RestClient::Stream) that receives no byte for this long is cut (libcurl's
  // low-speed limit, 1 byte/s over this time) and ends DeadlineExceeded, so the informer
  // reconnects instead of serving a stale cache from a frozen connection. A live watch with
  // bookmarks gets one about every minute from kube-apiserver whenever the cluster changed.
  // An informer counts as stale (readiness fails) after this + kStaleMargin (kube/informer.h)
  // without hearing from the server. Default 120 s; zero: no limit (and no staleness bound).
  std::chrono::seconds watch_idle_timeout{120};
  // User-Agent header. Default "huygens/0.1".
  std::string user_agent = "huygens/0.1";
};

// Loads `path` (a kubeconfig) and selects `context` ("" = current-context). Relative file paths
// in the file are resolved against the file's directory, as kubectl does.
// Errors: NotFound (file, context, cluster or user missing), InvalidArgument (malformed YAML,
// bad base64, an unsupported auth method such as `exec` or `auth-provider`), each naming the
// field.
absl::StatusOr<RestConfig> LoadKubeconfig(const std::string& path, std::string_view context = "");

// Same, from kubeconfig text; `base_dir` resolves relative file paths.
absl::StatusOr<RestConfig> ParseKubeconfig(std::string_view yaml, std::string_view base_dir,
                                           std::string_view context = "");

// Where the in-cluster configuration comes from; the defaults are the real ones.
struct InClusterSource {
  // Reads an environment variable (nullopt if unset). Default: std::getenv.
  std::function<std::optional<std::string>(const char*)> getenv;
  // Folder of the mounted service-account secret. Default
  // "/var/run/secrets/kubernetes.io/serviceaccount" (files token, ca.crt, namespace).
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// In-cluster configuration: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6
// hosts bracketed), the service-account token and CA, and the pod's namespace, as client-go's
// rest.InClusterConfig. Errors: FailedPrecondition when not in a cluster (variables unset),
// NotFound when the token file is missing.
absl::StatusOr<RestConfig> InClusterConfig(const InClusterSource& source = {});

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_CONFIG_H_

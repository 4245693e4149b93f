// PodResourcesReader: the NUMA-affine devices kubelet reports through its pod resources API, for
// the device figures of the published NodeResourceTopology.
//
// What it does: each pass (Read) asks kubelet's pod resources API v1 (the gRPC socket
// `podResourcesSocket`, by default /var/lib/kubelet/pod-resources/kubelet.sock; the subset in
// agent/podresources_api/podresources.proto) for the devices kubelet can allocate
// (GetAllocatableResources) and the devices it has given to containers (List), and counts them
// per device-plugin resource and NUMA node (CountDevices), the way NFD's topology-updater
// fills a NodeResourceTopology zone: allocatable = the devices of the zone, available = those
// no container holds.
//
// Rules (CountDevices):
//   - a device is counted once per resource and device id, however many containers list it
//     (kubelet lists an init container's device again for the app container that reuses it);
//   - a device whose topology names several NUMA nodes counts on the lowest of them (a zone
//     lists each device once); one without topology is not NUMA-affine and is left out, as is
//     one that names a NUMA node the machine lacks (named in `left_out`);
//   - a device in use that kubelet no longer lists as allocatable (it turned unhealthy while
//     held) counts as used on its NUMA node, and available never goes below 0.
//
// Handled, never fatal: no socket configured, a socket that does not answer within the
// timeout, a kubelet without the API: no devices are published and the reason is given (the
// reader logs it once per change, not every pass).
//
// Thread-safety: not thread-safe; one owner (the agent's loop) calls Read.
#ifndef HUYGENS_AGENT_POD_RESOURCES_H_
#define HUYGENS_AGENT_POD_RESOURCES_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/nrt.h"
#include "topology/topology.h"

namespace huygens::agent {

// kubelet's default pod resources socket.
inline constexpr char kDefaultPodResourcesSocket[] =
    "/var/lib/kubelet/pod-resources/kubelet.sock";

// Devices of one resource that share a NUMA affinity, as the API lists them
// (ContainerDevices).
struct DeviceGroup {
  std::string resource;                // e.g. "nvidia.com/gpu"
  std::vector<std::string> device_ids;
  std::vector<int64_t> numa_nodes;     // empty: the device plugin gave no topology
};

// One answer of the API: GetAllocatableResources' devices and every container's devices of
// List.
struct PodResourcesSnapshot {
  std::vector<DeviceGroup> allocatable;
  std::vector<DeviceGroup> in_use;
};

// Per NUMA node id and resource name, the zone figures (see the file comment), ready for
// NrtInput::devices.
using NrtDevices = std::map<int, std::map<std::string, NrtDeviceFigures>>;

// The counts of `snapshot` on machine `t` (see the file comment); each device left out adds a
// line to `left_out`, e.g. `nvidia.com/gpu "gpu-3": NUMA node 7 does not exist`.
NrtDevices CountDevices(const PodResourcesSnapshot& snapshot, const CpuTopology& t,
                        std::vector<std::string>& left_out);

struct PodResourcesOptions {
  std::shared_ptr<const CpuTopology> topology;  // required
  std::string socket = kDefaultPodResourcesSocket;  // "" = do not ask kubelet
  std::chrono::milliseconds timeout{2000};          // per call
};

// One reading.
struct DeviceUse {
  NrtDevices devices;  // empty when kubelet could not be asked
  // Why nothing could be read, or which devices were left out; empty when all was used.
  std::string reason;
};

class PodResourcesReader {
 public:
  explicit PodResourcesReader(PodResourcesOptions options);
  ~PodResourcesReader();
  PodResourcesReader(const PodResourcesReader&) = delete;
  PodResourcesReader& operator=(const PodResourcesReader&) = delete;

  // Asks kubelet now (see the file comment). Logs the reason when it differs from the last
  // pass's (warning level, info when it clears).
  DeviceUse Read();

  // GetAllocatableResources and List, within the timeout each. Errors: Unavailable (no such
  // socket, kubelet not answering), Unimplemented (a kubelet without the API) and the others of
  // FromGrpcStatus (cri/grpc_status.h), naming the call.
  absl::StatusOr<PodResourcesSnapshot> Ask();

 private:
  struct Rpc;
  PodResourcesOptions options_;
  std::unique_ptr<Rpc> rpc_;  // null without a socket
  std::string last_reason_;
};

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_POD_RESOURCES_H_

// This file is not part of Kubernetes. testbed/oracle/build.sh adds it to kubelet's package
// k8s.io/kubernetes/pkg/kubelet/cm/devicemanager at build time (go build -overlay), so the
// Huygens oracle can call kubelet's unexported device hint function. The wrapper only builds
// the manager fields that function reads and forwards to it; none of kubelet's logic is
// repeated here.

package devicemanager

import (
	"k8s.io/apimachinery/pkg/util/sets"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
)

// OracleGenerateDeviceTopologyHints calls kubelet's ManagerImpl.generateDeviceTopologyHints for
// one resource on a manager that knows only the machine's NUMA nodes and the resource's
// devices (device id -> the device with its topology).
func OracleGenerateDeviceTopologyHints(numaNodes []int, resource string, devices map[string]*pluginapi.Device, available, reusable sets.Set[string], request int) []topologymanager.TopologyHint {
	m := &ManagerImpl{
		numaNodes:  numaNodes,
		allDevices: ResourceDeviceInstances{resource: DeviceInstances(devices)},
	}
	return m.generateDeviceTopologyHints(resource, available, reusable, request)
}

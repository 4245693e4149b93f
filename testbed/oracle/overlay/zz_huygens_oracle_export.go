// This file is not part of Kubernetes. testbed/oracle/build.sh adds it to kubelet's package
// k8s.io/kubernetes/pkg/kubelet/cm/cpumanager at build time (go build -overlay), so the
// Huygens oracle can call kubelet's unexported take and hint functions. Every wrapper only
// forwards its arguments to kubelet's own function; none of kubelet's logic is repeated here.

package cpumanager

import (
	"github.com/go-logr/logr"
	"k8s.io/utils/cpuset"

	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager/bitmask"
)

// OracleTakeByTopologyNUMAPacked calls kubelet's takeByTopologyNUMAPacked.
func OracleTakeByTopologyNUMAPacked(logger logr.Logger, topo *topology.CPUTopology, available cpuset.CPUSet, numCPUs int, spread bool, preferAlignByUncoreCache bool) (cpuset.CPUSet, error) {
	return takeByTopologyNUMAPacked(logger, topo, available, numCPUs, sortingStrategy(spread), preferAlignByUncoreCache)
}

// OracleTakeByTopologyNUMADistributed calls kubelet's takeByTopologyNUMADistributed.
func OracleTakeByTopologyNUMADistributed(logger logr.Logger, topo *topology.CPUTopology, available cpuset.CPUSet, numCPUs int, cpuGroupSize int, spread bool) (cpuset.CPUSet, error) {
	return takeByTopologyNUMADistributed(logger, topo, available, numCPUs, cpuGroupSize, sortingStrategy(spread))
}

// OracleGenerateCPUTopologyHints calls kubelet's staticPolicy.generateCPUTopologyHints on a
// policy that has only a topology and the align-by-socket option set.
func OracleGenerateCPUTopologyHints(topo *topology.CPUTopology, alignBySocket bool, available, reusable cpuset.CPUSet, request int) []topologymanager.TopologyHint {
	p := &staticPolicy{topology: topo, options: StaticPolicyOptions{AlignBySocket: alignBySocket}}
	return p.generateCPUTopologyHints(available, reusable, request)
}

// OracleAllocateCPUs calls kubelet's staticPolicy.allocateCPUs (the take behind Allocate: the
// CPUs aligned with the NUMA affinity first, the affinity's NUMA nodes or with align-by-socket
// their sockets, then the rest) over the given state, on a policy that has only a topology and
// the options that choose the take: distribute-cpus-across-cores (spread),
// distribute-cpus-across-numa with full-pcpus-only when cpuGroupSize > 1,
// prefer-align-cpus-by-uncorecache and align-by-socket.
func OracleAllocateCPUs(logger logr.Logger, topo *topology.CPUTopology, s state.State, numCPUs int, numaAffinity bitmask.BitMask, reusable cpuset.CPUSet, spread, distribute bool, cpuGroupSize int, uncore, alignBySocket bool) (cpuset.CPUSet, error) {
	p := &staticPolicy{
		topology:     topo,
		reservedCPUs: cpuset.New(),
		cpuGroupSize: cpuGroupSize,
		options: StaticPolicyOptions{
			FullPhysicalCPUsOnly:           distribute && cpuGroupSize > 1,
			DistributeCPUsAcrossNUMA:       distribute,
			AlignBySocket:                  alignBySocket,
			DistributeCPUsAcrossCores:      spread,
			PreferAlignByUncoreCacheOption: uncore,
		},
	}
	alloc, err := p.allocateCPUs(logger, s, numCPUs, numaAffinity, reusable)
	return alloc.CPUs, err
}

func sortingStrategy(spread bool) CPUSortingStrategy {
	if spread {
		return CPUSortingStrategySpread
	}
	return CPUSortingStrategyPacked
}

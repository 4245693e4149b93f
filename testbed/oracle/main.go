// Command huygens-kubelet-oracle answers the `huygens allocate` JSON-lines protocol
// (docs/allocate.md) with kubelet's own CPU, memory and topology manager code, from the
// k8s.io/kubernetes release pinned in testbed/go.mod. It is the reference the differential test
// (testbed/oracle_diff_test.cc) compares Huygens against; it is never shipped.
//
// Ops: take (takeByTopologyNUMAPacked / takeByTopologyNUMADistributed; with `affinity`, the
// static policy's allocateCPUs), static-allocate (NewStaticPolicy + Allocate over an in-memory
// state), hints (the static policy's generateCPUTopologyHints), merge (NewManager's policy and
// its Merge), memory-allocate and memory-hints (memory.go: the memory manager's Static policy;
// topology JSON's numaNodes[].memoryBytes and hugepages become cadvisor's node memory),
// device-hints (devices.go: the device manager's generateDeviceTopologyHints). The unexported functions are reached through thin wrappers that
// testbed/oracle/build.sh adds to kubelet's package with `go build -overlay`
// (overlay/zz_huygens_oracle_export.go, overlay/zz_huygens_oracle_devices.go); this program only translates the protocol's JSON to
// kubelet's types and back.
//
// Topologies: the protocol's inline topology JSON (minimal or full form) or {"file": "x.json"}
// holding the same; synthetic specs and XML/sysfs files are not read here (the test harness
// converts them with `huygens discover --output json` first).
//
// A kubelet call that uses more than -timeout of CPU time (kubelet's distributed take can loop
// forever) is answered with kind "hang" and the program exits with status 3, because the
// spinning goroutine cannot be stopped; the caller restarts it.
//
// With -workers N, N child processes answer at once, in request order, and a hang restarts only
// the child that hung (workers.go); the oracle then never exits on a hang.
//
// With -time, every answered request also carries "ns": kubelet's CPU nanoseconds per call,
// measured over repeated calls on the already decoded input (no I/O, no JSON).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager/bitmask"
)

var (
	timeout  = flag.Duration("timeout", 5*time.Second, "most CPU time a kubelet call on up to 128 CPUs may use before the answer is kind \"hang\" (scaled by CPUs/128 on larger machines)")
	timeMode = flag.Bool("time", false, "add \"ns\": kubelet's nanoseconds per call (repeated calls, decoded input)")
	timeFor  = flag.Duration("time-for", 200*time.Millisecond, "with -time, how much CPU time to spend repeating each call")
)

func init() {
	flag.IntVar(&workers, "workers", 1, "answer through this many child processes at once (answers stay in request order; a hang restarts only its child)")
}

// protocolError is an answer with an error kind of the protocol (invalid, unavailable, ...).
type protocolError struct {
	kind string
	msg  string
}

func (e *protocolError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &protocolError{"invalid", fmt.Sprintf(format, args...)}
}

// kindOf maps an error of kubelet's to the protocol's kinds.
func kindOf(err error) string {
	var pe *protocolError
	if errors.As(err, &pe) {
		return pe.kind
	}
	var smt cpumanager.SMTAlignmentError
	if errors.As(err, &smt) {
		return "smt-alignment"
	}
	if strings.Contains(err.Error(), "not enough cpus available") ||
		strings.HasPrefix(err.Error(), "[memorymanager] ") {
		return "unavailable"
	}
	return "internal"
}

// machine is one decoded topology: kubelet's CPUTopology and the cadvisor nodes it came from.
type machine struct {
	topo   *topology.CPUTopology
	nodes  []cadvisorapi.Node
	online cpuset.CPUSet
}

type cpuJSON struct {
	ID     int   `json:"id"`
	Core   *int  `json:"core"`
	Socket *int  `json:"socket"`
	Numa   *int  `json:"numa"`
	L3     *int  `json:"l3"`
	Online *bool `json:"online"`
}

type topologyJSON struct {
	File      string    `json:"file"`
	Synthetic string    `json:"synthetic"`
	Cpus      []cpuJSON `json:"cpus"`
	NumaNodes []struct {
		ID          int               `json:"id"`
		MemoryBytes uint64            `json:"memoryBytes"`
		Hugepages   map[string]uint64 `json:"hugepages"` // page size in bytes -> pages
	} `json:"numaNodes"`
	Distances map[string]map[string]uint64 `json:"distances"`
}

var machines = map[string]*machine{}

var logger = logr.Discard()

// loadMachine decodes a topology value into kubelet's CPUTopology by building the cadvisor
// MachineInfo kubelet would read and calling kubelet's topology.Discover on it.
func loadMachine(raw json.RawMessage) (*machine, error) {
	key := string(raw)
	if m, ok := machines[key]; ok {
		return m, nil
	}
	var t topologyJSON
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, invalid("topology: %v", err)
	}
	if t.Synthetic != "" {
		return nil, invalid("topology: the oracle reads topology JSON only; convert synthetic specs with huygens discover --output json")
	}
	if t.File != "" {
		if !strings.HasSuffix(t.File, ".json") {
			return nil, invalid("topology.file: the oracle reads topology JSON (*.json) only")
		}
		data, err := os.ReadFile(t.File)
		if err != nil {
			return nil, &protocolError{"not-found", err.Error()}
		}
		var inner topologyJSON
		if err := json.Unmarshal(data, &inner); err != nil {
			return nil, invalid("topology.file: %v", err)
		}
		if t.Distances != nil {
			inner.Distances = t.Distances
		}
		t = inner
	}
	mi, err := machineInfo(t)
	if err != nil {
		return nil, err
	}
	topo, err := topology.Discover(logger, mi)
	if err != nil {
		return nil, invalid("topology: kubelet: %v", err)
	}
	m := &machine{topo: topo, nodes: mi.Topology, online: topo.CPUDetails.CPUs()}
	if len(machines) > 64 {
		machines = map[string]*machine{}
	}
	machines[key] = m
	return m, nil
}

// machineInfo is the cadvisor view of a topology JSON: one node per NUMA node, one core per
// Huygens core (its online threads), the L3 group as the core's uncore cache.
func machineInfo(t topologyJSON) (*cadvisorapi.MachineInfo, error) {
	type coreKey struct{ numa, core int }
	cores := map[coreKey]*cadvisorapi.Core{}
	numaIDs := map[int]bool{}
	sockets := map[int]bool{}
	numCPUs := 0
	for i, c := range t.Cpus {
		if c.Online != nil && !*c.Online {
			continue
		}
		if c.Core == nil || c.Socket == nil || c.Numa == nil {
			return nil, invalid("topology.cpus[%d]: core, socket and numa are required", i)
		}
		numCPUs++
		numaIDs[*c.Numa] = true
		sockets[*c.Socket] = true
		k := coreKey{*c.Numa, *c.Core}
		core, ok := cores[k]
		if !ok {
			core = &cadvisorapi.Core{Id: *c.Core, SocketID: *c.Socket}
			l3 := *c.Socket // the protocol's default: one L3 group per socket
			if c.L3 != nil {
				l3 = *c.L3
			}
			core.UncoreCaches = []cadvisorapi.Cache{{Id: l3, Level: 3, Type: "Unified"}}
			cores[k] = core
		}
		core.Threads = append(core.Threads, c.ID)
	}
	memory := map[int]uint64{}
	hugepages := map[int][]cadvisorapi.HugePagesInfo{}
	for i, n := range t.NumaNodes {
		numaIDs[n.ID] = true
		memory[n.ID] = n.MemoryBytes
		for size, pages := range n.Hugepages {
			var bytes uint64
			if _, err := fmt.Sscan(size, &bytes); err != nil || bytes < 1024 {
				return nil, invalid("topology.numaNodes[%d].hugepages.%s: not a page size in bytes", i, size)
			}
			// cadvisor counts page sizes in KiB, as kubelet's memory manager reads them.
			hugepages[n.ID] = append(hugepages[n.ID], cadvisorapi.HugePagesInfo{PageSize: bytes / 1024, NumPages: pages})
		}
		sort.Slice(hugepages[n.ID], func(a, b int) bool { return hugepages[n.ID][a].PageSize < hugepages[n.ID][b].PageSize })
	}
	for from := range t.Distances {
		var id int
		if _, err := fmt.Sscan(from, &id); err == nil {
			numaIDs[id] = true
		}
	}
	ids := make([]int, 0, len(numaIDs))
	for id := range numaIDs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	mi := &cadvisorapi.MachineInfo{NumCores: numCPUs, NumSockets: len(sockets)}
	for _, id := range ids {
		node := cadvisorapi.Node{Id: id, Memory: memory[id], HugePages: hugepages[id]}
		if row, ok := t.Distances[fmt.Sprint(id)]; ok {
			node.Distances = distanceRow(row, ids)
		}
		mi.Topology = append(mi.Topology, node)
	}
	keys := make([]coreKey, 0, len(cores))
	for k := range cores {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].numa != keys[j].numa {
			return keys[i].numa < keys[j].numa
		}
		return keys[i].core < keys[j].core
	})
	for _, k := range keys {
		for i := range mi.Topology {
			if mi.Topology[i].Id == k.numa {
				mi.Topology[i].Cores = append(mi.Topology[i].Cores, *cores[k])
			}
		}
	}
	return mi, nil
}

// distanceRow is cadvisor's distance slice (indexed by NUMA node id) of one matrix row.
func distanceRow(row map[string]uint64, ids []int) []uint64 {
	out := make([]uint64, ids[len(ids)-1]+1)
	for to, d := range row {
		var id int
		if _, err := fmt.Sscan(to, &id); err == nil && id < len(out) {
			out[id] = d
		}
	}
	return out
}

func parseCPUs(raw json.RawMessage, field string, fallback cpuset.CPUSet) (cpuset.CPUSet, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return fallback, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return cpuset.New(), invalid("%s: %v", field, err)
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return cpuset.New(), invalid("%s: %v", field, err)
	}
	return set, nil
}

// boolText reads an option value that may be a JSON boolean or Go boolean text.
func boolText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

type hintJSON struct {
	NumaNodes []int `json:"numaNodes"`
	Preferred bool  `json:"preferred"`
}

func toHint(h *hintJSON) (topologymanager.TopologyHint, error) {
	if h == nil {
		return topologymanager.TopologyHint{Preferred: true}, nil
	}
	out := topologymanager.TopologyHint{Preferred: h.Preferred}
	if h.NumaNodes != nil {
		mask, err := bitmask.NewBitMask(h.NumaNodes...)
		if err != nil {
			return out, invalid("hint: %v", err)
		}
		out.NUMANodeAffinity = mask
	}
	return out, nil
}

func fromHint(h topologymanager.TopologyHint) map[string]any {
	var nodes []int
	if h.NUMANodeAffinity != nil {
		nodes = h.NUMANodeAffinity.GetBits()
		if nodes == nil {
			nodes = []int{}
		}
	}
	return map[string]any{"numaNodes": nodes, "preferred": h.Preferred}
}

type request struct {
	ID       json.RawMessage `json:"id"`
	Op       string          `json:"op"`
	Topology json.RawMessage `json:"topology"`

	// take, hints
	Available json.RawMessage            `json:"available"`
	NumCpus   *int                       `json:"numCpus"`
	Options   map[string]json.RawMessage `json:"options"`
	Affinity  *hintJSON                  `json:"affinity"`
	// hints
	Reusable              json.RawMessage `json:"reusable"`
	AlignBySocket         bool            `json:"alignBySocket"`
	MaxAllowableNumaNodes *int            `json:"maxAllowableNumaNodes"`
	// static-allocate
	ReservedCpus    json.RawMessage            `json:"reservedCpus"`
	NumReservedCpus int                        `json:"numReservedCpus"`
	PolicyOptions   map[string]json.RawMessage `json:"policyOptions"`
	DefaultCpuSet   json.RawMessage            `json:"defaultCpuSet"`
	Assignments     json.RawMessage            `json:"assignments"` // memory-* ops: memory blocks
	Pod             *podJSON                   `json:"pod"`
	Container       string                     `json:"container"`
	// memory-allocate, memory-hints (memory.go)
	ReservedMemory map[string]map[string]json.RawMessage `json:"reservedMemory"`
	MachineState   json.RawMessage                       `json:"machineState"`
	Containers     []memoryContainerJSON                 `json:"containers"`
	Remove         []memoryRemoveJSON                    `json:"remove"`
	WithHints      bool                                  `json:"withHints"`
	// device-hints (devices.go); also numaNodes, and available / reusable as counts
	Devices  json.RawMessage `json:"devices"`
	Resource string          `json:"resource"`
	Request  *int            `json:"request"`
	// merge
	Policy    string                       `json:"policy"`
	Scope     string                       `json:"scope"`
	NumaNodes []int                        `json:"numaNodes"`
	Distances map[string]map[string]uint64 `json:"distances"`
	Providers []map[string]*[]hintJSON     `json:"providers"`
}

type containerJSON struct {
	Name          string          `json:"name"`
	CPURequest    json.RawMessage `json:"cpuRequest"`
	CPULimit      json.RawMessage `json:"cpuLimit"`
	RestartPolicy *string         `json:"restartPolicy"`
	MemoryRequest json.RawMessage `json:"memoryRequest"`
	MemoryLimit   json.RawMessage `json:"memoryLimit"`
	// Hugepages holds the container's "hugepages-<size>" members (read by UnmarshalJSON).
	Hugepages map[string]json.RawMessage `json:"-"`
}

func (c *containerJSON) UnmarshalJSON(b []byte) error {
	type plain containerJSON
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k, v := range all {
		if strings.HasPrefix(k, "hugepages-") {
			if c.Hugepages == nil {
				c.Hugepages = map[string]json.RawMessage{}
			}
			c.Hugepages[k] = v
		}
	}
	return nil
}

// hasMemory reports whether the container gives memory or hugepages.
func (c *containerJSON) hasMemory() bool {
	return len(c.MemoryRequest) > 0 || len(c.MemoryLimit) > 0 || len(c.Hugepages) > 0
}

type podJSON struct {
	UID            string          `json:"uid"`
	Qos            string          `json:"qos"`
	CPURequest     json.RawMessage `json:"cpuRequest"`
	CPULimit       json.RawMessage `json:"cpuLimit"`
	InitContainers []containerJSON `json:"initContainers"`
	Containers     []containerJSON `json:"containers"`
}

// call is one decoded request, ready to run against kubelet: run may be repeated (-time).
type call struct {
	run func() (map[string]any, error)
	// kernel, when set, is the bare kubelet call that -time measures (no output formatting).
	kernel func()
	// cpus is the size of the request's machine (online CPUs; 0 for merge), which scales the
	// CPU-time budget before a call counts as a hang (see budget).
	cpus int
}

// budget is the CPU time a call on a machine of `cpus` CPUs may use before it is answered as
// kind "hang": -timeout for machines up to 128 CPUs, scaled linearly above (kubelet's own
// packed take costs up to ~35 ms on 160 CPUs and ~250 ms on 768, measured on the CI machine).
func budget(cpus int) time.Duration {
	if cpus <= 128 {
		return *timeout
	}
	return *timeout * time.Duration(cpus) / 128
}

func quantity(raw json.RawMessage, field string) (*resource.Quantity, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, invalid("%s: %v", field, err)
	}
	return &q, nil
}

// memoryJSON is a container's memory as the memory ops give it: memoryRequest, memoryLimit
// (Kubernetes quantities) and hugepages-<size> requests (limit = request, as the API requires).
type memoryJSON struct {
	request, limit json.RawMessage
	hugepages      map[string]json.RawMessage
}

// requestAndLimit sets one resource's request and limit from their quantities (absent: unset);
// a missing request defaults to the limit, as Kubernetes does.
func requestAndLimit(r *v1.ResourceRequirements, name v1.ResourceName, req, lim json.RawMessage, reqField, limField string) error {
	rq, err := quantity(req, reqField)
	if err != nil {
		return err
	}
	lq, err := quantity(lim, limField)
	if err != nil {
		return err
	}
	if rq != nil {
		r.Requests[name] = *rq
	}
	if lq != nil {
		r.Limits[name] = *lq
		if rq == nil {
			r.Requests[name] = *lq
		}
	}
	return nil
}

func resources(req, lim json.RawMessage, field string, mem *memoryJSON) (v1.ResourceRequirements, error) {
	r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	if err := requestAndLimit(&r, v1.ResourceCPU, req, lim, field+".cpuRequest", field+".cpuLimit"); err != nil {
		return r, err
	}
	if mem == nil {
		// Memory not modelled: every container gets memory request = limit, so kubelet's QoS
		// class follows the CPU fields (or the request's "qos", set as the pod's status class,
		// which kubelet reads first).
		m := resource.MustParse("1Gi")
		r.Requests[v1.ResourceMemory] = m
		r.Limits[v1.ResourceMemory] = m
		return r, nil
	}
	if err := requestAndLimit(&r, v1.ResourceMemory, mem.request, mem.limit, field+".memoryRequest", field+".memoryLimit"); err != nil {
		return r, err
	}
	for name, raw := range mem.hugepages { // limit = request, as the API requires
		if err := requestAndLimit(&r, v1.ResourceName(name), nil, raw, "", field+"."+name); err != nil {
			return r, err
		}
	}
	return r, nil
}

func toPod(p *podJSON) (*v1.Pod, error) {
	if p == nil {
		return nil, invalid("pod: missing")
	}
	pod := &v1.Pod{}
	pod.UID = types.UID(p.UID)
	pod.Name = p.UID
	pod.Status.QOSClass = v1.PodQOSClass(p.Qos)
	// Memory is modelled when any container gives memory or hugepages; then containers
	// without them have none.
	modelled := false
	for _, list := range [][]containerJSON{p.InitContainers, p.Containers} {
		for i := range list {
			modelled = modelled || list[i].hasMemory()
		}
	}
	conv := func(cs []containerJSON, field string) ([]v1.Container, error) {
		out := []v1.Container{}
		for i, c := range cs {
			var mem *memoryJSON
			if modelled {
				mem = &memoryJSON{c.MemoryRequest, c.MemoryLimit, c.Hugepages}
			}
			r, err := resources(c.CPURequest, c.CPULimit, fmt.Sprintf("%s[%d]", field, i), mem)
			if err != nil {
				return nil, err
			}
			vc := v1.Container{Name: c.Name, Resources: r}
			if c.RestartPolicy != nil {
				rp := v1.ContainerRestartPolicy(*c.RestartPolicy)
				vc.RestartPolicy = &rp
			}
			out = append(out, vc)
		}
		return out, nil
	}
	var err error
	if pod.Spec.InitContainers, err = conv(p.InitContainers, "pod.initContainers"); err != nil {
		return nil, err
	}
	if pod.Spec.Containers, err = conv(p.Containers, "pod.containers"); err != nil {
		return nil, err
	}
	if len(p.CPURequest) > 0 || len(p.CPULimit) > 0 {
		r, err := resources(p.CPURequest, p.CPULimit, "pod", nil)
		if err != nil {
			return nil, err
		}
		pod.Spec.Resources = &r
	}
	return pod, nil
}

// store is the topology manager as the static policy sees it: the request's affinity.
type store struct {
	hint topologymanager.TopologyHint
}

func (s store) GetAffinity(string, string) topologymanager.TopologyHint { return s.hint }
func (s store) GetPolicy() topologymanager.Policy                       { return topologymanager.NewNonePolicy() }

func optionText(opts map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range opts {
		out[k] = boolText(v)
	}
	return out
}

func decode(r *request) (*call, error) {
	switch r.Op {
	case "take":
		return decodeTake(r)
	case "hints":
		return decodeHints(r)
	case "static-allocate":
		return decodeStaticAllocate(r)
	case "merge":
		return decodeMerge(r)
	case "memory-allocate":
		return decodeMemoryAllocate(r)
	case "memory-hints":
		return decodeMemoryHints(r)
	case "device-hints":
		return decodeDeviceHints(r)
	}
	return nil, invalid("op: %q is not an op kubelet has", r.Op)
}

// sizedRequest decodes what take and hints share: the machine, the free CPUs ("available",
// default all online CPUs, cut to the machine's CPUs since kubelet knows no others) and the
// request's CPU count (numCpus, required, not negative).
func sizedRequest(r *request) (m *machine, available cpuset.CPUSet, n int, err error) {
	if m, err = loadMachine(r.Topology); err != nil {
		return nil, available, 0, err
	}
	if available, err = parseCPUs(r.Available, "available", m.online); err != nil {
		return nil, available, 0, err
	}
	available = available.Intersection(m.online)
	if r.NumCpus == nil || *r.NumCpus < 0 {
		return nil, available, 0, invalid("numCpus: missing or negative")
	}
	return m, available, *r.NumCpus, nil
}

func decodeTake(r *request) (*call, error) {
	m, available, n, err := sizedRequest(r)
	if err != nil {
		return nil, err
	}
	spread, distribute, uncore, bySocket := false, false, false, false
	group := 1
	for k, v := range r.Options {
		switch k {
		case "cpuSortingStrategy":
			var s string
			_ = json.Unmarshal(v, &s)
			spread = s == "spread"
		case "distribute-cpus-across-numa":
			distribute = boolText(v) == "true"
		case "prefer-align-cpus-by-uncorecache":
			uncore = boolText(v) == "true"
		case "align-by-socket":
			bySocket = boolText(v) == "true"
		case "cpuGroupSize":
			_ = json.Unmarshal(v, &group)
		default:
			return nil, invalid("options.%s: unknown", k)
		}
	}
	if r.Affinity != nil || bySocket {
		return decodeAlignedTake(r, m, available, n, spread, distribute, uncore, bySocket, group)
	}
	take := func() (cpuset.CPUSet, error) {
		if distribute {
			return cpumanager.OracleTakeByTopologyNUMADistributed(logger, m.topo, available, n, group, spread)
		}
		return cpumanager.OracleTakeByTopologyNUMAPacked(logger, m.topo, available, n, spread, uncore)
	}
	return &call{cpus: m.online.Size(),
		run: func() (map[string]any, error) {
			cpus, err := take()
			if err != nil {
				return nil, err
			}
			return map[string]any{"cpuset": cpus.String()}, nil
		},
		kernel: func() { _, _ = take() },
	}, nil
}

// decodeAlignedTake is the take with a NUMA affinity: kubelet's static policy allocateCPUs
// (aligned CPUs first: the affinity's NUMA nodes, or their sockets with align-by-socket, then
// the rest), with the take's sorting, distribution and uncore choices as policy options.
func decodeAlignedTake(r *request, m *machine, available cpuset.CPUSet, n int, spread, distribute, uncore, bySocket bool, group int) (*call, error) {
	hint, err := toHint(r.Affinity)
	if err != nil {
		return nil, err
	}
	if r.Affinity == nil {
		hint = topologymanager.TopologyHint{}
	}
	return &call{cpus: m.online.Size(), run: func() (map[string]any, error) {
		st := state.NewMemoryState(logger)
		st.SetDefaultCPUSet(available)
		cpus, err := cpumanager.OracleAllocateCPUs(logger, m.topo, st, n, hint.NUMANodeAffinity, cpuset.New(), spread, distribute, group, uncore, bySocket)
		if err != nil {
			return nil, err
		}
		return map[string]any{"cpuset": cpus.String()}, nil
	}}, nil
}

func decodeHints(r *request) (*call, error) {
	m, available, n, err := sizedRequest(r)
	if err != nil {
		return nil, err
	}
	reusable, err := parseCPUs(r.Reusable, "reusable", cpuset.New())
	if err != nil {
		return nil, err
	}
	if r.MaxAllowableNumaNodes != nil && *r.MaxAllowableNumaNodes < m.topo.NumNUMANodes {
		return nil, invalid("maxAllowableNumaNodes: kubelet's CPU hints have no such limit")
	}
	return &call{cpus: m.online.Size(), run: func() (map[string]any, error) {
		if n == 0 {
			// The protocol's "no preference": kubelet's GetTopologyHints returns nil hints
			// for a container without exclusive CPUs.
			return map[string]any{"hints": nil}, nil
		}
		hints := cpumanager.OracleGenerateCPUTopologyHints(m.topo, r.AlignBySocket, available, reusable, n)
		out := []map[string]any{}
		for _, h := range hints {
			out = append(out, fromHint(h))
		}
		return map[string]any{"hints": out}, nil
	}}, nil
}

func decodeStaticAllocate(r *request) (*call, error) {
	m, err := loadMachine(r.Topology)
	if err != nil {
		return nil, err
	}
	reserved, err := parseCPUs(r.ReservedCpus, "reservedCpus", cpuset.New())
	if err != nil {
		return nil, err
	}
	numReserved := r.NumReservedCpus
	if numReserved == 0 {
		numReserved = reserved.Size()
	}
	hint, err := toHint(r.Affinity)
	if err != nil {
		return nil, err
	}
	if r.Affinity == nil {
		hint = topologymanager.TopologyHint{}
	}
	pod, err := toPod(r.Pod)
	if err != nil {
		return nil, err
	}
	var target *v1.Container
	var before []*v1.Container
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if target == nil && list[i].Name == r.Container {
				target = &list[i]
			} else if target == nil {
				before = append(before, &list[i])
			}
		}
	}
	if target == nil {
		return nil, &protocolError{"not-found", fmt.Sprintf("pod %q: no container %q", r.Pod.UID, r.Container)}
	}
	opts := optionText(r.PolicyOptions)
	return &call{cpus: m.online.Size(), run: func() (map[string]any, error) {
		policy, err := cpumanager.NewStaticPolicy(logger, m.topo, numReserved, reserved, store{hint}, opts)
		if err != nil {
			return nil, invalid("kubelet: %v", err)
		}
		st := state.NewMemoryState(logger)
		if len(r.DefaultCpuSet) == 0 || string(r.DefaultCpuSet) == "null" {
			if err := policy.Start(logger, st); err != nil {
				return nil, invalid("kubelet: %v", err)
			}
		} else {
			def, err := parseCPUs(r.DefaultCpuSet, "defaultCpuSet", cpuset.New())
			if err != nil {
				return nil, err
			}
			st.SetDefaultCPUSet(def)
		}
		var raw map[string]map[string]string
		if len(r.Assignments) > 0 && string(r.Assignments) != "null" {
			if err := json.Unmarshal(r.Assignments, &raw); err != nil {
				return nil, invalid("assignments: %v", err)
			}
		}
		assignments := state.ContainerCPUAssignments{}
		for uid, cs := range raw {
			assignments[uid] = map[string]cpuset.CPUSet{}
			for name, list := range cs {
				set, err := cpuset.Parse(list)
				if err != nil {
					return nil, invalid("assignments.%s.%s: %v", uid, name, err)
				}
				assignments[uid][name] = set
			}
		}
		st.SetCPUAssignments(assignments)
		// kubelet admits a pod's containers in order; the ones before the target that hold
		// CPUs already pass through Allocate again, which is how kubelet learns the CPUs of
		// init containers it may reuse.
		for _, c := range before {
			if _, ok := st.GetCPUSet(string(pod.UID), c.Name); ok {
				_ = policy.Allocate(logger, st, pod, c)
			}
		}
		if err := policy.Allocate(logger, st, pod, target); err != nil {
			return nil, err
		}
		outAssign := map[string]map[string]string{}
		for uid, cs := range st.GetCPUAssignments() {
			outAssign[uid] = map[string]string{}
			for name, set := range cs {
				outAssign[uid][name] = set.String()
			}
		}
		return map[string]any{
			"cpuset":        st.GetCPUSetOrDefault(string(pod.UID), target.Name).String(),
			"defaultCpuSet": st.GetDefaultCPUSet().String(),
			"assignments":   outAssign,
		}, nil
	}}, nil
}

func decodeMerge(r *request) (*call, error) {
	nodes := []cadvisorapi.Node{}
	ids := append([]int(nil), r.NumaNodes...)
	sort.Ints(ids)
	if len(ids) == 0 {
		return nil, invalid("numaNodes: missing")
	}
	for _, id := range ids {
		n := cadvisorapi.Node{Id: id}
		if row, ok := r.Distances[fmt.Sprint(id)]; ok {
			n.Distances = distanceRow(row, ids)
		}
		nodes = append(nodes, n)
	}
	scope := r.Scope
	if scope == "" {
		scope = "container"
	}
	mgr, err := topologymanager.NewManager(nodes, r.Policy, scope, optionText(r.Options))
	if err != nil {
		return nil, invalid("kubelet: %v", err)
	}
	providers := []map[string][]topologymanager.TopologyHint{}
	for i, p := range r.Providers {
		hp := map[string][]topologymanager.TopologyHint{}
		for res, hs := range p {
			if hs == nil {
				hp[res] = nil
				continue
			}
			list := []topologymanager.TopologyHint{}
			for j := range *hs {
				h, err := toHint(&(*hs)[j])
				if err != nil {
					return nil, invalid("providers[%d].%s[%d]: %v", i, res, j, err)
				}
				list = append(list, h)
			}
			hp[res] = list
		}
		providers = append(providers, hp)
	}
	policy := mgr.GetPolicy()
	return &call{run: func() (map[string]any, error) {
		hint, admit := policy.Merge(logger, providers)
		return map[string]any{"hint": fromHint(hint), "admit": admit}, nil
	}}, nil
}

// answer runs one request line and returns the response object (id first).
func answer(line []byte) (id json.RawMessage, body map[string]any, ns int64, err error) {
	var r request
	id = json.RawMessage("null")
	if err := json.Unmarshal(line, &r); err != nil {
		return id, nil, 0, invalid("not a request: %v", err)
	}
	if len(r.ID) > 0 {
		id = r.ID
	}
	c, err := decode(&r)
	if err != nil {
		return id, nil, 0, err
	}
	type result struct {
		body map[string]any
		ns   int64
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// kubelet code that panics (e.g. its bitmask on NUMA ids above 63) answers kind
		// "panic" instead of taking the oracle down.
		defer func() {
			if p := recover(); p != nil {
				done <- result{nil, 0, &protocolError{"panic", fmt.Sprintf("kubelet panicked: %v", p)}}
			}
		}()
		b, err := c.run()
		var ns int64
		if err == nil && *timeMode {
			// CPU time, as Google Benchmark's cpu_time on the Huygens side: on a shared,
			// loaded machine wall time mostly measures the other processes.
			iters := 0
			start := cpuTime()
			for cpuTime()-start < *timeFor || iters < 3 {
				if c.kernel != nil {
					c.kernel()
				} else {
					_, _ = c.run()
				}
				iters++
			}
			ns = (cpuTime() - start).Nanoseconds() / int64(iters)
		}
		done <- result{b, ns, err}
	}()
	// The budget is CPU time, not wall time: on a loaded machine a slow but finite kubelet call
	// must not count as a hang.
	start := cpuTime()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case res := <-done:
			return id, res.body, res.ns, res.err
		case <-tick.C:
			if limit := budget(c.cpus); cpuTime()-start > limit {
				return id, nil, 0, &protocolError{"hang", fmt.Sprintf("kubelet did not return within %v of CPU time", limit)}
			}
		}
	}
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func writeLine(w io.Writer, id json.RawMessage, body map[string]any, ns int64, err error) {
	var b strings.Builder
	b.WriteString(`{"id":`)
	b.Write(id)
	if err != nil {
		msg, _ := json.Marshal(err.Error())
		fmt.Fprintf(&b, `,"error":%s,"kind":%q`, msg, kindOf(err))
	} else {
		keys := make([]string, 0, len(body))
		for k := range body {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := json.Marshal(body[k])
			fmt.Fprintf(&b, `,%q:%s`, k, v)
		}
		if *timeMode {
			fmt.Fprintf(&b, `,"ns":%d`, ns)
		}
	}
	b.WriteString("}\n")
	_, _ = io.WriteString(w, b.String())
}

func main() {
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	flag.Parse()
	// Every option v1.35.4 has, alpha ones included, as a node with the gates on would have.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{
		"CPUManagerPolicyAlphaOptions": true,
		"CPUManagerPolicyBetaOptions":  true,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "oracle: feature gates:", err)
		os.Exit(2)
	}
	if workers > 1 {
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "oracle: -workers:", err)
			os.Exit(2)
		}
		os.Exit(supervise(workers, []string{self, "-workers=1", "-timeout=" + timeout.String(),
			fmt.Sprintf("-time=%v", *timeMode), "-time-for=" + timeFor.String()}))
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, readErr := in.ReadBytes('\n')
		trimmed := strings.TrimSpace(string(line))
		if trimmed != "" {
			id, body, ns, err := answer([]byte(trimmed))
			writeLine(out, id, body, ns, err)
			_ = out.Flush()
			if err != nil && kindOf(err) == "hang" {
				os.Exit(3)
			}
		}
		if readErr != nil {
			return
		}
	}
}

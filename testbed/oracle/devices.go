// The device op of the oracle: device-hints (docs/allocate.md), answered by kubelet's device
// manager (ManagerImpl.generateDeviceTopologyHints, reached through
// overlay/zz_huygens_oracle_devices.go) for one resource whose devices the request gives as
// counts per NUMA node; this file only turns the counts into devices and translates JSON.
package main

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/sets"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
)

// deviceCounts reads a NUMA node id -> count object ("devices", "available", "reusable");
// absent is empty.
func deviceCounts(raw json.RawMessage, field string) (map[int]int, error) {
	out := map[int]int{}
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	var m map[string]int
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid("%s: not an object of NUMA node id to count: %v", field, err)
	}
	for k, n := range m {
		var id int
		if _, err := fmt.Sscan(k, &id); err != nil || id < 0 || n < 0 {
			return nil, invalid("%s.%s: not a NUMA node id with a count >= 0", field, k)
		}
		out[id] = n
	}
	return out, nil
}

func decodeDeviceHints(r *request) (*call, error) {
	ids := append([]int(nil), r.NumaNodes...)
	sort.Ints(ids)
	if len(ids) == 0 {
		return nil, invalid("numaNodes: missing")
	}
	total, err := deviceCounts(r.Devices, "devices")
	if err != nil {
		return nil, err
	}
	free, err := deviceCounts(r.Available, "available")
	if err != nil {
		return nil, err
	}
	reuse, err := deviceCounts(r.Reusable, "reusable")
	if err != nil {
		return nil, err
	}
	if r.Request == nil || *r.Request < 0 {
		return nil, invalid("request: missing or negative")
	}
	resource := r.Resource
	if resource == "" {
		resource = "example.com/device"
	}
	// Devices "n<numa>-<i>" on their NUMA node: the first ones of each node free, the next
	// ones reusable, the rest allocated elsewhere.
	devices := map[string]*pluginapi.Device{}
	available, reusable := sets.New[string](), sets.New[string]()
	for numa, n := range total {
		if free[numa]+reuse[numa] > n {
			return nil, invalid("available + reusable on NUMA node %d exceed its %d devices", numa, n)
		}
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("n%d-%d", numa, i)
			devices[id] = &pluginapi.Device{ID: id, Health: pluginapi.Healthy,
				Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(numa)}}}}
			switch {
			case i < free[numa]:
				available.Insert(id)
			case i < free[numa]+reuse[numa]:
				reusable.Insert(id)
			}
		}
	}
	for numa, n := range free {
		if n > total[numa] {
			return nil, invalid("available.%d: more than the NUMA node's devices", numa)
		}
	}
	for numa, n := range reuse {
		if n > total[numa] {
			return nil, invalid("reusable.%d: more than the NUMA node's devices", numa)
		}
	}
	request := *r.Request
	return &call{run: func() (map[string]any, error) {
		hints := devicemanager.OracleGenerateDeviceTopologyHints(ids, resource, devices, available, reusable, request)
		out := []map[string]any{}
		for _, h := range hints {
			out = append(out, fromHint(h))
		}
		return map[string]any{"hints": out}, nil
	}}, nil
}

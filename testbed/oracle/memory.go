// The memory ops of the oracle: memory-allocate and memory-hints (docs/allocate.md), answered
// by kubelet's memory manager Static policy (memorymanager.NewPolicyStatic over an in-memory
// state) on the cadvisor machine the request's topology JSON gives (numaNodes[].memoryBytes and
// hugepages). Everything kubelet's policy needs is exported (its Policy interface, the state
// package, the topologymanager.Store it asks for a container's affinity), so no overlay is
// involved; this file only translates JSON.
package main

import (
	"encoding/json"
	"fmt"
	"sort"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"

	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	memstate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
)

// memoryContainerJSON is one entry of memory-allocate's "containers": the container to
// allocate and the topology manager's hint for it.
type memoryContainerJSON struct {
	Name     string    `json:"name"`
	Affinity *hintJSON `json:"affinity"`
}

type memoryRemoveJSON struct {
	Pod       string `json:"pod"`
	Container string `json:"container"`
}

// affinityStore is the topology manager as the memory manager sees it: the request's hint per
// container name (the request has one pod), no hint = {nil, false}.
type affinityStore map[string]topologymanager.TopologyHint

func (s affinityStore) GetAffinity(_ string, name string) topologymanager.TopologyHint {
	return s[name]
}
func (s affinityStore) GetPolicy() topologymanager.Policy { return topologymanager.NewNonePolicy() }

// memoryHint is the hint of a memory op: numaNodes null or [] is no affinity (nil bitmask).
func memoryHint(h *hintJSON) (topologymanager.TopologyHint, error) {
	if h == nil {
		return topologymanager.TopologyHint{}, nil
	}
	if len(h.NumaNodes) == 0 {
		return topologymanager.TopologyHint{Preferred: h.Preferred}, nil
	}
	return toHint(h)
}

// memorySetup builds kubelet's Static policy and its state from a memory op's topology,
// reservedMemory, machineState and assignments (machineState omitted: kubelet's Start fills
// the default machine state, and refuses assignments without a machine state).
func memorySetup(r *request, store topologymanager.Store) (memorymanager.Policy, memstate.State, error) {
	m, err := loadMachine(r.Topology)
	if err != nil {
		return nil, nil, err
	}
	reserved := map[int]map[v1.ResourceName]uint64{}
	for numa, resources := range r.ReservedMemory {
		var id int
		if _, err := fmt.Sscan(numa, &id); err != nil {
			return nil, nil, invalid("reservedMemory.%s: not a NUMA node id", numa)
		}
		reserved[id] = map[v1.ResourceName]uint64{}
		for name, raw := range resources {
			q, err := quantity(raw, "reservedMemory."+numa+"."+name)
			if err != nil {
				return nil, nil, err
			}
			if q != nil {
				reserved[id][v1.ResourceName(name)] = uint64(q.Value())
			}
		}
	}
	mi := &cadvisorapi.MachineInfo{Topology: m.nodes}
	policy, err := memorymanager.NewPolicyStatic(logger, mi, reserved, store)
	if err != nil {
		return nil, nil, invalid("kubelet: %v", err)
	}
	st := memstate.NewMemoryState(logger)
	if len(r.MachineState) > 0 && string(r.MachineState) != "null" {
		var ms memstate.NUMANodeMap
		if err := json.Unmarshal(r.MachineState, &ms); err != nil {
			return nil, nil, invalid("machineState: %v", err)
		}
		st.SetMachineState(ms)
	}
	if len(r.Assignments) > 0 && string(r.Assignments) != "null" {
		var as memstate.ContainerMemoryAssignments
		if err := json.Unmarshal(r.Assignments, &as); err != nil {
			return nil, nil, invalid("assignments: %v", err)
		}
		st.SetMemoryAssignments(as)
	}
	if len(st.GetMachineState()) == 0 {
		if err := policy.Start(logger, st); err != nil {
			return nil, nil, invalid("kubelet: %v", err)
		}
	}
	return policy, st, nil
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func blocksJSON(blocks []memstate.Block) []map[string]any {
	sorted := append([]memstate.Block(nil), blocks...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Type < sorted[j].Type })
	out := []map[string]any{}
	for _, b := range sorted {
		aff := b.NUMAAffinity
		if aff == nil {
			aff = []int{}
		}
		out = append(out, map[string]any{"numaAffinity": aff, "type": string(b.Type), "size": b.Size})
	}
	return out
}

func memoryStateJSON(st memstate.State) (map[string]any, map[string]any) {
	machine := map[string]any{}
	for id, n := range st.GetMachineState() {
		tables := map[string]any{}
		for name, t := range n.MemoryMap {
			tables[string(name)] = map[string]any{"total": t.TotalMemSize, "systemReserved": t.SystemReserved,
				"allocatable": t.Allocatable, "reserved": t.Reserved, "free": t.Free}
		}
		cells := n.Cells
		if cells == nil {
			cells = []int{}
		}
		machine[fmt.Sprint(id)] = map[string]any{"numberOfAssignments": n.NumberOfAssignments,
			"memoryMap": tables, "cells": cells}
	}
	assignments := map[string]any{}
	for uid, cs := range st.GetMemoryAssignments() {
		row := map[string]any{}
		for name, blocks := range cs {
			row[name] = blocksJSON(blocks)
		}
		assignments[uid] = row
	}
	return machine, assignments
}

// hintsJSON is a provider's hints: resource -> list; nil and empty maps alike are {} (both
// are "no preference" to the topology manager).
func hintsJSON(h map[string][]topologymanager.TopologyHint) map[string]any {
	out := map[string]any{}
	for name, list := range h {
		hs := []map[string]any{}
		for _, x := range list {
			hs = append(hs, fromHint(x))
		}
		out[name] = hs
	}
	return out
}

func decodeMemoryAllocate(r *request) (*call, error) {
	pod, err := toPod(r.Pod)
	if err != nil {
		return nil, err
	}
	store := affinityStore{}
	var targets []*v1.Container
	for i, c := range r.Containers {
		t := findContainer(pod, c.Name)
		if t == nil {
			return nil, &protocolError{"not-found", fmt.Sprintf("containers[%d]: pod %q has no container %q", i, r.Pod.UID, c.Name)}
		}
		h, err := memoryHint(c.Affinity)
		if err != nil {
			return nil, err
		}
		store[c.Name] = h
		targets = append(targets, t)
	}
	return &call{run: func() (map[string]any, error) {
		policy, st, err := memorySetup(r, store)
		if err != nil {
			return nil, err
		}
		for _, rm := range r.Remove {
			policy.RemoveContainer(logger, st, rm.Pod, rm.Container)
		}
		results := []map[string]any{}
		for _, t := range targets {
			res := map[string]any{"name": t.Name}
			if r.WithHints {
				res["hints"] = hintsJSON(policy.GetTopologyHints(logger, st, pod, t))
			}
			if err := policy.Allocate(logger, st, pod, t); err != nil {
				res["error"] = err.Error()
				res["kind"] = kindOf(err)
			} else {
				res["blocks"] = blocksJSON(st.GetMemoryBlocks(string(pod.UID), t.Name))
			}
			results = append(results, res)
		}
		machine, assignments := memoryStateJSON(st)
		return map[string]any{"containers": results, "machineState": machine, "assignments": assignments}, nil
	}}, nil
}

func decodeMemoryHints(r *request) (*call, error) {
	pod, err := toPod(r.Pod)
	if err != nil {
		return nil, err
	}
	scope := r.Scope
	if scope == "" {
		scope = "container"
	}
	var target *v1.Container
	switch scope {
	case "container":
		if target = findContainer(pod, r.Container); target == nil {
			return nil, &protocolError{"not-found", fmt.Sprintf("pod %q: no container %q", r.Pod.UID, r.Container)}
		}
	case "pod":
	default:
		return nil, invalid("scope: %q is not container or pod", scope)
	}
	return &call{run: func() (map[string]any, error) {
		policy, st, err := memorySetup(r, affinityStore{})
		if err != nil {
			return nil, err
		}
		var h map[string][]topologymanager.TopologyHint
		if target == nil {
			h = policy.GetPodTopologyHints(logger, st, pod)
		} else {
			h = policy.GetTopologyHints(logger, st, pod, target)
		}
		return map[string]any{"hints": hintsJSON(h)}, nil
	}}, nil
}

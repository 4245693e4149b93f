// TopologyPicture: a machine's CPU topology as text, the picture of `huygens discover` and,
// with marks on the CPUs that pods hold, of `huygens status` (docs/discovery.md).
//
//   socket 0
//     NUMA node 0  memory 62.8 GiB  hugepages-2.0 MiB x512
//       L3 group 0
//         core 0    cpus 0,64
//         core 1    cpus 1(a),65(a)
//   ...
//   NUMA distances / CPU-less NUMA nodes / offline, isolated (marked *) and nohz_full CPUs
//   summary: 2 sockets, 2 NUMA nodes (2 with CPUs), ...
//
// Thread-safety: a pure function.
#ifndef HUYGENS_TOPOLOGY_PICTURE_H_
#define HUYGENS_TOPOLOGY_PICTURE_H_

#include <map>
#include <string>

#include "topology/topology.h"

namespace huygens {

// Per logical CPU, a short label written in parentheses after its id ("1(a)").
using CpuMarks = std::map<int, std::string>;

// The picture: sockets > NUMA nodes (memory, hugepages) > L3 groups > cores with their CPUs
// (a cluster noted where it differs from the core), isolated CPUs marked '*' and each CPU of
// `marks` followed by its mark; then the NUMA nodes without online CPUs, offline, isolated and
// nohz_full CPUs, the NUMA distance matrix (more than one node) and a summary line.
std::string TopologyPicture(const CpuTopology& t, const CpuMarks& marks = {});

}  // namespace huygens

#endif  // HUYGENS_TOPOLOGY_PICTURE_H_
